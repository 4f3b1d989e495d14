package data

import (
	"bytes"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
)

// pathGraph returns the path 0-1-...-(n-1) with labels u%nl and class y.
func pathGraph(n, nl, y int) Graph {
	g := Graph{N: n, Y: y, Labels: make([]int32, n)}
	g.Adj.Ptr = make([]int32, n+1)
	for u := 0; u < n; u++ {
		if u > 0 {
			g.Adj.Idx = append(g.Adj.Idx, int32(u-1))
		}
		if u < n-1 {
			g.Adj.Idx = append(g.Adj.Idx, int32(u+1))
		}
		g.Adj.Ptr[u+1] = int32(len(g.Adj.Idx))
		g.Labels[u] = int32(u % nl)
	}
	return g
}

// pathHops returns N_1..N_k of a path with n nodes: dist(u,v) = |u-v|.
func pathHops(n, k int) GraphHops {
	var gh GraphHops
	for i := 1; i <= k; i++ {
		c := CSR{Ptr: make([]int32, n+1)}
		for u := 0; u < n; u++ {
			if u-i >= 0 {
				c.Idx = append(c.Idx, int32(u-i))
			}
			if u+i < n {
				c.Idx = append(c.Idx, int32(u+i))
			}
			c.Ptr[u+1] = int32(len(c.Idx))
		}
		gh.Hop = append(gh.Hop, c)
	}
	return gh
}

func pathDataset(sizes []int, k int) (*Dataset, *Hops) {
	ds := &Dataset{Name: "paths", NumLabels: 3, NumClasses: 2}
	hops := &Hops{KMax: k}
	for j, n := range sizes {
		ds.Graphs = append(ds.Graphs, pathGraph(n, 3, j%2))
		hops.Graphs = append(hops.Graphs, pathHops(n, k))
	}
	hops.RecordSymmetry()
	return ds, hops
}

func TestNewBatch(t *testing.T) {
	ds, hops := pathDataset([]int{3, 1, 2}, 2)
	b, err := NewBatch(ds, hops, []int{2, 0}, 2)
	if err != nil {
		t.Fatal(err)
	}
	want := &Batch{
		N: 5, NumGraphs: 2,
		GraphPtr: []int32{0, 2, 5},
		GraphOf:  []int32{0, 0, 1, 1, 1},
		Labels:   []int32{0, 1, 0, 1, 2},
		Adj:      CSR{Ptr: []int32{0, 1, 2, 3, 5, 6}, Idx: []int32{1, 0, 3, 2, 4, 3}},
		Hop: []CSR{
			{Ptr: []int32{0, 1, 2, 3, 5, 6}, Idx: []int32{1, 0, 3, 2, 4, 3}},
			{Ptr: []int32{0, 0, 0, 1, 1, 2}, Idx: []int32{4, 2}},
		},
		HopSymmetric: []bool{true, true},
		Task:         TaskClassification,
		Y:            []int32{0, 0},
	}
	if !reflect.DeepEqual(b, want) {
		t.Fatalf("NewBatch =\n%+v\nwant\n%+v", b, want)
	}
}

func TestNewBatchErrors(t *testing.T) {
	ds, hops := pathDataset([]int{3, 2}, 2)
	bad, _ := pathDataset([]int{3, 2}, 2)
	bad.Graphs[1].Labels[1] = 7
	badHops := &Hops{KMax: 2, Graphs: []GraphHops{pathHops(3, 2), pathHops(2, 2)}}
	badHops.Graphs[0].Hop[1].Idx[0] = 9
	// Faults in the second graph of a batch: found as its entries are
	// copied, after the first graph's.
	badAdj, _ := pathDataset([]int{3, 2}, 2)
	badAdj.Graphs[1].Adj.Idx[0] = -1
	lateHops := &Hops{KMax: 2, Graphs: []GraphHops{pathHops(3, 2), pathHops(2, 2)}}
	lateHops.Graphs[1].Hop[0].Idx[1] = -4
	rowHops := &Hops{KMax: 2, Graphs: []GraphHops{pathHops(3, 2), pathHops(2, 2)}}
	rowHops.Graphs[1].Hop[0].Ptr[1] = 5
	tests := []struct {
		name string
		ds   *Dataset
		hops *Hops
		idx  []int
		k    int
		want string
	}{
		{"k too large", ds, hops, []int{0}, 3, "k=3 exceeds the precomputed kmax=2"},
		{"index out of range", ds, hops, []int{0, 2}, 1, "graph index 2 out of range [0,2)"},
		{"negative index", ds, hops, []int{-1}, 1, "graph index -1 out of range"},
		{"no hops", ds, nil, []int{0}, 1, "no hop sets given"},
		{"bad label", bad, hops, []int{1}, 1, "graph 1 node 1 has label 7 outside [0,3)"},
		{"bad hop entry", ds, badHops, []int{0}, 2, "graph 0 hop set N_2: entry 9 outside [0,3)"},
		{"bad adjacency entry", badAdj, hops, []int{0, 1}, 1, "building batch: graph 1 adjacency: entry -1 outside [0,2)"},
		{"negative hop entry", ds, lateHops, []int{0, 1}, 1, "building batch: graph 1 hop set N_1: entry -4 outside [0,2)"},
		{"bad hop rows", ds, rowHops, []int{0, 1}, 2, "building batch: graph 1 hop set N_1: row pointer decreases at row 1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewBatch(tc.ds, tc.hops, tc.idx, tc.k)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want containing %q", err, tc.want)
			}
		})
	}
}

func TestNewBatchZeroHops(t *testing.T) {
	ds, _ := pathDataset([]int{4}, 1)
	b, err := NewBatch(ds, nil, []int{0}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Hop) != 0 || b.N != 4 || len(b.Adj.Idx) != 6 {
		t.Fatalf("got N=%d hops=%d adj=%d", b.N, len(b.Hop), len(b.Adj.Idx))
	}
}

// molecule returns a typed path 0-1-...-(n-1) plus an isolated node n (so
// N_∞ is not empty): edge u–u+1 has relation u%2 and edge features
// (u%3, 1), node u has categorical features (u%4, u%2); targets t.
func molecule(n int, t ...float64) (Graph, GraphHops) {
	g := pathGraph(n, 1, 0)
	g.Labels = nil
	g.Y = 0
	// Append the isolated node.
	g.N = n + 1
	g.Adj.Ptr = append(g.Adj.Ptr, g.Adj.Ptr[n])
	for u := 0; u < n; u++ {
		for _, v := range g.Adj.Row(u) {
			e := min(u, int(v)) // the edge {e, e+1}
			g.EdgeType = append(g.EdgeType, int32(e%2))
			g.EdgeFeat = append(g.EdgeFeat, int32(e%3), 1)
		}
	}
	for u := 0; u <= n; u++ {
		g.NodeCat = append(g.NodeCat, int32(u%4), int32(u%2))
	}
	g.Target = t
	gh := pathHops(n, 2)
	for i := range gh.Hop {
		gh.Hop[i].Ptr = append(gh.Hop[i].Ptr, gh.Hop[i].Ptr[n])
	}
	unr := CSR{Ptr: []int32{0}}
	for u := 0; u < n; u++ {
		unr.Idx = append(unr.Idx, int32(n))
		unr.Ptr = append(unr.Ptr, int32(len(unr.Idx)))
	}
	for v := 0; v < n; v++ {
		unr.Idx = append(unr.Idx, int32(v))
	}
	unr.Ptr = append(unr.Ptr, int32(len(unr.Idx)))
	gh.Unreachable = &unr
	return g, gh
}

// molecules is a binary multi-task dataset of typed paths with 3 and 2
// nodes (plus one isolated node each), hop sets up to 2 and N_∞ kept.
func molecules() (*Dataset, *Hops) {
	nan := math.NaN()
	g0, h0 := molecule(3, 1, nan)
	g1, h1 := molecule(2, 0, 1)
	ds := &Dataset{Name: "mols", NumEdgeTypes: 2, NumTargets: 2, Task: TaskBinary,
		NodeCatVocab: []int{4, 2}, EdgeFeatVocab: []int{3, 2}, Graphs: []Graph{g0, g1}}
	hops := &Hops{KMax: 2, Graphs: []GraphHops{h0, h1}}
	hops.RecordSymmetry()
	return ds, hops
}

func TestNewBatchTyped(t *testing.T) {
	ds, hops := molecules()
	b, err := NewBatchWith(ds, hops, []int{1, 0}, BatchOptions{K: 2, Unreachable: true})
	if err != nil {
		t.Fatal(err)
	}
	// Graph 1 (nodes 0,1 path, 2 isolated), then graph 0 (3,4,5 path, 6 isolated).
	nan := math.NaN()
	want := &Batch{
		N: 7, NumGraphs: 2,
		GraphPtr:      []int32{0, 3, 7},
		GraphOf:       []int32{0, 0, 0, 1, 1, 1, 1},
		NodeCat:       []int32{0, 0, 1, 1, 2, 0, 0, 0, 1, 1, 2, 0, 3, 1},
		NodeCatVocab:  []int{4, 2},
		Adj:           CSR{Ptr: []int32{0, 1, 2, 2, 3, 5, 6, 6}, Idx: []int32{1, 0, 4, 3, 5, 4}},
		EdgeType:      []int32{0, 0, 0, 0, 1, 1},
		NumEdgeTypes:  2,
		EdgeFeat:      []int32{0, 1, 0, 1, 0, 1, 0, 1, 1, 1, 1, 1},
		EdgeFeatVocab: []int{3, 2},
		Hop: []CSR{
			{Ptr: []int32{0, 1, 2, 2, 3, 5, 6, 6}, Idx: []int32{1, 0, 4, 3, 5, 4}},
			{Ptr: []int32{0, 0, 0, 0, 1, 1, 2, 2}, Idx: []int32{5, 3}},
		},
		HopSymmetric: []bool{true, true},
		Unreachable:  &CSR{Ptr: []int32{0, 1, 2, 4, 5, 6, 7, 10}, Idx: []int32{2, 2, 0, 1, 6, 6, 6, 3, 4, 5}},
		// N_∞ of these graphs is its own transpose, and the hop sets
		// carry a record.
		UnreachableSymmetric: true,
		Rel: []CSR{
			{Ptr: []int32{0, 1, 2, 2, 3, 4, 4, 4}, Idx: []int32{1, 0, 4, 3}},
			{Ptr: []int32{0, 0, 0, 0, 0, 1, 2, 2}, Idx: []int32{5, 4}},
		},
		Task:       TaskBinary,
		Target:     []float64{0, 1, 1, nan},
		NumTargets: 2,
	}
	// NaN != NaN: compare the targets apart.
	if !math.IsNaN(b.Target[3]) {
		t.Fatalf("missing label lost: targets %v", b.Target)
	}
	b.Target[3], want.Target[3] = 0, 0
	if !reflect.DeepEqual(b, want) {
		t.Fatalf("NewBatchWith =\n%+v\nwant\n%+v", b, want)
	}
	// Every relation is a subset of the adjacency, and together they are all of it.
	total := 0
	for _, r := range b.Rel {
		if err := ValidateCSR(r, b.N, b.N, true); err != nil {
			t.Fatal(err)
		}
		total += len(r.Idx)
	}
	if total != len(b.Adj.Idx) {
		t.Fatalf("relations hold %d edges, adjacency %d", total, len(b.Adj.Idx))
	}
	var names []string
	for _, nb := range b.Neighbourhoods() {
		names = append(names, nb.Name()+":"+nb.Kind.String())
	}
	if got := strings.Join(names, " "); got != "N_1:hop N_2:hop N_∞:unreachable r_1:relation r_2:relation" {
		t.Fatalf("Neighbourhoods = %s", got)
	}
}

func TestNewBatchTypedErrors(t *testing.T) {
	type mutate func(ds *Dataset, hops *Hops)
	tests := []struct {
		name string
		f    mutate
		opt  BatchOptions
		want string
	}{
		{"ok", func(*Dataset, *Hops) {}, BatchOptions{K: 2, Unreachable: true}, ""},
		{"no N_inf kept", func(_ *Dataset, h *Hops) { h.Graphs[1].Unreachable = nil }, BatchOptions{K: 1, Unreachable: true},
			"graph 1 has no N_∞ (unreachable pairs were not kept"},
		{"N_inf without hops", func(_ *Dataset, h *Hops) {}, BatchOptions{Unreachable: true}, ""},
		{"bad N_inf", func(_ *Dataset, h *Hops) { h.Graphs[0].Unreachable.Idx[0] = 11 }, BatchOptions{Unreachable: true},
			"graph 0 N_∞: entry 11 outside [0,4)"},
		{"edge types missing", func(ds *Dataset, _ *Hops) { ds.Graphs[0].EdgeType = nil }, BatchOptions{},
			"graph 0 has 0 edge types for 4 edge entries (dataset \"mols\" has 2 relations)"},
		{"edge type out of range", func(ds *Dataset, _ *Hops) { ds.Graphs[1].EdgeType[1] = 2 }, BatchOptions{},
			"graph 1 edge entry 1 has type 2 outside [0,2)"},
		{"negative edge type", func(ds *Dataset, _ *Hops) { ds.Graphs[0].EdgeType[0] = -1 }, BatchOptions{},
			"graph 0 edge entry 0 has type -1 outside [0,2)"},
		{"edge features short", func(ds *Dataset, _ *Hops) { ds.Graphs[0].EdgeFeat = ds.Graphs[0].EdgeFeat[:3] }, BatchOptions{},
			"graph 0 edge features: 3 values, want 4×2"},
		{"edge feature out of vocab", func(ds *Dataset, _ *Hops) { ds.Graphs[0].EdgeFeat[3] = 2 }, BatchOptions{},
			"graph 0 edge features: row 1 column 1 is 2 outside [0,2)"},
		{"edge features without vocab", func(ds *Dataset, _ *Hops) { ds.EdgeFeatVocab = nil }, BatchOptions{},
			"graph 0 edge features: 8 values but the dataset declares no feature columns"},
		{"node features out of vocab", func(ds *Dataset, _ *Hops) { ds.Graphs[1].NodeCat[4] = 4 }, BatchOptions{},
			"graph 1 categorical node features: row 2 column 0 is 4 outside [0,4)"},
		{"node features missing", func(ds *Dataset, _ *Hops) { ds.Graphs[1].NodeCat = nil }, BatchOptions{},
			"graph 1 categorical node features: 0 values, want 3×2"},
		{"binary label not 0/1", func(ds *Dataset, _ *Hops) { ds.Graphs[1].Target[0] = 0.5 }, BatchOptions{},
			"graph 1 task 0 has label 0.5, want 0, 1 or NaN (missing)"},
		{"regression NaN is a missing target", func(ds *Dataset, _ *Hops) { ds.Task = TaskRegression }, BatchOptions{}, ""},
		{"regression Inf", func(ds *Dataset, _ *Hops) { ds.Task, ds.Graphs[0].Target[1] = TaskRegression, math.Inf(1) }, BatchOptions{},
			"graph 0 target 1 is +Inf, want a finite value or NaN (missing)"},
		{"too few targets", func(ds *Dataset, _ *Hops) { ds.Graphs[0].Target = ds.Graphs[0].Target[:1] }, BatchOptions{},
			"graph 0 has 1 targets, want 2"},
		{"k beyond kmax", func(*Dataset, *Hops) {}, BatchOptions{K: 3}, "k=3 exceeds the precomputed kmax=2"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ds, hops := molecules()
			tc.f(ds, hops)
			_, err := NewBatchWith(ds, hops, []int{0, 1}, tc.opt)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want containing %q", err, tc.want)
			}
		})
	}
}

// BenchmarkNewBatch joins 32 graphs of 40 nodes with 5 hop sets, the size of
// a PROTEINS batch.
func BenchmarkNewBatch(b *testing.B) {
	sizes := make([]int, 256)
	for i := range sizes {
		sizes[i] = 40
	}
	ds, hops := pathDataset(sizes, 5)
	idx := make([]int, 32)
	for i := range idx {
		idx[i] = (i * 7) % len(sizes)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := NewBatch(ds, hops, idx, 5); err != nil {
			b.Fatal(err)
		}
	}
}

// TestHopsPrefix checks that a prefix keeps N_1..N_k and N_∞ and does not
// share the per-graph CSR slices (so the dropped hop sets can be freed).
func TestHopsPrefix(t *testing.T) {
	h := sampleHops(t)
	if h.Prefix(2) != h || h.Prefix(5) != h {
		t.Error("Prefix(k ≥ KMax) should return h itself")
	}
	p := h.Prefix(1)
	if p.KMax != 1 || len(p.Graphs) != 2 {
		t.Fatalf("prefix: %+v", p)
	}
	for i, gh := range p.Graphs {
		if len(gh.Hop) != 1 || cap(gh.Hop) != 1 || !reflect.DeepEqual(gh.Hop[0], h.Graphs[i].Hop[0]) || gh.Unreachable != h.Graphs[i].Unreachable {
			t.Errorf("graph %d: %+v", i, gh)
		}
		if &gh.Hop[0] == &h.Graphs[i].Hop[0] {
			t.Errorf("graph %d shares its CSR slice with the full hops", i)
		}
	}
	if z := h.Prefix(0); z.KMax != 0 || len(z.Graphs[0].Hop) != 0 || z.Graphs[1].Unreachable == nil {
		t.Errorf("Prefix(0): %+v", z)
	}
}

// TestUnreachableSymmetry: the record says of N_∞ what it says of the hop
// sets, and a batch is marked only when every one of its graphs keeps a
// symmetric N_∞ and there is a record; Prefix keeps it.
func TestUnreachableSymmetry(t *testing.T) {
	ds, hops := pathDataset([]int{3, 3, 3}, 1)
	hops.sym = nil
	// Graph 0: symmetric, sorted rows (0, 1 | 2 as if apart). Graph 1:
	// 0→2 without 2→0. Graph 2: no N_∞.
	hops.Graphs[0].Unreachable = &CSR{Ptr: []int32{0, 1, 2, 4}, Idx: []int32{2, 2, 0, 1}}
	hops.Graphs[1].Unreachable = &CSR{Ptr: []int32{0, 1, 1, 1}, Idx: []int32{2}}
	flag := func(h *Hops, idx []int) bool {
		t.Helper()
		b, err := NewBatchWith(ds, h, idx, BatchOptions{K: h.KMax, Unreachable: true})
		if err != nil {
			t.Fatal(err)
		}
		return b.UnreachableSymmetric
	}
	if flag(hops, []int{0}) || hops.UnreachableSymmetric([]int{0}) {
		t.Error("marked symmetric without a record")
	}
	hops.RecordSymmetry()
	for _, c := range []struct {
		idx  []int
		want bool
	}{{[]int{0}, true}, {[]int{0, 0}, true}, {[]int{1}, false}, {[]int{1, 0}, false}} {
		if got := flag(hops, c.idx); got != c.want {
			t.Errorf("graphs %v: UnreachableSymmetric = %v, want %v", c.idx, got, c.want)
		}
	}
	if hops.UnreachableSymmetric([]int{2}) || !hops.UnreachableSymmetric(nil) {
		t.Error("a graph without N_∞ counts as symmetric, or an empty batch does not")
	}
	if b, err := NewBatchWith(ds, hops, []int{0}, BatchOptions{K: 1}); err != nil || b.UnreachableSymmetric {
		t.Errorf("a batch without N_∞ is marked (%v)", err)
	}
	if p := hops.Prefix(0); !flag(p, []int{0}) || flag(p, []int{1}) {
		t.Error("Prefix(0) lost the N_∞ record")
	}
}

// symmetryDataset returns three paths with hop sets up to 2 whose
// symmetry differs: graph 0 (3 nodes) has both sets symmetric, graph 1 (3
// nodes) an N_2 with one entry whose reverse is missing, graph 2 (4 nodes)
// an N_1 with a row out of order (symmetric as a relation, but not its
// own transpose entry for entry).
func symmetryDataset() (*Dataset, *Hops) {
	ds, hops := pathDataset([]int{3, 3, 4}, 2)
	hops.sym = nil
	// Graph 1: N_2 = {0→2}, without 2→0.
	hops.Graphs[1].Hop[1] = CSR{Ptr: []int32{0, 1, 1, 1}, Idx: []int32{2}}
	// Graph 2: row 1 of N_1 is [2 0].
	n1 := &hops.Graphs[2].Hop[0]
	r := n1.Idx[n1.Ptr[1]:n1.Ptr[2]]
	r[0], r[1] = r[1], r[0]
	return ds, hops
}

// TestHopSymmetry checks the symmetry that Hops.RecordSymmetry records and
// NewBatchWith hands to a batch: a batch's N_i is marked symmetric exactly
// when every graph of it has a symmetric N_i with sorted rows, and never
// without a record.
func TestHopSymmetry(t *testing.T) {
	ds, hops := symmetryDataset()
	cases := []struct {
		idx  []int
		want []bool
	}{
		{[]int{0}, []bool{true, true}},
		{[]int{0, 0}, []bool{true, true}},
		{[]int{1}, []bool{true, false}},
		{[]int{0, 1}, []bool{true, false}},
		{[]int{2}, []bool{false, true}},
		{[]int{2, 0}, []bool{false, true}},
		{[]int{0, 1, 2}, []bool{false, false}},
		{[]int{}, []bool{true, true}},
	}
	batchFlags := func(ds *Dataset, h *Hops, idx []int, k int) []bool {
		t.Helper()
		b, err := NewBatch(ds, h, idx, k)
		if err != nil {
			t.Fatal(err)
		}
		return b.HopSymmetric
	}
	// Without a record nothing is symmetric.
	for _, c := range cases {
		if got := batchFlags(ds, hops, c.idx, 2); !reflect.DeepEqual(got, []bool{false, false}) {
			t.Errorf("graphs %v, no record: HopSymmetric = %v, want all false", c.idx, got)
		}
	}
	hops.RecordSymmetry()
	for _, c := range cases {
		if got := batchFlags(ds, hops, c.idx, 2); !reflect.DeepEqual(got, c.want) {
			t.Errorf("graphs %v: HopSymmetric = %v, want %v", c.idx, got, c.want)
		}
		if got := batchFlags(ds, hops, c.idx, 1); !reflect.DeepEqual(got, c.want[:1]) {
			t.Errorf("graphs %v, k = 1: HopSymmetric = %v, want %v", c.idx, got, c.want[:1])
		}
		for i := 1; i <= 2; i++ {
			if got := hops.Symmetric(i, c.idx); got != c.want[i-1] {
				t.Errorf("graphs %v: Symmetric(%d) = %v, want %v", c.idx, i, got, c.want[i-1])
			}
		}
	}
	if hops.Symmetric(0, nil) || hops.Symmetric(3, nil) {
		t.Error("Symmetric claims a hop level outside 1..KMax")
	}
	// Prefix keeps the record of the levels it keeps.
	p := hops.Prefix(1)
	if got := batchFlags(ds, p, []int{0, 1}, 1); !reflect.DeepEqual(got, []bool{true}) {
		t.Errorf("Prefix(1), graphs 0, 1: HopSymmetric = %v, want [true]", got)
	}
	if got := batchFlags(ds, p, []int{2}, 1); !reflect.DeepEqual(got, []bool{false}) {
		t.Errorf("Prefix(1), graph 2: HopSymmetric = %v, want [false]", got)
	}
	// The readers record it (the file holds no flag; a file's rows are
	// sorted): graphs 0 and 1 as above.
	ds2, h2 := pathDataset([]int{3, 3}, 2)
	h2.Graphs[1].Hop[1] = hops.Graphs[1].Hop[1]
	h2.sym = nil
	var buf bytes.Buffer
	if err := WriteHops(&buf, h2); err != nil {
		t.Fatal(err)
	}
	read, err := ReadHops(&buf)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases[:4] {
		if got := batchFlags(ds2, read, c.idx, 2); !reflect.DeepEqual(got, c.want) {
			t.Errorf("read back, graphs %v: HopSymmetric = %v, want %v", c.idx, got, c.want)
		}
	}
}

// TestCheckCSR checks CheckCSR (and appendShifted's check of the entries
// as it copies them, which reports the same error) against the plain
// checks it makes in one pass: entries around both ends of [0,n), at
// every position of rows of lengths that do and do not fill its four
// running maxima.
func TestCheckCSR(t *testing.T) {
	ref := func(c CSR, n int) error {
		if err := checkRows(c, n); err != nil {
			return err
		}
		for _, v := range c.Idx {
			if v < 0 || int(v) >= n {
				return fmt.Errorf("entry %d outside [0,%d)", v, n)
			}
		}
		return nil
	}
	const n = 5
	for nnz := 0; nnz <= 9; nnz++ {
		for pos := 0; pos < max(nnz, 1); pos++ {
			for _, bad := range []int32{0, n - 1, n, -1, math.MaxInt32, math.MinInt32} {
				c := CSR{Ptr: make([]int32, n+1), Idx: make([]int32, nnz)}
				for i := range c.Idx {
					c.Idx[i] = int32(i % n)
				}
				if nnz > 0 {
					c.Idx[pos] = bad
				}
				for u := 1; u <= n; u++ {
					c.Ptr[u] = int32(min(nnz, 2*u))
				}
				c.Ptr[n] = int32(nnz)
				want := ref(c, n)
				if got := CheckCSR(c, n); fmt.Sprint(got) != fmt.Sprint(want) {
					t.Fatalf("%d entries, %d at %d: CheckCSR = %v, want %v", nnz, bad, pos, got, want)
				}
				ptr := make([]int32, n+1)
				idx, err := appendShifted(make([]int32, 1, 1+nnz), ptr, c, n, 10)
				if fmt.Sprint(err) != fmt.Sprint(want) {
					t.Fatalf("%d entries, %d at %d: appendShifted's error %v, want %v", nnz, bad, pos, err, want)
				}
				if err == nil {
					for i, v := range idx[1:] {
						if v != c.Idx[i]+10 {
							t.Fatalf("appendShifted copied entry %d as %d, want %d", i, v, c.Idx[i]+10)
						}
					}
					for u := 1; u <= n; u++ {
						if ptr[u] != 1+c.Ptr[u] {
							t.Fatalf("appendShifted's row end %d is %d, want %d", u, ptr[u], 1+c.Ptr[u])
						}
					}
				}
			}
		}
	}
}
