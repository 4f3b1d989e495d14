package data

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// unpacked returns hop sets h (packed or not) decoded: Graph of every
// graph, with h's KMax and symmetry record.
func unpacked(h *Hops) *Hops {
	u := &Hops{KMax: h.KMax, Graphs: make([]GraphHops, h.NumGraphs()), sym: h.sym}
	for i := range u.Graphs {
		u.Graphs[i] = h.Graph(i)
	}
	return u
}

// sameBatch reports whether batches a and b are equal value for value,
// bit for bit (a NaN target equals a NaN).
func sameBatch(a, b *Batch) bool {
	if a == nil || b == nil || a.Target == nil || b.Target == nil {
		return reflect.DeepEqual(a, b)
	}
	bits := func(x []float64) []uint64 {
		out := make([]uint64, len(x))
		for i, v := range x {
			out[i] = math.Float64bits(v)
		}
		return out
	}
	if !slices.Equal(bits(a.Target), bits(b.Target)) {
		return false
	}
	ca, cb := *a, *b
	ca.Target, cb.Target = nil, nil
	return reflect.DeepEqual(&ca, &cb)
}

// cloneHops returns a deep copy of decoded hop sets (the record shared).
func cloneHops(h *Hops) *Hops {
	c := &Hops{KMax: h.KMax, sym: h.sym}
	if h.Graphs != nil {
		c.Graphs = make([]GraphHops, len(h.Graphs))
	}
	cp := func(s CSR) CSR { return CSR{Ptr: slices.Clone(s.Ptr), Idx: slices.Clone(s.Idx)} }
	for i, gh := range h.Graphs {
		if gh.Hop != nil {
			c.Graphs[i].Hop = make([]CSR, len(gh.Hop))
		}
		for j, s := range gh.Hop {
			c.Graphs[i].Hop[j] = cp(s)
		}
		if gh.Unreachable != nil {
			u := cp(*gh.Unreachable)
			c.Graphs[i].Unreachable = &u
		}
	}
	return c
}

// withPackedRows returns packed hop sets h with a copy of its rows, so
// that a test may corrupt them.
func withPackedRows(h *Hops) *Hops {
	p := *h.packed
	p.rows = slices.Clone(p.rows)
	return &Hops{KMax: h.KMax, packed: &p, sym: h.sym}
}

// symmetrize returns c ∪ cᵀ (rows sorted), a symmetric CSR.
func symmetrize(c CSR) CSR {
	n := c.Len()
	rows := make([][]int32, n)
	for u := range n {
		for _, v := range c.Row(u) {
			rows[u] = append(rows[u], v)
			rows[v] = append(rows[v], int32(u))
		}
	}
	out := CSR{Ptr: make([]int32, n+1)}
	for u, r := range rows {
		slices.Sort(r)
		out.Idx = append(out.Idx, slices.Compact(r)...)
		out.Ptr[u+1] = int32(len(out.Idx))
	}
	return out
}

// randomHopsDataset returns graphs random graphs of up to maxN nodes (3
// labels, 2 classes) and kmax random hop sets over their nodes (not their
// distances: batches do not care), every other graph's symmetric so that
// the record is mixed. unr says which graphs keep an N_∞: "all", "none" or
// "some".
func randomHopsDataset(seed uint64, graphs, maxN, kmax int, unr string) (*Dataset, *Hops) {
	rng := rand.New(rand.NewPCG(seed, 7))
	ds := &Dataset{Name: "random", NumLabels: 3, NumClasses: 2}
	h := &Hops{KMax: kmax}
	for i := range graphs {
		n := rng.IntN(maxN + 1)
		var edges [][2]int
		for range n {
			if u, v := rng.IntN(n), rng.IntN(n); u != v {
				edges = append(edges, [2]int{u, v})
			}
		}
		g, err := FromEdges(n, edges)
		if err != nil {
			panic(err)
		}
		g.Labels = make([]int32, n)
		for u := range g.Labels {
			g.Labels[u] = int32(rng.IntN(3))
		}
		g.Y = i % 2
		ds.Graphs = append(ds.Graphs, g)
		var gh GraphHops
		for range kmax {
			c := randomCSR(rng, n)
			if i%2 == 0 {
				c = symmetrize(c)
			}
			gh.Hop = append(gh.Hop, c)
		}
		if unr == "all" || unr == "some" && rng.IntN(2) == 0 {
			c := symmetrize(randomCSR(rng, n))
			gh.Unreachable = &c
		}
		h.Graphs = append(h.Graphs, gh)
	}
	h.RecordSymmetry()
	return ds, h
}

type hopsFixture struct {
	name string
	ds   *Dataset // nil: hop sets only
	h    *Hops
}

func hopsFixtures(t testing.TB) []hopsFixture {
	var fx []hopsFixture
	add := func(name string, ds *Dataset, h *Hops) { fx = append(fx, hopsFixture{name, ds, h}) }
	add("sample (N_∞ of graph 1 only)", nil, sampleHops(t))
	ds, h := pathDataset([]int{3, 1, 2, 5, 4}, 3)
	add("paths", ds, h)
	ds, h = molecules()
	add("molecules (N_∞)", ds, h)
	for _, unr := range []string{"all", "none", "some"} {
		ds, h = randomHopsDataset(uint64(len(fx)), 12, 40, 4, unr)
		add("random, N_∞ "+unr, ds, h)
	}
	// Ids beyond 127 and 16383 take two and three bytes.
	ds, h = randomHopsDataset(9, 3, 20000, 2, "some")
	add("random, large graphs", ds, h)
	ds, h = pathDataset([]int{0, 2, 0}, 2)
	add("graphs of no nodes", ds, h)
	add("no graphs", nil, &Hops{KMax: 2, Graphs: []GraphHops{}, sym: &hopSymmetry{asym: make([][]int32, 2)}})
	return fx
}

// TestPackedRoundTrip: packed hop sets decode to the hop sets packed,
// graph by graph, and every method reads the same of both forms; the
// prefix of the packed sets is the packed prefix.
func TestPackedRoundTrip(t *testing.T) {
	for _, fx := range hopsFixtures(t) {
		t.Run(fx.name, func(t *testing.T) {
			h := fx.h
			before := cloneHops(h)
			p := h.Packed()
			if !reflect.DeepEqual(h, before) {
				t.Fatal("Packed changed h")
			}
			if p.Graphs != nil || p.packed == nil || p.Packed() != p || h.packed != nil {
				t.Fatalf("Packed: Graphs %v, packed %v; Packed of packed is itself: %v", p.Graphs, p.packed != nil, p.Packed() == p)
			}
			if p.NumGraphs() != h.NumGraphs() || p.NumGraphs() != len(h.Graphs) {
				t.Fatalf("NumGraphs %d, want %d", p.NumGraphs(), len(h.Graphs))
			}
			for i := range h.Graphs {
				if got := p.Graph(i); !reflect.DeepEqual(got, h.Graphs[i]) {
					t.Fatalf("graph %d: got %+v, want %+v", i, got, h.Graphs[i])
				}
				if !reflect.DeepEqual(h.Graph(i), h.Graphs[i]) {
					t.Fatalf("graph %d of the decoded form differs from Graphs[%d]", i, i)
				}
			}
			samePacked(t, p, h)
			for k := 0; k <= h.KMax+1; k++ {
				want := h.Prefix(k)
				pp, wp := p.Prefix(k), want.Packed()
				if !reflect.DeepEqual(unpacked(pp), want) || !reflect.DeepEqual(unpacked(pp), unpacked(wp)) {
					t.Errorf("Prefix(%d) of the packed sets: %+v, want %+v", k, unpacked(pp), want)
				}
				if (k >= h.KMax) != (pp == p) {
					t.Errorf("Prefix(%d) of the packed sets is them: %v", k, pp == p)
				}
				samePacked(t, pp, want)
				samePacked(t, wp, want)
			}
			// The record, made of the packed sets, is the same.
			q := h.Packed()
			q.sym = nil
			q.RecordSymmetry()
			if !reflect.DeepEqual(q.sym, h.sym) {
				t.Errorf("RecordSymmetry of the packed sets: %+v, want %+v", q.sym, h.sym)
			}
			if fx.ds != nil {
				if (p.Matches(fx.ds) == nil) != (h.Matches(fx.ds) == nil) {
					t.Errorf("Matches: packed %v, decoded %v", p.Matches(fx.ds), h.Matches(fx.ds))
				}
				if len(fx.ds.Graphs) > 0 {
					// One node less in a graph does not match.
					other := *fx.ds
					other.Graphs = slices.Clone(other.Graphs)
					other.Graphs[0].N++
					if p.Matches(&other) == nil || h.Matches(&other) == nil {
						t.Errorf("Matches of a dataset with other node counts: packed %v, decoded %v", p.Matches(&other), h.Matches(&other))
					}
				}
			}
		})
	}
}

// samePacked checks that the methods of packed hop sets p give what they
// give of the decoded hop sets h.
func samePacked(t *testing.T, p, h *Hops) {
	t.Helper()
	if p.KMax != h.KMax || p.NumGraphs() != h.NumGraphs() {
		t.Errorf("KMax %d, %d graphs; want %d, %d", p.KMax, p.NumGraphs(), h.KMax, h.NumGraphs())
	}
	if got, want := p.Sizes(), h.Sizes(); !reflect.DeepEqual(got, want) {
		t.Errorf("Sizes %+v, want %+v", got, want)
	}
	if p.KeptUnreachable() != h.KeptUnreachable() {
		t.Errorf("KeptUnreachable %v, want %v", p.KeptUnreachable(), h.KeptUnreachable())
	}
	all := make([]int, h.NumGraphs())
	for i := range all {
		all[i] = i
	}
	for i := 0; i <= h.KMax+1; i++ {
		if p.Symmetric(i, all) != h.Symmetric(i, all) {
			t.Errorf("Symmetric(%d) %v, want %v", i, p.Symmetric(i, all), h.Symmetric(i, all))
		}
	}
	if p.UnreachableSymmetric(all) != h.UnreachableSymmetric(all) {
		t.Errorf("UnreachableSymmetric %v, want %v", p.UnreachableSymmetric(all), h.UnreachableSymmetric(all))
	}
	perr, herr := p.Validate(), h.Validate()
	if fmt.Sprint(perr) != fmt.Sprint(herr) {
		t.Errorf("Validate: %v, want %v", perr, herr)
	}
	if herr == nil {
		var pb, hb bytes.Buffer
		if err := WriteHops(&pb, p); err != nil {
			t.Fatal(err)
		}
		if err := WriteHops(&hb, h); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(pb.Bytes(), hb.Bytes()) {
			t.Error("WriteHops of the packed sets writes other bytes")
		}
	}
}

// batchCases are the batches TestPackedBatches builds of a dataset of n
// graphs with hop sets up to kmax: several orders (one graph repeated) and
// hop counts, with and without N_∞.
func batchCases(n, kmax int) (idxs [][]int, opts []BatchOptions) {
	asc, desc, odd, even := []int{}, []int{}, []int{}, []int{}
	for i := range n {
		asc = append(asc, i)
		desc = append(desc, n-1-i)
		if i%2 == 1 {
			odd = append(odd, i, i)
		} else {
			even = append(even, i)
		}
	}
	idxs = [][]int{asc, desc, odd, even, {}}
	if n > 2 {
		idxs = append(idxs, []int{n - 1, 0, n / 2})
	}
	for _, k := range []int{0, 1, kmax - 1, kmax} {
		for _, unr := range []bool{false, true} {
			if k >= 0 {
				opts = append(opts, BatchOptions{K: k, Unreachable: unr})
			}
		}
	}
	return idxs, opts
}

// TestPackedBatches: the batches of packed hop sets are those of the hop
// sets packed, value for value, symmetry flags included; so are their
// errors (a graph without N_∞), and those of Batches.
func TestPackedBatches(t *testing.T) {
	for _, fx := range hopsFixtures(t) {
		if fx.ds == nil {
			continue
		}
		t.Run(fx.name, func(t *testing.T) {
			h := fx.h
			p := h.Packed()
			idxs, opts := batchCases(len(fx.ds.Graphs), h.KMax)
			built, flagged := 0, 0
			for _, opt := range opts {
				for _, idx := range idxs {
					want, werr := NewBatchWith(fx.ds, h, idx, opt)
					got, gerr := NewBatchWith(fx.ds, p, idx, opt)
					if fmt.Sprint(gerr) != fmt.Sprint(werr) {
						t.Fatalf("%+v, graphs %v: error %v, want %v", opt, idx, gerr, werr)
					}
					if !sameBatch(got, want) {
						t.Fatalf("%+v, graphs %v: batch\n%+v\nwant\n%+v", opt, idx, got, want)
					}
					if werr == nil && len(idx) > 0 {
						built++
						if slices.Contains(want.HopSymmetric, true) || want.UnreachableSymmetric {
							flagged++
						}
					}
				}
				var got, want []*Batch
				for b, err := range Batches(fx.ds, p, idxs, opt) {
					if err != nil {
						break
					}
					got = append(got, b)
				}
				for b, err := range Batches(fx.ds, h, idxs, opt) {
					if err != nil {
						break
					}
					want = append(want, b)
				}
				if len(got) != len(want) {
					t.Errorf("%+v: %d batches of the packed sets, %d of the decoded", opt, len(got), len(want))
				}
				for i := range min(len(got), len(want)) {
					if !sameBatch(got[i], want[i]) {
						t.Errorf("%+v: batch %d of Batches of the packed sets differs", opt, i)
					}
				}
			}
			if built == 0 || flagged == 0 && len(fx.ds.Graphs) > 1 {
				t.Errorf("%d batches built, %d with a symmetric set: the cases test little", built, flagged)
			}
		})
	}
}

// TestReadHopsFilePrefixPacked: a file read packed gives, for every k,
// what the decoded read gives of its prefix: the hop sets, their batches,
// sizes and the answers of Matches and KeptUnreachable.
func TestReadHopsFilePrefixPacked(t *testing.T) {
	for _, fx := range hopsFixtures(t) {
		if fx.h.Validate() != nil {
			continue // hop sets that WriteHops refuses
		}
		t.Run(fx.name, func(t *testing.T) {
			path := t.TempDir() + "/hops.bin"
			if err := WriteHopsFile(path, fx.h); err != nil {
				t.Fatal(err)
			}
			whole, err := ReadHopsFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if whole.packed != nil || !reflect.DeepEqual(whole, fx.h) {
				t.Fatal("ReadHopsFile: not the hop sets written, decoded")
			}
			for k := -1; k <= fx.h.KMax+1; k++ {
				got, kmax, err := ReadHopsFilePrefix(path, k)
				if err != nil {
					t.Fatal(err)
				}
				want := whole
				if k >= 0 {
					want = whole.Prefix(k)
				}
				if kmax != fx.h.KMax || got.packed == nil || got.Graphs != nil || !reflect.DeepEqual(unpacked(got), want) {
					t.Fatalf("k = %d: kmax %d, packed %v, hops %+v; want %d, %+v", k, kmax, got.packed != nil, unpacked(got), fx.h.KMax, want)
				}
				samePacked(t, got, want)
				if fx.ds == nil {
					continue
				}
				if fmt.Sprint(got.Matches(fx.ds)) != fmt.Sprint(want.Matches(fx.ds)) {
					t.Errorf("k = %d: Matches %v, want %v", k, got.Matches(fx.ds), want.Matches(fx.ds))
				}
				idxs, opts := batchCases(len(fx.ds.Graphs), got.KMax)
				for _, opt := range opts {
					for _, idx := range idxs {
						wb, werr := NewBatchWith(fx.ds, want, idx, opt)
						gb, gerr := NewBatchWith(fx.ds, got, idx, opt)
						if fmt.Sprint(gerr) != fmt.Sprint(werr) || !sameBatch(gb, wb) {
							t.Fatalf("k = %d, %+v, graphs %v: batch or error (%v, want %v) differs", k, opt, idx, gerr, werr)
						}
					}
				}
			}
		})
	}
}

// packedRows returns the coded rows of set (N_i, i ≥ 1; 0 for N_∞) of
// graph g of packed hop sets, aliasing the packed bytes.
func packedRows(h *Hops, g, i int) []byte {
	p := h.packed
	s := p.unr(g)
	if i > 0 {
		s = p.hop(g, i)
	}
	b, _ := p.set(s)
	return b
}

// TestPackedCorrupt: corrupt packed bytes are an error of NewBatchWith (and
// of Validate) naming the graph and the set, never a panic.
func TestPackedCorrupt(t *testing.T) {
	// Two paths of 3 nodes: graph 1's N_1 is coded 01 01 | 02 00 01 | 01 01
	// (rows [1], [0 2], [1]), its N_2 01 02 | 00 | 01 00.
	ds, h := pathDataset([]int{3, 3}, 2)
	mds, mh := molecules()
	p := h.Packed()
	if got := packedRows(p, 1, 1); !bytes.Equal(got, []byte{1, 1, 2, 0, 1, 1, 1}) {
		t.Fatalf("graph 1's N_1 is coded % x", got)
	}
	tests := []struct {
		name  string
		ds    *Dataset
		h     *Hops
		g, i  int // the set changed: N_i of graph g (i = 0: N_∞)
		edit  func(b []byte)
		opt   BatchOptions
		want  string
		valid string // Validate's error
	}{
		{"id beyond n", ds, h, 1, 1, func(b []byte) { b[1] = 5 }, BatchOptions{K: 2},
			"building batch: graph 1 hop set N_1: packed rows: row 0: node id beyond 3 nodes", "hops: graph 1 hop set N_1: packed rows: row 0"},
		{"last id beyond n", ds, h, 1, 2, func(b []byte) { b[len(b)-1] = 3 }, BatchOptions{K: 2},
			"graph 1 hop set N_2: packed rows: row 2: node id beyond 3 nodes", "hop set N_2"},
		{"count beyond the entries", ds, h, 1, 1, func(b []byte) { b[0] = 9 }, BatchOptions{K: 1},
			"graph 1 hop set N_1: packed rows: row 0: 9 entries exceed the entry count 4", "row 0: 9 entries"},
		{"fewer entries", ds, h, 1, 1, func(b []byte) { b[5] = 0 }, BatchOptions{K: 1},
			"graph 1 hop set N_1: packed rows: 1 bytes left after the rows", "1 bytes left"},
		{"gap varint past the end", ds, h, 1, 1, func(b []byte) { b[len(b)-1] = 0x80 }, BatchOptions{K: 1},
			"graph 1 hop set N_1: packed rows: row 2: bad varint", "bad varint"},
		{"count varint past the end", ds, h, 0, 2, func(b []byte) { b[len(b)-2], b[len(b)-1] = 0x80, 0x80 }, BatchOptions{K: 2},
			"graph 0 hop set N_2: packed rows: row 2: bad varint", "bad varint"},
		{"overflowing varint", ds, h, 0, 1, func(b []byte) {
			for j := range b {
				b[j] = 0xff
			}
		}, BatchOptions{K: 1}, "graph 0 hop set N_1: packed rows: row 0: bad varint", "bad varint"},
		{"large gap", ds, h, 0, 1, func(b []byte) { b[1], b[2] = 0x83, 0x01 }, BatchOptions{K: 1},
			"graph 0 hop set N_1: packed rows: row 0: bad varint", "bad varint"},
		{"N_∞", mds, mh, 1, 0, func(b []byte) { b[1] = 3 }, BatchOptions{K: 1, Unreachable: true},
			"building batch: graph 1 N_∞: packed rows: row 0: node id beyond 3 nodes", "hops: graph 1 N_∞"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			bad := withPackedRows(tc.h.Packed())
			tc.edit(packedRows(bad, tc.g, tc.i))
			idx := []int{1, 0}
			if _, err := NewBatchWith(tc.ds, bad, idx, tc.opt); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("NewBatchWith: %v, want an error containing %q", err, tc.want)
			}
			if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), tc.valid) {
				t.Errorf("Validate: %v, want an error containing %q", err, tc.valid)
			}
			func() {
				defer func() {
					if recover() == nil {
						t.Error("Graph of corrupt packed sets did not panic")
					}
				}()
				bad.Graph(tc.g)
			}()
			// The sets left intact still build.
			other := BatchOptions{K: min(tc.i, tc.opt.K+1) - 1}
			if tc.i == 0 {
				other.K = tc.h.KMax
			}
			if _, err := NewBatchWith(tc.ds, bad, idx, other); err != nil {
				t.Errorf("the intact sets (%+v): %v", other, err)
			}
		})
	}
}

// TestPackedCorruptEveryByte sets every byte of the packed rows of
// random hop sets to values that make varints end, continue or overflow,
// and checks that NewBatchWith fails or builds valid block-diagonal sets,
// never panicking.
func TestPackedCorruptEveryByte(t *testing.T) {
	ds, h := randomHopsDataset(3, 6, 30, 2, "some")
	p := h.Packed()
	kept := BatchOptions{K: 2}
	all := []int{0, 1, 2, 3, 4, 5}
	var withUnr []int
	for g := range ds.Graphs {
		if p.packed.unr(g) >= 0 {
			withUnr = append(withUnr, g)
		}
	}
	failed := 0
	for pos := range p.packed.rows {
		for _, v := range []byte{0, 1, 0x7f, 0x80, 0xff, p.packed.rows[pos] ^ 1, p.packed.rows[pos] + 1} {
			bad := withPackedRows(p)
			bad.packed.rows[pos] = v
			for _, c := range []struct {
				idx []int
				opt BatchOptions
			}{{all, kept}, {withUnr, BatchOptions{K: 1, Unreachable: true}}} {
				b, err := NewBatchWith(ds, bad, c.idx, c.opt)
				if err != nil {
					failed++
					continue
				}
				if err := checkBlocks(b); err != nil {
					t.Fatalf("byte %d set to %#x: %v", pos, v, err)
				}
			}
			_ = bad.Validate()
		}
	}
	if failed == 0 {
		t.Error("no corruption was found")
	}
}

// checkBlocks checks that every hop set and N_∞ of b is a valid CSR with
// strictly ascending rows whose entries stay within their graph.
func checkBlocks(b *Batch) error {
	sets := slices.Clone(b.Hop)
	if b.Unreachable != nil {
		sets = append(sets, *b.Unreachable)
	}
	for i, c := range sets {
		if err := ValidateCSR(c, b.N, b.N, false); err != nil {
			return fmt.Errorf("set %d: %w", i, err)
		}
		for j := range b.NumGraphs {
			lo, hi := b.GraphPtr[j], b.GraphPtr[j+1]
			for u := lo; u < hi; u++ {
				for _, v := range c.Row(int(u)) {
					if v < lo || v >= hi {
						return fmt.Errorf("set %d: node %d of graph %d lists %d of another graph", i, u, j, v)
					}
				}
			}
		}
	}
	return nil
}

// FuzzPackedBatch replaces the coded rows (and entry count) of one set of
// packed hop sets and builds batches of them: an error or valid sets,
// never a panic. The fixtures are molecules (typed, N_∞) and random
// graphs of up to 30 nodes, whose rows are long enough for the decoder's
// 5-at-a-time path.
func FuzzPackedBatch(f *testing.F) {
	type fixture struct {
		ds  *Dataset
		p   *Hops
		idx []int
	}
	mds, mh := molecules()
	rds, rh := randomHopsDataset(5, 3, 30, 2, "all")
	fixtures := []fixture{{mds, mh.Packed(), []int{1, 0, 1}}, {rds, rh.Packed(), []int{2, 0, 1}}}
	for fi, fx := range fixtures {
		for s := range fx.p.packed.nnz {
			b, nnz := fx.p.packed.set(s)
			f.Add(slices.Clone(b), uint16(nnz), uint16(s<<1|fi))
		}
	}
	f.Add([]byte{0x80, 0x80}, uint16(3), uint16(0))
	f.Add([]byte{1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 1}, uint16(1), uint16(2))
	f.Fuzz(func(t *testing.T, rows []byte, nnz uint16, which uint16) {
		fx := fixtures[which&1]
		p := fx.p.packed
		s := int(which>>1) % len(p.nnz)
		q := *p
		q.nnz = slices.Clone(q.nnz)
		q.start = slices.Clone(q.start)
		q.nnz[s] = int32(nnz)
		// Splice rows in for set s.
		lo, hi := q.start[s], q.start[s+1]
		q.rows = slices.Concat(p.rows[:lo], rows, p.rows[hi:])
		for j := s + 1; j < len(q.start); j++ {
			q.start[j] += int64(len(rows)) - (hi - lo)
		}
		bad := &Hops{KMax: fx.p.KMax, packed: &q, sym: fx.p.sym}
		for _, opt := range []BatchOptions{{K: 2, Unreachable: true}, {K: 1}} {
			b, err := NewBatchWith(fx.ds, bad, fx.idx, opt)
			if err != nil {
				continue
			}
			if err := checkBlocks(b); err != nil {
				t.Fatal(err)
			}
		}
		if err := bad.Validate(); err == nil {
			_ = unpacked(bad) // decodes without a panic
		}
	})
}

// TestUnpackRows decodes rows into the middle of a batch's arrays: ids
// shifted by off, row ends counted from the entries before, and every
// kind of corrupt bytes an error.
func TestUnpackRows(t *testing.T) {
	// 130 rows: [1 2], [], [0 129] (129 - 0 - 1 = 128 takes two bytes),
	// then empty ones.
	rows := append([]byte{2, 1, 0, 0, 2, 0, 0x80, 0x01}, make([]byte, 127)...)
	rowsPtr := []int32{5, 4, 4}
	for range 128 {
		rowsPtr = append(rowsPtr, 6)
	}
	k4 := []byte{3, 1, 0, 0, 3, 0, 1, 0, 3, 0, 0, 1, 3, 0, 0, 0}
	k4bad := slices.Clone(k4)
	k4bad[3] = 1
	tests := []struct {
		name    string
		b       []byte
		n, nnz  int
		wantPtr []int32
		wantIdx []int32
		wantErr string
	}{
		{"rows", rows, 130, 4, rowsPtr, []int32{-1, -1, 11, 12, 10, 139}, ""},
		// K_4: rows of 3 ids.
		{"complete graph", k4, 4, 12, []int32{5, 5, 8, 11, 14}, []int32{-1, -1, 11, 12, 13, 10, 12, 13, 10, 11, 13, 10, 11, 12}, ""},
		{"id beyond, last of a row", k4bad, 4, 12, nil, nil, "packed rows: row 0: node id beyond 4 nodes"},
		{"no rows", nil, 0, 0, []int32{5}, []int32{-1, -1}, ""},
		{"empty rows", []byte{0, 0}, 2, 0, []int32{5, 2, 2}, []int32{-1, -1}, ""},
		{"bytes left over", []byte{1, 0, 7}, 1, 1, nil, nil, "packed rows: 1 bytes left after the rows"},
		{"entries missing", []byte{1, 0}, 1, 2, nil, nil, "packed rows: rows hold 1 entries, want 2"},
		{"no bytes", nil, 1, 0, nil, nil, "packed rows: row 0: bad varint"},
		{"count beyond", []byte{3, 0, 0, 0}, 4, 2, nil, nil, "packed rows: row 0: 3 entries exceed the entry count 2"},
		{"id beyond", []byte{2, 0, 1}, 2, 2, nil, nil, "packed rows: row 0: node id beyond 2 nodes"},
		{"longer gap varint than needed", []byte{1, 0x80, 0x00}, 2, 1, nil, nil, "packed rows: row 0: bad varint"},
		{"longer count varint than needed", []byte{0x81, 0x00, 0}, 2, 1, nil, nil, "packed rows: row 0: bad varint"},
		{"huge gap", []byte{1, 0xff, 0xff, 0xff, 0xff, 0x0f}, 2, 1, nil, nil, "packed rows: row 0: bad varint"},
		{"overflow", []byte{1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f}, 2, 1, nil, nil, "row 0: bad varint"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// Two entries of an earlier graph, whose rows end at 5.
			idx := append(make([]int32, 0, 2+tc.nnz), -1, -1)
			ptr := make([]int32, tc.n+1)
			ptr[0] = 5
			got, err := unpackRows(idx, ptr, tc.b, tc.n, tc.nnz, 10)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			// Row ends count from len(idx) = 2; ptr[0] is the caller's.
			if !slices.Equal(got, tc.wantIdx) || !slices.Equal(ptr, tc.wantPtr) {
				t.Errorf("idx = %v, ptr = %v; want %v, %v", got, ptr, tc.wantIdx, tc.wantPtr)
			}
		})
	}
}
