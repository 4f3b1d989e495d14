package gg

import (
	"context"
	"math"
	"math/rand/v2"
	"sort"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/data/sp"
)

// typedEdge is one undirected edge with its relation and features.
type typedEdge struct {
	u, v, rel int
	feat      [2]int32
}

// randomTypedGraph returns a random connected graph of n nodes (a random
// tree plus a few chords) whose edges carry a relation in 0..2 and two
// categorical features (vocabularies 3 and 2), and whose nodes carry a
// label in 0..2 and two categorical features (vocabularies 4 and 3).
func randomTypedGraph(rng *rand.Rand, n int) data.Graph {
	var edges []typedEdge
	has := map[[2]int]bool{}
	add := func(u, v int) {
		if u == v || has[[2]int{u, v}] {
			return
		}
		has[[2]int{u, v}], has[[2]int{v, u}] = true, true
		edges = append(edges, typedEdge{u, v, rng.IntN(3), [2]int32{int32(rng.IntN(3)), int32(rng.IntN(2))}})
	}
	for u := 1; u < n; u++ {
		add(u, rng.IntN(u))
	}
	for c := 0; c < n/4; c++ {
		add(rng.IntN(n), rng.IntN(n))
	}
	type entry struct {
		v, rel int
		feat   [2]int32
	}
	rows := make([][]entry, n)
	for _, e := range edges {
		rows[e.u] = append(rows[e.u], entry{e.v, e.rel, e.feat})
		rows[e.v] = append(rows[e.v], entry{e.u, e.rel, e.feat})
	}
	g := data.Graph{N: n, Adj: data.CSR{Ptr: []int32{0}}}
	for u := 0; u < n; u++ {
		r := rows[u]
		sort.Slice(r, func(i, j int) bool { return r[i].v < r[j].v })
		for _, e := range r {
			g.Adj.Idx = append(g.Adj.Idx, int32(e.v))
			g.EdgeType = append(g.EdgeType, int32(e.rel))
			g.EdgeFeat = append(g.EdgeFeat, e.feat[0], e.feat[1])
		}
		g.Adj.Ptr = append(g.Adj.Ptr, int32(len(g.Adj.Idx)))
		g.Labels = append(g.Labels, int32(rng.IntN(3)))
		g.NodeCat = append(g.NodeCat, int32(rng.IntN(4)), int32(rng.IntN(3)))
	}
	return g
}

// randomTypedDataset returns graphs random typed graphs of minN..maxN
// nodes with two binary tasks (each label missing with probability 1/4).
func randomTypedDataset(rng *rand.Rand, graphs, minN, maxN int) *data.Dataset {
	ds := &data.Dataset{Name: "typed", NumLabels: 3, NumEdgeTypes: 3, NumTargets: 2, Task: data.TaskBinary,
		NodeCatVocab: []int{4, 3}, EdgeFeatVocab: []int{3, 2}}
	for j := 0; j < graphs; j++ {
		g := randomTypedGraph(rng, minN+rng.IntN(maxN-minN+1))
		g.Target = []float64{float64(rng.IntN(2)), float64(rng.IntN(2))}
		for t := range g.Target {
			if rng.IntN(4) == 0 {
				g.Target[t] = math.NaN()
			}
		}
		ds.Graphs = append(ds.Graphs, g)
	}
	return ds
}

// hopsOf computes the hop sets N_1..N_kmax of ds.
func hopsOf(t testing.TB, ds *data.Dataset, kmax int) *data.Hops {
	t.Helper()
	hops, err := sp.Compute(context.Background(), ds.Graphs, kmax, false, 1)
	if err != nil {
		t.Fatal(err)
	}
	return hops
}

// tensorOf wraps v as a float32 tensor value of the given shape.
func tensorOf(v []float32, shape ...int) G.Value {
	return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(v))
}
