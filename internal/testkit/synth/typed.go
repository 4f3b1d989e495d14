package synth

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/data/sp"
)

// Vocabularies of the typed graphs: NumRelations edge types, two
// categorical edge features (EdgeFeatVocab) and two categorical node
// features (NodeCatVocab), and NumLabels node labels.
var (
	EdgeFeatVocab = []int{3, 2}
	NodeCatVocab  = []int{4, 3}
)

const (
	NumRelations = 3
	NumLabels    = 3
)

// TypedGraphs returns n random connected graphs of minN..maxN nodes (a
// random tree plus n/4 chords): every edge has a relation in
// 0..NumRelations-1 and categorical features (EdgeFeatVocab), the same in
// both directions; every node a label (NumLabels) and categorical features
// (NodeCatVocab). The graphs have no targets and the dataset no task.
func TypedGraphs(seed uint64, n, minN, maxN int) (*data.Dataset, error) {
	if n < 1 || minN < 1 || maxN < minN {
		return nil, fmt.Errorf("synth.TypedGraphs: bad parameters n=%d nodes %d..%d", n, minN, maxN)
	}
	rng := rand.New(rand.NewPCG(seed, 0x7e9ed))
	ds := &data.Dataset{Name: "typed", NumLabels: NumLabels, NumEdgeTypes: NumRelations,
		NodeCatVocab: append([]int(nil), NodeCatVocab...), EdgeFeatVocab: append([]int(nil), EdgeFeatVocab...)}
	for j := 0; j < n; j++ {
		ds.Graphs = append(ds.Graphs, typedGraph(rng, minN+rng.IntN(maxN-minN+1)))
	}
	return ds, nil
}

func typedGraph(rng *rand.Rand, n int) data.Graph {
	type entry struct {
		v, rel int
		feat   [2]int32
	}
	rows := make([][]entry, n)
	has := map[[2]int]bool{}
	add := func(u, v int) {
		if u == v || has[[2]int{u, v}] {
			return
		}
		has[[2]int{u, v}], has[[2]int{v, u}] = true, true
		rel := rng.IntN(NumRelations)
		f := [2]int32{int32(rng.IntN(EdgeFeatVocab[0])), int32(rng.IntN(EdgeFeatVocab[1]))}
		rows[u] = append(rows[u], entry{v, rel, f})
		rows[v] = append(rows[v], entry{u, rel, f})
	}
	for u := 1; u < n; u++ {
		add(u, rng.IntN(u))
	}
	for c := 0; c < n/4; c++ {
		add(rng.IntN(n), rng.IntN(n))
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
		g.Labels = append(g.Labels, int32(rng.IntN(NumLabels)))
		g.NodeCat = append(g.NodeCat, int32(rng.IntN(NodeCatVocab[0])), int32(rng.IntN(NodeCatVocab[1])))
	}
	return g
}

// finishTyped gives ds one 80/10/10 train/validation/test split and
// computes its hop sets up to kmax.
func finishTyped(ds *data.Dataset, kmax int) (*data.Dataset, *data.Hops, error) {
	var s data.Split
	for j := range ds.Graphs {
		switch j % 10 {
		case 0:
			s.Test = append(s.Test, j)
		case 5:
			s.Val = append(s.Val, j)
		default:
			s.Train = append(s.Train, j)
		}
	}
	ds.Splits = []data.Split{s}
	if err := ds.Validate(); err != nil {
		return nil, nil, fmt.Errorf("synth: %w", err)
	}
	hops, err := sp.Compute(context.Background(), ds.Graphs, kmax, false, 1)
	if err != nil {
		return nil, nil, err
	}
	return ds, hops, nil
}

// Relational returns n typed graphs (8..14 nodes) whose regression target
// is, per graph, (1/n)·Σ_u (#label-1 neighbours of u along relation 0 −
// #label-1 neighbours along relation 1): only a relation-aware model can
// compute it. It has one 80/10/10 split and hop sets up to kmax.
func Relational(seed uint64, n, kmax int) (*data.Dataset, *data.Hops, error) {
	ds, err := TypedGraphs(seed, n, 8, 14)
	if err != nil {
		return nil, nil, err
	}
	ds.Name, ds.Task, ds.NumTargets = "relational", data.TaskRegression, 1
	for j := range ds.Graphs {
		g := &ds.Graphs[j]
		var s float64
		for u := 0; u < g.N; u++ {
			for p := g.Adj.Ptr[u]; p < g.Adj.Ptr[u+1]; p++ {
				if g.Labels[g.Adj.Idx[p]] != 1 {
					continue
				}
				switch g.EdgeType[p] {
				case 0:
					s++
				case 1:
					s--
				}
			}
		}
		g.Target = []float64{s / float64(g.N)}
	}
	return finishTyped(ds, kmax)
}

// EdgeFeatures returns n typed graphs (8..14 nodes) without labels or
// relations and two binary tasks over the categorical features, each
// label missing (NaN) with probability 1/4: task 1, more edges with
// feature 0 equal to 2 than to 0; task 2, an edge with feature 1 equal to
// 1 between two nodes whose feature 1 is 2. It has one 80/10/10 split
// and hop sets up to kmax.
func EdgeFeatures(seed uint64, n, kmax int) (*data.Dataset, *data.Hops, error) {
	ds, err := TypedGraphs(seed, n, 8, 14)
	if err != nil {
		return nil, nil, err
	}
	rng := rand.New(rand.NewPCG(seed, 0x3d9e))
	ds.Name, ds.Task, ds.NumTargets = "edge-features", data.TaskBinary, 2
	ds.NumLabels, ds.NumEdgeTypes = 0, 0
	for j := range ds.Graphs {
		g := &ds.Graphs[j]
		g.Labels, g.EdgeType = nil, nil
		var two, zero, hit float64
		for u := 0; u < g.N; u++ {
			for p := g.Adj.Ptr[u]; p < g.Adj.Ptr[u+1]; p++ {
				f := g.EdgeFeat[2*p : 2*p+2]
				switch f[0] {
				case 2:
					two++
				case 0:
					zero++
				}
				v := g.Adj.Idx[p]
				if f[1] == 1 && g.NodeCat[2*u+1] == 2 && g.NodeCat[2*v+1] == 2 {
					hit = 1
				}
			}
		}
		y := []float64{0, hit}
		if two > zero {
			y[0] = 1
		}
		for i := range y {
			if rng.IntN(4) == 0 {
				y[i] = math.NaN()
			}
		}
		g.Target = y
	}
	return finishTyped(ds, kmax)
}
