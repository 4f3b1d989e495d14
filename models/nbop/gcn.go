package nbop

import (
	"fmt"
	"math"
	"slices"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/models/cuda"
	"github.com/spn-project/spn/models/cuda/engine"
	"github.com/spn-project/spn/models/kernels"
	"github.com/spn-project/spn/models/op"
)

// GCNData is the normalised adjacency Â = D̂^-1/2 (A+I) D̂^-1/2 of one
// batch's symmetric node set A (the adjacency for model kind gcn, a hop
// set N_k for DRew's GCN map), D̂ the degrees in A plus one: the weight
// W[e] = 1/√((deg_u+1)(deg_v+1)) of entry e = (u,v) of A and the self
// weight Self[u] = 1/(deg_u+1). One value per model is shared by all its
// compiled graphs; only one runs at a time.
type GCNData struct {
	// N is the number of real nodes, A the node set.
	N int
	A data.CSR
	// W and Self are Â's entries.
	W, Self []float32
	// dev is the same on a device, for the op's device math (nil on the
	// CPU path).
	dev *gcnDevice
}

// gcnDevice is a GCNData on a device: the node set (ptr, idx) and the
// weights (w, self), views of the run's packed copy.
type gcnDevice struct {
	ptr, idx, w, self *cuda.Buffer
}

// Set derives Â of the n-node set a, which must be symmetric: the
// gradient uses Â as its own transpose.
func (gd *GCNData) Set(a data.CSR, n int) error {
	if len(a.Ptr) != n+1 {
		return fmt.Errorf("GCN weights: a node set of %d rows for %d nodes", len(a.Ptr)-1, n)
	}
	if !a.Symmetric(nil) {
		return fmt.Errorf("GCN weights: the node set is not symmetric (an entry u→v without v→u, or rows not ascending)")
	}
	gd.N, gd.A = n, a
	gd.W = slices.Grow(gd.W[:0], len(a.Idx))[:len(a.Idx)]
	gd.Self = slices.Grow(gd.Self[:0], n)[:n]
	for u := 0; u < n; u++ {
		gd.Self[u] = float32(1 / float64(a.Ptr[u+1]-a.Ptr[u]+1))
	}
	for u := 0; u < n; u++ {
		du := float64(a.Ptr[u+1] - a.Ptr[u] + 1)
		for e := a.Ptr[u]; e < a.Ptr[u+1]; e++ {
			v := a.Idx[e]
			dv := float64(a.Ptr[v+1] - a.Ptr[v] + 1)
			gd.W[e] = float32(1 / math.Sqrt(du*dv))
		}
	}
	return nil
}

// Pack adds gd's node set and weights to pk; after pk's Upload the op's
// device math reads them, and release drops the reference.
func (gd *GCNData) Pack(pk *cuda.Pack) (release func(), err error) {
	if len(gd.A.Ptr) != gd.N+1 || len(gd.Self) < gd.N || len(gd.W) != len(gd.A.Idx) {
		return nil, fmt.Errorf("packing the GCN weights: they cover %d nodes and %d entries of a node set of %d rows", len(gd.Self), len(gd.W), len(gd.A.Ptr)-1)
	}
	dg := &gcnDevice{}
	cuda.Put(pk, &dg.ptr, gd.A.Ptr)
	cuda.Put(pk, &dg.idx, gd.A.Idx)
	cuda.Put(pk, &dg.w, gd.W)
	cuda.Put(pk, &dg.self, gd.Self[:gd.N])
	gd.dev = dg
	return func() { gd.dev = nil }, nil
}

// GCN is the GCN propagation y = Â·x (Kipf & Welling; PyG's GCNConv
// without its linear map) for an input x of N×W (N the padded rows),
// over the real nodes of D. Â is symmetric, so the gradient
// dx = Âᵀ·dy = Â·dy is the same propagation. The padding rows of y are
// zero. Its tests are models/gcn's (they need the runtime, which sits
// above this package).
type GCN struct {
	ID   string
	Be   kernels.Backend
	D    *GCNData
	N, W int
}

// Sig implements op.Op.
func (o GCN) Sig() op.Sig { return op.Sig{ID: o.ID, In: [][]int{{o.N, o.W}}, Out: []int{o.N, o.W}} }

// Forward implements op.Op.
func (o GCN) Forward(in [][]float32, y []float32) error { return o.propagate(y, in[0]) }

// Backward implements op.Op.
func (o GCN) Backward(_ [][]float32, _, dy []float32, dIn [][]float32) error {
	return o.propagate(dIn[0], dy)
}

// check reports weights that do not fit the op's rows.
func (o GCN) check() error {
	gd := o.D
	if gd.N > o.N || len(gd.Self) < gd.N || len(gd.W) != len(gd.A.Idx) || len(gd.A.Ptr) != gd.N+1 {
		return fmt.Errorf("%s: GCN weights cover %d nodes and %d entries, the op %d rows", o.ID, len(gd.Self), len(gd.W), o.N)
	}
	return nil
}

// propagate sets y = Â·x on the real rows and zeroes the padding.
func (o GCN) propagate(y, x []float32) error {
	if err := o.check(); err != nil {
		return err
	}
	n, d, gd := o.D.N, o.W, o.D
	clear(y[n*d:])
	a := gd.A
	o.Be.ForEachChunk(n, func(_, lo, hi int) {
		for u := lo; u < hi; u++ {
			yu := y[u*d : (u+1)*d]
			s := gd.Self[u]
			for j, v := range x[u*d : (u+1)*d] {
				yu[j] = s * v
			}
			for e := a.Ptr[u]; e < a.Ptr[u+1]; e++ {
				w, xv := gd.W[e], x[int(a.Idx[e])*d:int(a.Idx[e]+1)*d]
				for j, v := range xv {
					yu[j] += w * v
				}
			}
		}
	})
	return nil
}

// ZeroOut implements op.ZeroOut: DeviceForward writes the real rows.
func (GCN) ZeroOut() {}

// DeviceForward implements op.DeviceOp: y = Â·x by rows
// (spn_gcn_propagate, the CPU's bits), the padding rows of the zeroed y
// left zero (op.ZeroOut).
func (o GCN) DeviceForward(e *engine.Engine, in []*cuda.Buffer, y *cuda.Buffer) error {
	if err := o.deviceCheck(); err != nil {
		return err
	}
	return o.devicePropagate(e, y, in[0])
}

// DeviceBackward implements op.DeviceOp: dx = Â·dy (spn_gcn_propagate),
// the padding rows keeping the adaptor's zeros.
func (o GCN) DeviceBackward(e *engine.Engine, _ []*cuda.Buffer, _, dy *cuda.Buffer, dIn []*cuda.Buffer) error {
	if err := o.deviceCheck(); err != nil {
		return err
	}
	return o.devicePropagate(e, dIn[0], dy)
}

// deviceCheck reports weights that are not on the device or do not fit
// the op's rows.
func (o GCN) deviceCheck() error {
	if o.D.dev == nil {
		return fmt.Errorf("%s: the GCN weights are not on the device", o.ID)
	}
	return o.check()
}

// devicePropagate sets y = Â·x on the real rows on the device.
func (o GCN) devicePropagate(e *engine.Engine, y, x *cuda.Buffer) error {
	dg := o.D.dev
	return e.Launch("spn_gcn_propagate", o.D.N*o.W, y, x, dg.ptr, dg.idx, dg.w, dg.self, o.D.N, o.W)
}
