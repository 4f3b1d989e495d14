package gcn

import (
	"fmt"
	"math"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/models/cuda"
	"github.com/spn-project/spn/models/rt"
)

// graphData is the per-batch structure the GCN op reads, derived from the
// batch when a compiled graph is pointed at it (Model.Prepare). One value
// per model is shared by all its compiled graphs; only one runs at a time.
type graphData struct {
	// n is the number of real nodes.
	n int
	// adj is the batch adjacency, w[e] = 1/√((deg_u+1)(deg_v+1)) for
	// entry e = (u,v) of adj, self[u] = 1/(deg_u+1).
	adj  data.CSR
	w    []float32
	self []float32
	// dev is the same on a device, for the op's device math (nil on the
	// CPU path).
	dev *deviceGraph
}

// deviceGraph is a graphData on a device: the adjacency (ptr, idx) and the
// weights (w, self), views of the run's packed copy.
type deviceGraph struct {
	ptr, idx, w, self *cuda.Buffer
}

// Pack implements rt.AdjData: it adds gd's adjacency and weights to pk;
// after pk's Upload gd.dev points at them on the device, and release
// drops the reference.
func (gd *graphData) Pack(pk *cuda.Pack) (release func(), err error) {
	if len(gd.adj.Ptr) != gd.n+1 || len(gd.self) < gd.n || len(gd.w) != len(gd.adj.Idx) {
		return nil, fmt.Errorf("packing the GCN weights: they cover %d nodes and %d entries of an adjacency of %d rows", len(gd.self), len(gd.w), len(gd.adj.Ptr)-1)
	}
	dg := &deviceGraph{}
	cuda.Put(pk, &dg.ptr, gd.adj.Ptr)
	cuda.Put(pk, &dg.idx, gd.adj.Idx)
	cuda.Put(pk, &dg.w, gd.w)
	cuda.Put(pk, &dg.self, gd.self[:gd.n])
	gd.dev = dg
	return func() { gd.dev = nil }, nil
}

// Set implements rt.AdjData: it derives the GCN weights of batch b (whose
// adjacency must be symmetric: the gradient uses Â as its own transpose).
func (gd *graphData) Set(b *data.Batch) error {
	if err := rt.CheckSymmetric(b.Adj); err != nil {
		return err
	}
	gd.n, gd.adj = b.N, b.Adj
	gd.setGCN(b.Adj, b.N)
	return nil
}

func (gd *graphData) setGCN(a data.CSR, n int) {
	gd.w = rt.Resize(gd.w, len(a.Idx))
	gd.self = rt.Resize(gd.self, n)
	for u := 0; u < n; u++ {
		gd.self[u] = float32(1 / float64(a.Ptr[u+1]-a.Ptr[u]+1))
	}
	for u := 0; u < n; u++ {
		du := float64(a.Ptr[u+1] - a.Ptr[u] + 1)
		for e := a.Ptr[u]; e < a.Ptr[u+1]; e++ {
			v := a.Idx[e]
			dv := float64(a.Ptr[v+1] - a.Ptr[v] + 1)
			gd.w[e] = float32(1 / math.Sqrt(du*dv))
		}
	}
}
