package gat

import (
	"fmt"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/models/cuda"
	"github.com/spn-project/spn/models/rt"
)

// graphData is the per-batch structure the GAT op reads, derived from the
// batch when a compiled graph is pointed at it (Model.Prepare). One value
// per model is shared by all its compiled graphs; only one runs at a time.
type graphData struct {
	// loops is the adjacency with self loops (rows sorted), rev[e] the
	// index of the reverse entry (v,u) of entry e = (u,v).
	loops data.CSR
	rev   []int32
	// n is the number of real nodes.
	n int
	// dev is the same on a device, for the op's device math (nil on the
	// CPU path).
	dev *deviceGraph
}

// deviceGraph is a graphData on a device: the adjacency with self loops
// (ptr, idx) and the reverse entries (rev), views of the run's packed
// copy.
type deviceGraph struct {
	ptr, idx, rev *cuda.Buffer
}

// Pack implements rt.AdjData: it adds gd's adjacency with self loops and
// its reverse entries to pk; after pk's Upload gd.dev points at them on
// the device, and release drops the reference.
func (gd *graphData) Pack(pk *cuda.Pack) (release func(), err error) {
	if len(gd.loops.Ptr) != gd.n+1 || len(gd.rev) != len(gd.loops.Idx) {
		return nil, fmt.Errorf("packing the GAT neighbourhoods: %d row offsets and %d reverse entries for %d nodes and %d entries", len(gd.loops.Ptr), len(gd.rev), gd.n, len(gd.loops.Idx))
	}
	dg := &deviceGraph{}
	cuda.Put(pk, &dg.ptr, gd.loops.Ptr)
	cuda.Put(pk, &dg.idx, gd.loops.Idx)
	cuda.Put(pk, &dg.rev, gd.rev)
	gd.dev = dg
	return func() { gd.dev = nil }, nil
}

// Set implements rt.AdjData: it derives the neighbourhoods with self loops of batch b.
func (gd *graphData) Set(b *data.Batch) error { return gd.setGAT(b.Adj, b.N) }

func (gd *graphData) setGAT(a data.CSR, n int) error {
	gd.n = n
	ptr := rt.Resize(gd.loops.Ptr, n+1)
	idx := gd.loops.Idx[:0]
	ptr[0] = 0
	for u := 0; u < n; u++ {
		row := a.Row(u)
		self := false
		for _, v := range row {
			if !self && v > int32(u) {
				idx = append(idx, int32(u))
				self = true
			}
			if v == int32(u) {
				return fmt.Errorf("adjacency row %d holds a self loop", u)
			}
			idx = append(idx, v)
		}
		if !self {
			idx = append(idx, int32(u))
		}
		ptr[u+1] = int32(len(idx))
	}
	gd.loops = data.CSR{Ptr: ptr, Idx: idx}
	gd.rev = rt.Resize(gd.rev, len(idx))
	for u := 0; u < n; u++ {
		for e := ptr[u]; e < ptr[u+1]; e++ {
			v := idx[e]
			r, ok := rt.FindSorted(idx[ptr[v]:ptr[v+1]], int32(u))
			if !ok {
				return fmt.Errorf("adjacency is not symmetric: edge %d→%d has no reverse", u, v)
			}
			gd.rev[e] = ptr[v] + int32(r)
		}
	}
	return nil
}
