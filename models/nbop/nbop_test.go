package nbop

import (
	"context"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/data/ogb"
	"github.com/spn-project/spn/data/qm9"
	"github.com/spn-project/spn/data/sp"
	"github.com/spn-project/spn/data/tu"
	"github.com/spn-project/spn/internal/testkit/mirrortest"
	"github.com/spn-project/spn/internal/testkit/synth"
	"github.com/spn-project/spn/models/internal/testkit/optest"
	"github.com/spn-project/spn/models/kernels"
)

func randFloats(rng *rand.Rand, n int, scale float64) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(rng.NormFloat64() * scale)
	}
	return x
}

// awayFromZero moves values near 0 away from the ReLU kink, so that finite
// differences do not cross it.
func awayFromZero(x []float32) []float32 {
	for i, v := range x {
		if math.Abs(float64(v)) < 0.1 {
			x[i] = 0.2
		}
	}
	return x
}

// typedBatch is a batch of 6 random typed graphs with binary targets
// (some missing), hop sets up to k.
func typedBatch(t *testing.T, k int) *data.Batch {
	t.Helper()
	ds, hops, err := synth.EdgeFeatures(3, 6, k)
	if err != nil {
		t.Fatal(err)
	}
	b, err := data.NewBatch(ds, hops, []int{0, 1, 2, 3, 4, 5}, k)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestGradients(t *testing.T) {
	for _, threads := range []int{1, 2} {
		be := kernels.CPU{Threads: threads}
		rng := rand.New(rand.NewPCG(3, 4))
		k := 3
		ds, hops, err := synth.Relational(3, 6, k)
		if err != nil {
			t.Fatal(err)
		}
		b, err := data.NewBatch(ds, hops, []int{0, 1, 2, 3, 4, 5}, k)
		if err != nil {
			t.Fatal(err)
		}
		bin := typedBatch(t, k)
		D, Dbin := &Data{}, &Data{}
		if err := D.Set(b, Need{K: k, Relations: true, Edges: true}); err != nil {
			t.Fatal(err)
		}
		if err := Dbin.Set(bin, Need{K: 1}); err != nil {
			t.Fatal(err)
		}
		// The SPN layer's first hop (HopCombine): N_1, asymmetric here.
		D.Hop1, D.Hop1T = b.Hop[0], kernels.Transpose(b.Hop[0])
		n, w := b.N, 4
		N := n + 7
		_, edgeRows := kernels.EmbedOffsets(b.EdgeFeatVocab)
		_, nodeRows := kernels.EmbedOffsets(b.NodeCatVocab)
		R := b.NumEdgeTypes
		rel := make([][]float32, R)
		for j := range rel {
			rel[j] = randFloats(rng, N*w, 1)
		}
		nd := func() []float32 { return randFloats(rng, N*w, 1) }
		D1 := *D
		D1.Hops, D1.HopsT = nil, nil
		G := bin.NumGraphs + 2
		cases := []optest.Case{
			{Name: "combine", Op: GivenFirstHop{ID: "c", Be: be, D: D, K: k, N: N, W: w},
				In: [][]float32{nd(), nd(), nd(), {0.2, 0.5, 0.3}, {0.4}}, ZeroFrom: n * w},
			{Name: "combine k=1", Op: GivenFirstHop{ID: "c1", Be: be, D: &D1, K: 1, N: N, W: w},
				In: [][]float32{nd(), nd(), nd(), {1}, {-0.2}}, ZeroFrom: n * w},
			{Name: "combine hop 1 (SPN)", Op: &HopCombine{ID: "s", Be: be, D: D, K: k, N: N, W: w},
				In: [][]float32{nd(), {0.2, 0.5, 0.3}, {0.4}}, ZeroFrom: n * w},
			{Name: "combine hop 1, k=1 (GIN)", Op: &HopCombine{ID: "s1", Be: be, D: &D1, K: 1, N: N, W: w},
				In: [][]float32{nd(), {1}, {-0.2}}, ZeroFrom: n * w},
			{Name: "relation aggregation", Op: RelAgg{ID: "r", Be: be, D: D, R: R, N: N, W: w},
				In: rel, ZeroFrom: n * w},
			// |e| small against |h|: h_v + e_uv keeps h_v's sign.
			{Name: "edge messages", Op: EdgeMsg{ID: "e", Be: be, D: D, Rows: edgeRows, N: N, W: w},
				In: [][]float32{awayFromZero(nd()), randFloats(rng, edgeRows*w, 0.02)}, H: 1e-3, ZeroFrom: n * w},
			{Name: "atom encoder", Op: CatEmbed{ID: "a", Be: be, D: D, Rows: nodeRows, N: N, W: w},
				In: [][]float32{randFloats(rng, nodeRows*w, 1)}, ZeroFrom: n * w},
			{Name: "atom encoder onto h", Op: CatEmbed{ID: "ah", Be: be, D: D, Rows: nodeRows, N: N, W: w, Onto: true},
				In: [][]float32{nd(), randFloats(rng, nodeRows*w, 1)}},
			{Name: "global readout", Op: GlobalRead{ID: "gr", Be: be, D: D, N: N, W: w},
				In: [][]float32{nd(), randFloats(rng, w*w, 1)}, ZeroFrom: n * w},
			{Name: "masked bce", Op: BCE{ID: "b", D: Dbin, G: G, T: bin.NumTargets},
				In: [][]float32{randFloats(rng, G*bin.NumTargets, 2)}},
		}
		for _, c := range cases {
			optest.CheckGrad(t, c)
		}
	}
}

// TestCatEmbedOnto: the input encoding's sum in one op (Onto) has the
// bits of the embeddings added to h (Gorgonia's Add of the two, which it
// replaces), padding rows included, and the same gradients: dh = dy and
// the tables' gradient of the embeddings alone.
func TestCatEmbedOnto(t *testing.T) {
	ds, hops, err := synth.Relational(5, 8, 1)
	if err != nil {
		t.Fatal(err)
	}
	b, err := data.NewBatch(ds, hops, []int{0, 1, 2, 3, 4, 5, 6, 7}, 1)
	if err != nil {
		t.Fatal(err)
	}
	D := &Data{}
	if err := D.Set(b, Need{K: 1}); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(9, 10))
	_, rows := kernels.EmbedOffsets(b.NodeCatVocab)
	w, N := 6, b.N+5
	for _, be := range []kernels.Backend{kernels.CPU{Threads: 1}, kernels.CPU{Threads: 3}} {
		h, T, dy := randFloats(rng, N*w, 1), randFloats(rng, rows*w, 1), randFloats(rng, N*w, 1)
		h[N*w-1] = float32(math.Copysign(0, -1)) // −0 in the padding: −0 + 0 is +0
		emb := CatEmbed{ID: "a", Be: be, D: D, Rows: rows, N: N, W: w}
		onto := emb
		onto.Onto = true
		atom, y := make([]float32, N*w), make([]float32, N*w)
		if err := emb.Forward([][]float32{T}, atom); err != nil {
			t.Fatal(err)
		}
		if err := onto.Forward([][]float32{h, T}, y); err != nil {
			t.Fatal(err)
		}
		for i := range y {
			if want := h[i] + atom[i]; math.Float32bits(y[i]) != math.Float32bits(want) {
				t.Fatalf("y[%d] = %v, want h + embeddings %v", i, y[i], want)
			}
		}
		dT, dT2, dh := make([]float32, rows*w), make([]float32, rows*w), make([]float32, N*w)
		if err := emb.Backward(nil, atom, dy, [][]float32{dT}); err != nil {
			t.Fatal(err)
		}
		if err := onto.Backward(nil, y, dy, [][]float32{dh, dT2}); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(dh, dy) || !slices.Equal(dT, dT2) {
			t.Fatal("the gradients with Onto differ from dh = dy and the embeddings' own")
		}
	}
}

// TestBCEIgnoresMissing: a missing label contributes neither loss nor
// gradient, whatever its logit.
func TestBCEIgnoresMissing(t *testing.T) {
	o := BCE{ID: "b", D: &Data{G: 2, Target: []float64{1, math.NaN(), 0, 1}}, G: 2, T: 2}
	for _, z := range []float32{-100, 100} {
		y := make([]float32, 1)
		if err := o.Forward([][]float32{{0, z, 0, 0}}, y); err != nil {
			t.Fatal(err)
		}
		if math.Abs(float64(y[0])-math.Ln2) > 1e-6 {
			t.Fatalf("logit %v at the missing label: loss %v, want ln 2", z, y[0])
		}
		g := [][]float32{make([]float32, 4)}
		if err := o.Backward([][]float32{{0, z, 0, 0}}, y, []float32{1}, g); err != nil {
			t.Fatal(err)
		}
		if g[0][1] != 0 {
			t.Fatalf("gradient %v at the missing label", g[0][1])
		}
	}
}

// TestErrors: ops refuse a batch that lacks what they read.
func TestErrors(t *testing.T) {
	be := kernels.CPU{}
	D := &Data{N: 2, G: 1, Ptr: []int32{0, 2}, Adj: data.CSR{Ptr: []int32{0, 1, 2}, Idx: []int32{1, 0}}}
	y := make([]float32, 8)
	x := make([]float32, 8)
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"combine without hops", GivenFirstHop{ID: "c", Be: be, D: D, K: 3, N: 2, W: 4}.Forward([][]float32{x, x, x, {1, 0, 0}, {0}}, y), "0 higher hop sets for k = 3"},
		{"relations missing", RelAgg{ID: "r", Be: be, D: D, R: 2, N: 2, W: 4}.Forward([][]float32{x, x}, y), "batch has 0 relations, op built for 2"},
		{"edge features missing", EdgeMsg{ID: "e", Be: be, D: D, Rows: 3, N: 2, W: 4}.Forward([][]float32{x, make([]float32, 12)}, y), "0 edge feature values for 2 edge entries × 0 columns"},
		{"node features missing", CatEmbed{ID: "a", Be: be, D: D, Rows: 3, N: 2, W: 4}.Forward([][]float32{make([]float32, 12)}, y), "0 categorical node feature values for 2 nodes × 0 columns"},
		{"labels missing", BCE{ID: "b", D: D, G: 1, T: 2}.Forward([][]float32{{0, 0}}, y[:1]), "batch has 0 binary labels, want 1 graphs × 2 tasks"},
	}
	for _, tc := range tests {
		if tc.err == nil || !strings.Contains(tc.err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want containing %q", tc.name, tc.err, tc.want)
		}
	}
	if err := D.Set(&data.Batch{N: 2, Hop: nil}, Need{K: 2}); err == nil || !strings.Contains(err.Error(), "batch carries 0 hop sets, need 2") {
		t.Errorf("Set: %v", err)
	}
}

// TestSetTransposes checks the transposes Set and SetHop1 hand the ops: a
// hop set the batch marks symmetric (data.Batch.HopSymmetric) is its own
// transpose, sharing its arrays; any other set (unmarked, or the
// adjacency given as the first hop) is transposed, and every transpose
// equals kernels.Transpose's exactly.
func TestSetTransposes(t *testing.T) {
	const k = 3
	b := typedBatch(t, k)
	for i, s := range b.HopSymmetric {
		if !s {
			t.Fatalf("synthetic batch: N_%d not marked symmetric", i+1)
		}
	}
	const (
		set     = iota // Set
		hop1           // SetHop1 with N_1..N_k
		hop1Adj        // SetHop1 with the adjacency, N_2..N_k
	)
	cases := []struct {
		name string
		sym  []bool
		form int
		// shared[i] says the transpose of the i-th set handed over must
		// be the set itself.
		shared []bool
	}{
		{"Set, marked", []bool{true, true, true}, set, []bool{true, true}},
		{"Set, unmarked", nil, set, []bool{false, false}},
		{"Set, N_3 unmarked", []bool{true, true, false}, set, []bool{true, false}},
		{"SetHop1, marked", []bool{true, true, true}, hop1, []bool{true, true, true}},
		{"SetHop1, unmarked", nil, hop1, []bool{false, false, false}},
		{"SetHop1, N_1 unmarked", []bool{false, true, true}, hop1, []bool{false, true, true}},
		{"SetHop1, short marks", []bool{true}, hop1, []bool{true, false, false}},
		{"SetHop1, adjacency first", []bool{true, true, true}, hop1Adj, []bool{false, true, true}},
	}
	for _, c := range cases {
		bb := *b
		bb.HopSymmetric = c.sym
		var d Data
		var sets, setsT []data.CSR
		switch c.form {
		case set:
			if err := d.Set(&bb, Need{K: k}); err != nil {
				t.Fatal(err)
			}
			sets, setsT = d.Hops, d.HopsT
		case hop1Adj:
			d.SetHop1(&bb, append([]data.CSR{bb.Adj}, bb.Hop[1:k]...))
			sets, setsT = append([]data.CSR{d.Hop1}, d.Hops...), append([]data.CSR{d.Hop1T}, d.HopsT...)
		case hop1:
			d.SetHop1(&bb, bb.Hop[:k])
			sets, setsT = append([]data.CSR{d.Hop1}, d.Hops...), append([]data.CSR{d.Hop1T}, d.HopsT...)
		}
		if len(sets) != len(c.shared) || len(setsT) != len(sets) {
			t.Fatalf("%s: %d sets, %d transposes, want %d", c.name, len(sets), len(setsT), len(c.shared))
		}
		for i, s := range sets {
			if got := sameArrays(setsT[i], s); got != c.shared[i] {
				t.Errorf("%s: set %d shares its arrays with its transpose: %v, want %v", c.name, i, got, c.shared[i])
			}
			want := kernels.Transpose(s)
			if !slices.Equal(setsT[i].Ptr, want.Ptr) || !slices.Equal(setsT[i].Idx, want.Idx) {
				t.Errorf("%s: transpose of set %d differs from kernels.Transpose", c.name, i)
			}
		}
	}
}

// TestSetTransposesUnreachable: N_∞, the last set of Set and SetHop1 with
// it, is its own transpose (sharing its arrays) when the batch marks it
// symmetric (data.Batch.UnreachableSymmetric), else transposed, equal to
// kernels.Transpose either way.
func TestSetTransposesUnreachable(t *testing.T) {
	const k = 3
	b := typedBatch(t, k)
	// A symmetric set with rows in order, in arrays of its own: N_2's.
	unr := data.CSR{Ptr: slices.Clone(b.Hop[1].Ptr), Idx: slices.Clone(b.Hop[1].Idx)}
	for _, marked := range []bool{true, false} {
		bb := *b
		bb.Unreachable, bb.UnreachableSymmetric = &unr, marked
		var set, hop1 Data
		if err := set.Set(&bb, Need{K: k, Unreachable: true}); err != nil {
			t.Fatal(err)
		}
		hop1.SetHop1(&bb, append(bb.Hop[:k:k], unr))
		for name, d := range map[string]*Data{"Set": &set, "SetHop1": &hop1} {
			last := len(d.Hops) - 1
			if !sameArrays(d.Hops[last], unr) {
				t.Fatalf("%s: the last set is not N_∞", name)
			}
			if got := sameArrays(d.HopsT[last], unr); got != marked {
				t.Errorf("%s, marked %v: N_∞'s transpose shares its arrays: %v", name, marked, got)
			}
			want := kernels.Transpose(unr)
			if !slices.Equal(d.HopsT[last].Ptr, want.Ptr) || !slices.Equal(d.HopsT[last].Idx, want.Idx) {
				t.Errorf("%s, marked %v: N_∞'s transpose differs from kernels.Transpose", name, marked)
			}
		}
	}
}

// TestMirrorHopSetsSymmetric checks the symmetry record on real data: every
// batch of 32 graphs of PROTEINS, ENZYMES, ogbg-molbace and QM9's
// validation molecules has every hop set N_1..N_10 and N_∞ marked
// symmetric (their graphs are undirected and sp.Compute lists rows
// ascending), and every marked set equals its kernels.Transpose exactly
// (Ptr and Idx).
func TestMirrorHopSetsSymmetric(t *testing.T) {
	dir := mirrortest.Dir(t)
	load := []struct {
		name string
		load func() (*data.Dataset, error)
	}{
		{"PROTEINS", func() (*data.Dataset, error) { return tu.Load(filepath.Join(dir, "tu", "PROTEINS.zip"), "") }},
		{"ENZYMES", func() (*data.Dataset, error) { return tu.Load(filepath.Join(dir, "tu", "ENZYMES.zip"), "") }},
		{"bace", func() (*data.Dataset, error) { return ogb.Load(filepath.Join(dir, "ogb", "bace.zip"), "bace") }},
		{"QM9 valid", func() (*data.Dataset, error) {
			return qm9.LoadN(filepath.Join(dir, "qm9", "valid.jsonl.gz"), "valid", 2000)
		}},
	}
	for _, l := range load {
		ds, err := l.load()
		if err != nil {
			t.Fatal(err)
		}
		hops, err := sp.Compute(context.Background(), ds.Graphs, sp.DefaultKMax, true, 2)
		if err != nil {
			t.Fatal(err)
		}
		for lo := 0; lo < len(ds.Graphs); lo += 32 {
			idx := make([]int, 0, 32)
			for i := lo; i < min(lo+32, len(ds.Graphs)); i++ {
				idx = append(idx, i)
			}
			b, err := data.NewBatchWith(ds, hops, idx, data.BatchOptions{K: sp.DefaultKMax, Unreachable: true})
			if err != nil {
				t.Fatal(err)
			}
			sets, marks := append(slices.Clip(b.Hop), *b.Unreachable), append(slices.Clip(b.HopSymmetric), b.UnreachableSymmetric)
			for i, h := range sets {
				if !marks[i] {
					t.Fatalf("%s, graphs %d..: N_%d not marked symmetric (N_11 is N_∞)", l.name, lo, i+1)
				}
				tr := kernels.Transpose(h)
				if !slices.Equal(tr.Ptr, h.Ptr) || !slices.Equal(tr.Idx, h.Idx) {
					t.Fatalf("%s, graphs %d..: N_%d marked symmetric but differs from its transpose", l.name, lo, i+1)
				}
			}
		}
	}
}
