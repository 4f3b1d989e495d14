package data

import (
	"fmt"
	"math"
)

// Batch is many small graphs joined into one block-diagonal graph: node
// indices of graph j are GraphPtr[j]..GraphPtr[j+1]-1.
//
// Besides the node inputs and the targets, a batch carries the typed
// neighbourhoods a model aggregates over (see Neighbourhoods): the hop sets
// N_1..N_k, optionally N_∞ (nodes in other components of the same graph),
// and the direct edges split by relation (edge type). Every neighbourhood
// is a block-diagonal CSR over the batch's nodes. Per-edge data (EdgeType,
// EdgeFeat) is parallel to Adj.Idx.
type Batch struct {
	// N is the total number of nodes.
	N int
	// NumGraphs is the number of graphs in the batch.
	NumGraphs int
	// GraphPtr holds node offsets per graph, len NumGraphs+1.
	GraphPtr []int32
	// GraphOf is the graph index (0..NumGraphs-1) of every node.
	GraphOf []int32
	// Labels are the categorical node labels (nil if none).
	Labels []int32
	// Attrs are N×AttrDim node attributes (nil if none).
	Attrs []float32
	// AttrDim is the attribute width.
	AttrDim int
	// NodeCat holds N×len(NodeCatVocab) categorical node features,
	// row-major (nil if none); column c lies in 0..NodeCatVocab[c]-1.
	NodeCat []int32
	// NodeCatVocab is the vocabulary size of each NodeCat column.
	NodeCatVocab []int
	// Adj is the block-diagonal adjacency.
	Adj CSR
	// EdgeType, when the dataset has edge types, is parallel to Adj.Idx:
	// the relation 0..NumEdgeTypes-1 of every directed edge entry.
	EdgeType []int32
	// NumEdgeTypes is the number of relations (0: untyped edges).
	NumEdgeTypes int
	// EdgeFeat holds len(Adj.Idx)×len(EdgeFeatVocab) categorical edge
	// features, row-major and parallel to Adj.Idx (nil if none).
	EdgeFeat []int32
	// EdgeFeatVocab is the vocabulary size of each EdgeFeat column.
	EdgeFeatVocab []int
	// Hop[i-1] is the block-diagonal CSR of N_i for i = 1..len(Hop).
	Hop []CSR
	// HopSymmetric[i-1] says that Hop[i-1] is its own transpose entry for
	// entry (CSR.Symmetric), so that a backward pass may use N_i as N_iᵀ:
	// NewBatchWith sets it when the hop sets' record (Hops.RecordSymmetry)
	// says so of every graph of the batch. False or missing means not
	// known. It describes Hop as NewBatchWith built it: code that replaces
	// or edits a hop set must clear it.
	HopSymmetric []bool
	// Unreachable, when asked for (BatchOptions.Unreachable), is the
	// block-diagonal CSR of N_∞: the nodes of the same graph in another
	// connected component. Graphs never see each other's nodes.
	Unreachable *CSR
	// UnreachableSymmetric is HopSymmetric for Unreachable
	// (Hops.UnreachableSymmetric).
	UnreachableSymmetric bool
	// Rel[j] holds the direct edges of relation j (Adj restricted to
	// EdgeType == j), j = 0..NumEdgeTypes-1; nil for untyped edges.
	Rel []CSR
	// Task is the dataset's task (classification, regression or binary).
	Task Task
	// Y holds the class of every graph (classification).
	Y []int32
	// Target holds NumGraphs×NumTargets targets: regression values, or
	// binary labels 0/1 (TaskBinary), NaN for a missing one in both.
	Target []float64
	// NumTargets is the number of targets (regression) or tasks (binary).
	NumTargets int
}

// NbhdKind is the type of a neighbourhood of a batch.
type NbhdKind int

const (
	// NbhdHop is the shortest-path hop set N_i, i ≥ 1 (N_1 = the adjacency).
	NbhdHop NbhdKind = iota
	// NbhdUnreachable is N_∞: the nodes of the same graph at distance ∞.
	NbhdUnreachable
	// NbhdRelation is the set of direct neighbours along one relation r_j.
	NbhdRelation
)

// String names the kind as messages print it.
func (k NbhdKind) String() string {
	switch k {
	case NbhdHop:
		return "hop"
	case NbhdUnreachable:
		return "unreachable"
	case NbhdRelation:
		return "relation"
	}
	return fmt.Sprintf("NbhdKind(%d)", int(k))
}

// Neighbourhood is one typed neighbourhood of a batch: for Kind NbhdHop,
// N_Index (Index = i ≥ 1); for NbhdRelation, the edges of relation Index
// (0-based); for NbhdUnreachable, N_∞ (Index 0).
type Neighbourhood struct {
	Kind  NbhdKind
	Index int
	Set   CSR
}

// Name is the neighbourhood as the paper writes it: N_3, N_∞, r_2.
func (nb Neighbourhood) Name() string {
	switch nb.Kind {
	case NbhdHop:
		return fmt.Sprintf("N_%d", nb.Index)
	case NbhdUnreachable:
		return "N_∞"
	case NbhdRelation:
		return fmt.Sprintf("r_%d", nb.Index+1)
	}
	return nb.Kind.String()
}

// Neighbourhoods returns the typed list of the batch's neighbourhoods: the
// hop sets N_1..N_k in order, then N_∞ when present, then the relations
// r_1..r_R. The sets share storage with the batch.
func (b *Batch) Neighbourhoods() []Neighbourhood {
	out := make([]Neighbourhood, 0, len(b.Hop)+1+len(b.Rel))
	for i, h := range b.Hop {
		out = append(out, Neighbourhood{Kind: NbhdHop, Index: i + 1, Set: h})
	}
	if b.Unreachable != nil {
		out = append(out, Neighbourhood{Kind: NbhdUnreachable, Set: *b.Unreachable})
	}
	for j, r := range b.Rel {
		out = append(out, Neighbourhood{Kind: NbhdRelation, Index: j, Set: r})
	}
	return out
}

// BatchOptions selects the neighbourhoods NewBatchWith builds.
type BatchOptions struct {
	// K is the number of hop sets N_1..N_K (0: none).
	K int
	// Unreachable asks for N_∞, which the hop sets must have kept.
	Unreachable bool
}

// NewBatch joins the graphs ds.Graphs[idx[0]], ds.Graphs[idx[1]], ... (in
// that order) into one block-diagonal batch carrying the hop sets N_1..N_k;
// it is NewBatchWith with BatchOptions{K: k}.
func NewBatch(ds *Dataset, hops *Hops, idx []int, k int) (*Batch, error) {
	return NewBatchWith(ds, hops, idx, BatchOptions{K: k})
}

// NewBatchWith joins the graphs ds.Graphs[idx[0]], ds.Graphs[idx[1]], ...
// (in that order) into one block-diagonal batch with the neighbourhoods opt
// asks for, plus the relations when the dataset has edge types, and every
// node and edge feature and target the dataset has. hops may be nil only
// when neither hop sets nor N_∞ are asked for. It fails when opt.K exceeds
// hops.KMax, when N_∞ is asked for but was not kept, when an index is out
// of range, or when a graph's stored arrays are inconsistent with its node
// count or with the dataset's vocabularies.
func NewBatchWith(ds *Dataset, hops *Hops, idx []int, opt BatchOptions) (*Batch, error) {
	if err := checkBatchArgs(ds, hops, opt); err != nil {
		return nil, err
	}
	sz, err := sizeBatch(ds, hops, idx, opt)
	if err != nil {
		return nil, err
	}
	b := allocBatch(ds, len(idx), opt, sz)
	off := int32(0)
	for j, gi := range idx {
		b.GraphPtr[j] = off
		if err := b.appendGraph(ds, hops, gi, j, off); err != nil {
			return nil, err
		}
		off += int32(ds.Graphs[gi].N)
	}
	b.GraphPtr[len(idx)] = off
	for i := range b.HopSymmetric {
		b.HopSymmetric[i] = hops.Symmetric(i+1, idx)
	}
	b.UnreachableSymmetric = b.Unreachable != nil && hops.UnreachableSymmetric(idx)
	return b, nil
}

// checkBatchArgs checks what NewBatchWith asks for against ds and hops.
func checkBatchArgs(ds *Dataset, hops *Hops, opt BatchOptions) error {
	if ds == nil {
		return fmt.Errorf("building batch: nil dataset")
	}
	k := opt.K
	if k < 0 {
		return fmt.Errorf("building batch: negative hop count k=%d", k)
	}
	if k > 0 || opt.Unreachable {
		if hops == nil {
			return fmt.Errorf("building batch: k=%d hops (unreachable %v) requested but no hop sets given", k, opt.Unreachable)
		}
		if k > hops.KMax {
			return fmt.Errorf("building batch: k=%d exceeds the precomputed kmax=%d", k, hops.KMax)
		}
		if hops.NumGraphs() != len(ds.Graphs) {
			return fmt.Errorf("building batch: hop sets cover %d graphs, dataset %q has %d", hops.NumGraphs(), ds.Name, len(ds.Graphs))
		}
	}
	if ds.NumEdgeTypes < 0 {
		return fmt.Errorf("building batch: dataset %q has %d edge types", ds.Name, ds.NumEdgeTypes)
	}
	return nil
}

// batchSizes are the sizes of a batch's arrays: nodes, and the entries of
// the adjacency, of every hop set, of N_∞ and of every relation.
type batchSizes struct {
	n, nnzAdj, nnzUnr int
	nnzHop, nnzRel    []int
}

// sizeBatch is NewBatchWith's first pass: it checks every graph of idx
// (and its hop sets) and sums the sizes, so that every slice of the batch
// is allocated exactly once. Of packed hop sets it reads the stored entry
// counts and node count; their rows are checked as appendGraph decodes
// them.
func sizeBatch(ds *Dataset, hops *Hops, idx []int, opt BatchOptions) (batchSizes, error) {
	k := opt.K
	sz := batchSizes{nnzHop: make([]int, k), nnzRel: make([]int, ds.NumEdgeTypes)}
	for _, gi := range idx {
		if gi < 0 || gi >= len(ds.Graphs) {
			return sz, fmt.Errorf("building batch: graph index %d out of range [0,%d)", gi, len(ds.Graphs))
		}
		g := &ds.Graphs[gi]
		if err := checkGraph(g, ds, gi); err != nil {
			return sz, err
		}
		sz.n += g.N
		sz.nnzAdj += len(g.Adj.Idx)
		for _, t := range g.EdgeType {
			sz.nnzRel[t]++
		}
		if (k > 0 || opt.Unreachable) && hops.packed != nil {
			if err := sizePacked(&sz, hops.packed, gi, g.N, opt); err != nil {
				return sz, err
			}
		} else if k > 0 || opt.Unreachable {
			gh := &hops.Graphs[gi]
			if len(gh.Hop) < k {
				return sz, fmt.Errorf("building batch: graph %d has %d hop sets, need %d", gi, len(gh.Hop), k)
			}
			for i := 0; i < k; i++ {
				if err := checkRows(gh.Hop[i], g.N); err != nil {
					return sz, fmt.Errorf("building batch: graph %d hop set N_%d: %w", gi, i+1, err)
				}
				sz.nnzHop[i] += len(gh.Hop[i].Idx)
			}
			if opt.Unreachable {
				if gh.Unreachable == nil {
					return sz, fmt.Errorf("building batch: graph %d has no N_∞ (unreachable pairs were not kept; set the dataset's unreachable: true)", gi)
				}
				if err := checkRows(*gh.Unreachable, g.N); err != nil {
					return sz, fmt.Errorf("building batch: graph %d N_∞: %w", gi, err)
				}
				sz.nnzUnr += len(gh.Unreachable.Idx)
			}
		}
	}
	if sz.n > math.MaxInt32 || sz.nnzAdj > math.MaxInt32 {
		return sz, fmt.Errorf("building batch: %d nodes and %d edge entries exceed the int32 index range", sz.n, sz.nnzAdj)
	}
	return sz, nil
}

// sizePacked adds the entries of graph gi's packed hop sets N_1..N_K (and
// N_∞ when asked for) to sz, checking that they are there and that the
// graph has n nodes.
func sizePacked(sz *batchSizes, p *packedHops, gi, n int, opt BatchOptions) error {
	if int(p.n[gi]) != n {
		return fmt.Errorf("building batch: graph %d has hop sets over %d nodes, the graph %d", gi, p.n[gi], n)
	}
	for i := 1; i <= opt.K; i++ {
		nnz := p.nnz[p.hop(gi, i)]
		if nnz < 0 {
			return fmt.Errorf("building batch: graph %d has %d hop sets, need %d", gi, i-1, opt.K)
		}
		sz.nnzHop[i-1] += int(nnz)
	}
	if opt.Unreachable {
		u := p.unr(gi)
		if u < 0 {
			return fmt.Errorf("building batch: graph %d has no N_∞ (unreachable pairs were not kept; set the dataset's unreachable: true)", gi)
		}
		sz.nnzUnr += int(p.nnz[u])
	}
	return nil
}

// allocBatch returns the empty batch of graphs graphs with the sizes sz:
// every array the dataset and opt call for, at its final capacity.
func allocBatch(ds *Dataset, graphs int, opt BatchOptions, sz batchSizes) *Batch {
	n, nnzAdj := sz.n, sz.nnzAdj
	b := &Batch{
		N:            n,
		NumGraphs:    graphs,
		GraphPtr:     make([]int32, graphs+1),
		GraphOf:      make([]int32, n),
		AttrDim:      ds.AttrDim,
		Adj:          CSR{Ptr: make([]int32, n+1), Idx: make([]int32, 0, nnzAdj)},
		Hop:          make([]CSR, opt.K),
		HopSymmetric: make([]bool, opt.K),
		NumEdgeTypes: ds.NumEdgeTypes,
		Task:         ds.TaskOf(),
		NumTargets:   ds.NumTargets,
	}
	if ds.NumLabels > 0 {
		b.Labels = make([]int32, 0, n)
	}
	if ds.AttrDim > 0 {
		b.Attrs = make([]float32, 0, n*ds.AttrDim)
	}
	if w := len(ds.NodeCatVocab); w > 0 {
		b.NodeCat = make([]int32, 0, n*w)
		b.NodeCatVocab = append([]int(nil), ds.NodeCatVocab...)
	}
	if ds.NumEdgeTypes > 0 {
		b.EdgeType = make([]int32, 0, nnzAdj)
		b.Rel = make([]CSR, ds.NumEdgeTypes)
		for j := range b.Rel {
			b.Rel[j] = CSR{Ptr: make([]int32, n+1), Idx: make([]int32, 0, sz.nnzRel[j])}
		}
	}
	if w := len(ds.EdgeFeatVocab); w > 0 {
		b.EdgeFeat = make([]int32, 0, nnzAdj*w)
		b.EdgeFeatVocab = append([]int(nil), ds.EdgeFeatVocab...)
	}
	if ds.NumClasses > 0 {
		b.Y = make([]int32, graphs)
	}
	if ds.NumTargets > 0 {
		b.Target = make([]float64, 0, graphs*ds.NumTargets)
	}
	for i := range b.Hop {
		b.Hop[i] = CSR{Ptr: make([]int32, n+1), Idx: make([]int32, 0, sz.nnzHop[i])}
	}
	if opt.Unreachable {
		b.Unreachable = &CSR{Ptr: make([]int32, n+1), Idx: make([]int32, 0, sz.nnzUnr)}
	}
	return b
}

// appendGraph appends graph gi of ds, the j-th of the batch, whose nodes
// start at off: its nodes, neighbourhoods (shifted by off), relations,
// features and target. Its hop sets' entries are checked here, as they
// are copied (sizeBatch checked their rows): an error leaves b partly
// filled. Packed hop sets are decoded straight into the batch's arrays.
func (b *Batch) appendGraph(ds *Dataset, hops *Hops, gi, j int, off int32) error {
	g := &ds.Graphs[gi]
	for u := int32(0); u < int32(g.N); u++ {
		b.GraphOf[off+u] = int32(j)
	}
	var err error
	if b.Adj.Idx, err = appendShifted(b.Adj.Idx, b.Adj.Ptr[off:], g.Adj, g.N, off); err != nil {
		return fmt.Errorf("building batch: graph %d adjacency: %w", gi, err)
	}
	if len(b.Hop) > 0 || b.Unreachable != nil {
		if hops.packed != nil {
			err = b.appendPacked(hops.packed, gi, g.N, off)
		} else {
			err = b.appendHops(hops, gi, g.N, off)
		}
		if err != nil {
			return err
		}
	}
	if b.Rel != nil {
		b.EdgeType = append(b.EdgeType, g.EdgeType...)
		appendRelations(b.Rel, g, off)
	}
	if b.Labels != nil {
		b.Labels = append(b.Labels, g.Labels...)
	}
	if b.Attrs != nil {
		b.Attrs = append(b.Attrs, g.Attrs...)
	}
	if b.NodeCat != nil {
		b.NodeCat = append(b.NodeCat, g.NodeCat...)
	}
	if b.EdgeFeat != nil {
		b.EdgeFeat = append(b.EdgeFeat, g.EdgeFeat...)
	}
	if b.Y != nil {
		b.Y[j] = int32(g.Y)
	}
	if b.Target != nil {
		b.Target = append(b.Target, g.Target...)
	}
	return nil
}

// appendHops appends the decoded hop sets of graph gi (n nodes, the
// first at off) that b holds, shifted by off.
func (b *Batch) appendHops(hops *Hops, gi, n int, off int32) error {
	var err error
	for i := range b.Hop {
		if b.Hop[i].Idx, err = appendShifted(b.Hop[i].Idx, b.Hop[i].Ptr[off:], hops.Graphs[gi].Hop[i], n, off); err != nil {
			return fmt.Errorf("building batch: graph %d hop set N_%d: %w", gi, i+1, err)
		}
	}
	if b.Unreachable != nil {
		if b.Unreachable.Idx, err = appendShifted(b.Unreachable.Idx, b.Unreachable.Ptr[off:], *hops.Graphs[gi].Unreachable, n, off); err != nil {
			return fmt.Errorf("building batch: graph %d N_∞: %w", gi, err)
		}
	}
	return nil
}

// appendPacked is appendHops for packed hop sets (sizePacked checked that
// they are there, over n nodes): it decodes them into b's arrays.
func (b *Batch) appendPacked(p *packedHops, gi, n int, off int32) error {
	var err error
	for i := range b.Hop {
		rows, nnz := p.set(p.hop(gi, i+1))
		if b.Hop[i].Idx, err = unpackRows(b.Hop[i].Idx, b.Hop[i].Ptr[off:], rows, n, nnz, off); err != nil {
			return fmt.Errorf("building batch: graph %d hop set N_%d: %w", gi, i+1, err)
		}
	}
	if b.Unreachable != nil {
		rows, nnz := p.set(p.unr(gi))
		if b.Unreachable.Idx, err = unpackRows(b.Unreachable.Idx, b.Unreachable.Ptr[off:], rows, n, nnz, off); err != nil {
			return fmt.Errorf("building batch: graph %d N_∞: %w", gi, err)
		}
	}
	return nil
}

// appendShifted appends the rows of c, a CSR of n rows whose row
// pointers are checked, shifted by off, to idx and writes the running row
// ends into ptr[1:len(c)+1] (ptr[0] already holds the start). An entry
// outside [0,n) is CheckCSR's error, found as the entries are copied.
func appendShifted(idx []int32, ptr []int32, c CSR, n int, off int32) ([]int32, error) {
	base := int32(len(idx))
	for u := 0; u < c.Len(); u++ {
		ptr[u+1] = base + c.Ptr[u+1]
	}
	dst := idx[len(idx) : len(idx)+len(c.Idx)]
	var m0, m1 uint32
	i := 0
	for ; i+2 <= len(c.Idx); i += 2 {
		v0, v1 := c.Idx[i], c.Idx[i+1]
		dst[i], dst[i+1] = v0+off, v1+off
		m0, m1 = max(m0, uint32(v0)), max(m1, uint32(v1))
	}
	for ; i < len(c.Idx); i++ {
		dst[i] = c.Idx[i] + off
		m0 = max(m0, uint32(c.Idx[i]))
	}
	if len(c.Idx) > 0 && max(m0, m1) >= uint32(n) {
		return idx, entryError(c.Idx, n)
	}
	return idx[:len(idx)+len(c.Idx)], nil
}

// appendRelations appends the edges of g, shifted by off, to the relation
// CSRs rel by their type (g's rows start at row off of every rel[j]).
func appendRelations(rel []CSR, g *Graph, off int32) {
	for u := 0; u < g.N; u++ {
		for p := g.Adj.Ptr[u]; p < g.Adj.Ptr[u+1]; p++ {
			t := g.EdgeType[p]
			rel[t].Idx = append(rel[t].Idx, g.Adj.Idx[p]+off)
		}
		for j := range rel {
			rel[j].Ptr[int(off)+u+1] = int32(len(rel[j].Idx))
		}
	}
}

// checkGraph verifies that the arrays of graph gi agree with its node count
// and with the dataset's vocabularies, so a bad file fails here, not in a
// kernel; of its adjacency, the rows (appendGraph checks the entries as
// it copies them).
func checkGraph(g *Graph, ds *Dataset, gi int) error {
	if err := checkRows(g.Adj, g.N); err != nil {
		return fmt.Errorf("building batch: graph %d adjacency: %w", gi, err)
	}
	if ds.NumLabels > 0 {
		if len(g.Labels) != g.N {
			return fmt.Errorf("building batch: graph %d has %d labels, %d nodes", gi, len(g.Labels), g.N)
		}
		for u, l := range g.Labels {
			if l < 0 || int(l) >= ds.NumLabels {
				return fmt.Errorf("building batch: graph %d node %d has label %d outside [0,%d)", gi, u, l, ds.NumLabels)
			}
		}
	}
	if ds.AttrDim > 0 && len(g.Attrs) != g.N*ds.AttrDim {
		return fmt.Errorf("building batch: graph %d has %d attribute values, want %d×%d", gi, len(g.Attrs), g.N, ds.AttrDim)
	}
	if err := checkCategorical(g.NodeCat, g.N, ds.NodeCatVocab); err != nil {
		return fmt.Errorf("building batch: graph %d categorical node features: %w", gi, err)
	}
	e := len(g.Adj.Idx)
	if ds.NumEdgeTypes > 0 {
		if len(g.EdgeType) != e {
			return fmt.Errorf("building batch: graph %d has %d edge types for %d edge entries (dataset %q has %d relations)", gi, len(g.EdgeType), e, ds.Name, ds.NumEdgeTypes)
		}
		for p, t := range g.EdgeType {
			if t < 0 || int(t) >= ds.NumEdgeTypes {
				return fmt.Errorf("building batch: graph %d edge entry %d has type %d outside [0,%d)", gi, p, t, ds.NumEdgeTypes)
			}
		}
	}
	if err := checkCategorical(g.EdgeFeat, e, ds.EdgeFeatVocab); err != nil {
		return fmt.Errorf("building batch: graph %d edge features: %w", gi, err)
	}
	if ds.NumClasses > 0 && (g.Y < 0 || g.Y >= ds.NumClasses) {
		return fmt.Errorf("building batch: graph %d has class %d outside [0,%d)", gi, g.Y, ds.NumClasses)
	}
	if ds.NumTargets > 0 {
		if len(g.Target) != ds.NumTargets {
			return fmt.Errorf("building batch: graph %d has %d targets, want %d", gi, len(g.Target), ds.NumTargets)
		}
		binary := ds.TaskOf() == TaskBinary
		for t, y := range g.Target {
			switch {
			case binary && !math.IsNaN(y) && y != 0 && y != 1:
				return fmt.Errorf("building batch: graph %d task %d has label %v, want 0, 1 or NaN (missing)", gi, t, y)
			case !binary && math.IsInf(y, 0):
				return fmt.Errorf("building batch: graph %d target %d is %v, want a finite value or NaN (missing)", gi, t, y)
			}
		}
	}
	return nil
}

// checkCategorical verifies that x holds rows×len(vocab) values, column c
// within [0,vocab[c]); x must be nil when vocab is.
func checkCategorical(x []int32, rows int, vocab []int) error {
	w := len(vocab)
	if w == 0 {
		if x != nil {
			return fmt.Errorf("%d values but the dataset declares no feature columns", len(x))
		}
		return nil
	}
	if len(x) != rows*w {
		return fmt.Errorf("%d values, want %d×%d", len(x), rows, w)
	}
	for i, v := range x {
		if c := i % w; v < 0 || int(v) >= vocab[c] {
			return fmt.Errorf("row %d column %d is %d outside [0,%d)", i/w, c, v, vocab[c])
		}
	}
	return nil
}

// CheckCSR verifies that c has n rows, monotone row pointers ending at
// len(c.Idx), and entries in [0,n), so that a bad neighbourhood fails with
// a message and not inside a kernel.
func CheckCSR(c CSR, n int) error {
	if err := checkRows(c, n); err != nil {
		return err
	}
	if hi := maxEntry(c.Idx); len(c.Idx) > 0 && hi >= uint32(n) {
		return entryError(c.Idx, n)
	}
	return nil
}

// checkRows is CheckCSR without the check of the entries.
func checkRows(c CSR, n int) error {
	if c.Len() != n {
		return fmt.Errorf("%d rows and %d entries do not match %d nodes", c.Len(), len(c.Idx), n)
	}
	if n == 0 {
		return nil
	}
	if c.Ptr[0] != 0 || int(c.Ptr[n]) != len(c.Idx) {
		return fmt.Errorf("row pointers span [%d,%d], entries %d", c.Ptr[0], c.Ptr[n], len(c.Idx))
	}
	for u := 0; u < n; u++ {
		if c.Ptr[u+1] < c.Ptr[u] {
			return fmt.Errorf("row pointer decreases at row %d", u)
		}
	}
	return nil
}

// maxEntry returns the largest entry of idx as unsigned (a negative one is
// larger than every valid one), 0 for none: one pass without branches on
// the values, four running maxima.
func maxEntry(idx []int32) uint32 {
	var m0, m1, m2, m3 uint32
	i := 0
	for ; i+4 <= len(idx); i += 4 {
		m0, m1 = max(m0, uint32(idx[i])), max(m1, uint32(idx[i+1]))
		m2, m3 = max(m2, uint32(idx[i+2])), max(m3, uint32(idx[i+3]))
	}
	for ; i < len(idx); i++ {
		m0 = max(m0, uint32(idx[i]))
	}
	return max(m0, m1, m2, m3)
}

// entryError is CheckCSR's error for the first entry of idx outside
// [0,n) (nil if there is none).
func entryError(idx []int32, n int) error {
	for _, v := range idx {
		if v < 0 || int(v) >= n {
			return fmt.Errorf("entry %d outside [0,%d)", v, n)
		}
	}
	return nil
}
