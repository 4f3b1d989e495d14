// Package data holds the graph, dataset and batch types that every stage of
// spn shares, and the shortest-path hop sets N_i(u) computed from them.
//
// Sub-packages read and write concrete datasets (TU, h-Proximity, JSONL),
// compute the hop sets and fetch upstream files through the mirror.
package data

import (
	"slices"

	"github.com/spn-project/spn/data/csr"
)

// CSR is a compressed sparse row list of neighbour sets over nodes 0..n-1:
// the set of node u is Idx[Ptr[u]:Ptr[u+1]], sorted ascending. It is
// defined in data/csr so that the kernels can use it without this package.
type CSR = csr.CSR

// Graph is one simple undirected graph with node labels, optional node
// attributes and edge types, and a graph-level target.
type Graph struct {
	// N is the number of nodes.
	N int
	// Adj is the adjacency in CSR form; every undirected edge {u,v} appears
	// as v in Row(u) and u in Row(v); no self loops, no duplicates.
	Adj CSR
	// EdgeType, when not nil, is parallel to Adj.Idx: the type of each
	// directed edge entry (e.g. the bond type of a molecule), 0-based.
	EdgeType []int32
	// EdgeFeat, when not nil, holds len(Adj.Idx)×len(Dataset.EdgeFeatVocab)
	// categorical edge features, row-major and parallel to Adj.Idx (both
	// directions of an undirected edge carry the same values): column c of
	// an entry lies in 0..Dataset.EdgeFeatVocab[c]-1. OGB's 3 bond features.
	EdgeFeat []int32
	// Labels holds one categorical label per node (0..Dataset.NumLabels-1),
	// or is nil when the dataset has none.
	Labels []int32
	// NodeCat, when not nil, holds N×len(Dataset.NodeCatVocab) categorical
	// node features, row-major: column c of node u lies in
	// 0..Dataset.NodeCatVocab[c]-1. OGB's 9 atom features.
	NodeCat []int32
	// Attrs holds N×Dataset.AttrDim real node attributes, row-major, or nil.
	Attrs []float32
	// Y is the class index 0..Dataset.NumClasses-1 for classification.
	Y int
	// Target holds Dataset.NumTargets values, or nil: regression targets
	// (TaskRegression), or binary labels 0/1 (TaskBinary), NaN for a
	// missing one in both.
	Target []float64
}

// NumEdges returns the number of undirected edges.
func (g *Graph) NumEdges() int { return len(g.Adj.Idx) / 2 }

// Split is one fixed split of a dataset into graph indices.
type Split struct {
	Train []int `json:"train"`
	Val   []int `json:"validation"`
	Test  []int `json:"test"`
}

// Dataset is a list of graphs with their feature vocabulary and fixed splits.
type Dataset struct {
	// Name identifies the dataset, e.g. "PROTEINS" or "prox-h3".
	Name string
	// Graphs in file order.
	Graphs []Graph
	// NumLabels is the size of the categorical node-label vocabulary (0 if none).
	NumLabels int
	// AttrDim is the number of real node attributes per node (0 if none).
	AttrDim int
	// NumEdgeTypes is the number of edge types (0 if edges are untyped).
	NumEdgeTypes int
	// NumClasses is the number of graph classes; 0 for regression.
	NumClasses int
	// NumTargets is the number of regression targets or binary tasks; 0 for
	// classification.
	NumTargets int
	// NodeCatVocab is the vocabulary size of each categorical node feature
	// column of Graph.NodeCat (nil if none).
	NodeCatVocab []int
	// EdgeFeatVocab is the vocabulary size of each categorical edge feature
	// column of Graph.EdgeFeat (nil if none).
	EdgeFeatVocab []int
	// Task says what the graph targets are; "" means inferred: see TaskOf.
	Task Task
	// Splits are the dataset's fixed splits (folds), in order.
	Splits []Split
}

// Hops holds, for every graph of a dataset, the shortest-path hop sets
// N_i(u) = {v : dist(u,v) = i} for i = 1..KMax.
//
// They are held either decoded, as int32 CSRs in Graphs, or packed
// (Packed, ReadHopsFilePrefix): in the row coding of the hops file, about
// a quarter of the memory, decoded graph by graph as batches are built.
// NumGraphs, Graph, NewBatchWith and the methods below read both forms.
type Hops struct {
	// KMax is the largest hop distance stored.
	KMax int
	// Graphs is parallel to Dataset.Graphs; nil when the hop sets are
	// packed (read them with Graph).
	Graphs []GraphHops
	// packed holds the packed hop sets (nil when decoded).
	packed *packedHops
	// sym is what RecordSymmetry found (nil before it ran).
	sym *hopSymmetry
}

// hopSymmetry is the record of Hops.RecordSymmetry: asym[i-1] lists,
// ascending, the graphs whose N_i is not its own transpose
// (CSR.Symmetric); nil when every graph's is. asymUnreachable lists those
// whose N_∞ is not (or is not kept).
type hopSymmetry struct {
	asym            [][]int32
	asymUnreachable []int32
}

// RecordSymmetry records, for every hop level i = 1..KMax and for N_∞,
// which graphs' N_i equal their transposes entry for entry
// (CSR.Symmetric: symmetric, rows strictly ascending), so that
// NewBatchWith can tell a batch whose hop set needs no transpose
// (Batch.HopSymmetric, Batch.UnreachableSymmetric). It reads every entry
// once (O(nodes + nnz)) and writes nothing into the hop sets or their
// files: sp.Compute calls it when the sets are made, the hops readers
// record the same graph by graph as they read, and Prefix and Packed keep
// the record. Packed hop sets are decoded one graph at a time. Hop sets
// built by hand without it have no record, and their batches never claim
// symmetry. The hop sets must not change afterwards, nor may it run while
// batches are built.
func (h *Hops) RecordSymmetry() {
	r := newSymRecorder(h.KMax)
	for g := range h.NumGraphs() {
		gh := h.Graph(g)
		r.add(g, &gh)
	}
	h.sym = r.s
}

// symRecorder builds the record of RecordSymmetry graph by graph, so that
// the hops readers record it while they read.
type symRecorder struct {
	s       *hopSymmetry
	kmax    int
	scratch []int32
}

func newSymRecorder(kmax int) *symRecorder {
	return &symRecorder{s: &hopSymmetry{asym: make([][]int32, kmax)}, kmax: kmax}
}

// add records the symmetry of the hop sets gh of graph g: N_1..N_kmax (a
// set beyond len(gh.Hop) is not symmetric) and N_∞ (not kept: not
// symmetric). Graphs must be added in ascending order.
func (r *symRecorder) add(g int, gh *GraphHops) {
	for i := 0; i < r.kmax; i++ {
		if i >= len(gh.Hop) || !r.symmetric(&gh.Hop[i]) {
			r.s.asym[i] = append(r.s.asym[i], int32(g))
		}
	}
	if !r.symmetric(gh.Unreachable) {
		r.s.asymUnreachable = append(r.s.asymUnreachable, int32(g))
	}
}

func (r *symRecorder) symmetric(c *CSR) bool {
	if c == nil {
		return false
	}
	if len(r.scratch) < c.Len() {
		r.scratch = make([]int32, c.Len())
	}
	return c.Symmetric(r.scratch)
}

// Symmetric reports whether the record of RecordSymmetry says that N_i
// (1 ≤ i ≤ KMax) of every graph of idx (indices into Graphs) is its own
// transpose; false without a record.
func (h *Hops) Symmetric(i int, idx []int) bool {
	if h == nil || h.sym == nil || i < 1 || i > len(h.sym.asym) {
		return false
	}
	return noneOf(h.sym.asym[i-1], idx)
}

// UnreachableSymmetric is Symmetric for N_∞: whether the record says that
// every graph of idx keeps an N_∞ that is its own transpose.
func (h *Hops) UnreachableSymmetric(idx []int) bool {
	return h != nil && h.sym != nil && noneOf(h.sym.asymUnreachable, idx)
}

// noneOf reports whether none of idx is in asym (ascending).
func noneOf(asym []int32, idx []int) bool {
	if len(asym) == 0 {
		return true
	}
	for _, g := range idx {
		if _, found := slices.BinarySearch(asym, int32(g)); found {
			return false
		}
	}
	return true
}

// KeptUnreachable reports whether every graph of h has its N_∞
// (Compute's keepUnreachable, dataset.unreachable).
func (h *Hops) KeptUnreachable() bool {
	if p := h.packed; p != nil {
		for g := range p.numGraphs() {
			if p.unr(g) < 0 {
				return false
			}
		}
		return true
	}
	for _, g := range h.Graphs {
		if g.Unreachable == nil {
			return false
		}
	}
	return true
}

// Prefix returns hop sets holding only N_1..N_k of h (and N_∞ where kept),
// sharing the CSRs' arrays with h but not the per-graph slices of them: a
// model that reads k < KMax hop sets keeps only those alive once h itself
// is dropped. Packed hop sets share all of h's packed data (the sets
// beyond k stay in memory; ReadHopsFilePrefix reads only those asked
// for). k ≥ KMax returns h.
func (h *Hops) Prefix(k int) *Hops {
	if k >= h.KMax {
		return h
	}
	k = max(k, 0)
	var p *Hops
	if h.packed != nil {
		p = &Hops{KMax: k, packed: h.packed}
	} else {
		p = &Hops{KMax: k, Graphs: make([]GraphHops, len(h.Graphs))}
		for i, gh := range h.Graphs {
			p.Graphs[i] = GraphHops{Hop: slices.Clone(gh.Hop[:k]), Unreachable: gh.Unreachable}
		}
	}
	if h.sym != nil {
		p.sym = &hopSymmetry{asym: h.sym.asym[:k], asymUnreachable: h.sym.asymUnreachable}
	}
	return p
}

// GraphHops holds the hop sets of one graph.
type GraphHops struct {
	// Hop[i-1] is the CSR of N_i(u) over the graph's nodes, i = 1..KMax.
	Hop []CSR
	// Unreachable, when kept, lists N_∞(u): nodes in other components.
	Unreachable *CSR
}

// Task is the kind of graph-level prediction a dataset asks for.
type Task string

const (
	// TaskClassification: one class Graph.Y in 0..NumClasses-1.
	TaskClassification Task = "classification"
	// TaskRegression: NumTargets real values in Graph.Target, NaN for a
	// missing one (masked as OGB masks multi-task regression).
	TaskRegression Task = "regression"
	// TaskBinary: NumTargets binary tasks in Graph.Target, each 0, 1 or NaN
	// (missing), as OGB's MoleculeNet classification sets.
	TaskBinary Task = "binary"
)

// TaskOf returns ds.Task, or, when it is empty, the task its sizes imply:
// classification when NumClasses > 0, regression otherwise.
func (ds *Dataset) TaskOf() Task {
	if ds.Task != "" {
		return ds.Task
	}
	if ds.NumClasses > 0 {
		return TaskClassification
	}
	return TaskRegression
}
