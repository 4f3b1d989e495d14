package gcn

import (
	"fmt"

	"github.com/spn-project/spn/models/cuda"
	"github.com/spn-project/spn/models/cuda/engine"
	"github.com/spn-project/spn/models/op"
	"github.com/spn-project/spn/models/rt"
)

// gcnAgg is the GCN propagation y = Â·x with Â = D̂^-1/2 (A+I) D̂^-1/2 for
// input x (N×d), D̂ the degrees plus one, over the batch adjacency and the
// weights of graphData. Â is symmetric (the adjacency of an undirected
// graph is), so the gradient dx = Âᵀ·dy = Â·dy is the same propagation.
type gcnAgg struct {
	id   string
	be   rt.Env
	bd   *rt.BatchData
	gd   *graphData
	N, d int
}

func newGCNAgg(id string, be rt.Env, bd *rt.BatchData, gd *graphData, N, d int) gcnAgg {
	return gcnAgg{id: id, be: be, bd: bd, gd: gd, N: N, d: d}
}

// Sig implements op.Op.
func (o gcnAgg) Sig() op.Sig { return op.Sig{ID: o.id, In: [][]int{{o.N, o.d}}, Out: []int{o.N, o.d}} }

// Forward implements op.Op.
func (o gcnAgg) Forward(in [][]float32, y []float32) error { return o.propagate(y, in[0]) }

// Backward implements op.Op.
func (o gcnAgg) Backward(_ [][]float32, _, dy []float32, dIn [][]float32) error {
	return o.propagate(dIn[0], dy)
}

// propagate sets y = Â·x on the real rows and zeroes the padding.
func (o gcnAgg) propagate(y, x []float32) error {
	n, d, gd := o.bd.N, o.d, o.gd
	if gd.n != n || len(gd.self) < n || len(gd.w) != len(gd.adj.Idx) {
		return fmt.Errorf("GCN weights cover %d nodes, batch has %d", gd.n, n)
	}
	clear(y[n*d:])
	a := gd.adj
	o.be.ForEachChunk(n, func(_, lo, hi int) {
		for u := lo; u < hi; u++ {
			yu := y[u*d : (u+1)*d]
			s := gd.self[u]
			for j, v := range x[u*d : (u+1)*d] {
				yu[j] = s * v
			}
			for e := a.Ptr[u]; e < a.Ptr[u+1]; e++ {
				w, xv := gd.w[e], x[int(a.Idx[e])*d:int(a.Idx[e]+1)*d]
				for j, v := range xv {
					yu[j] += w * v
				}
			}
		}
	})
	return nil
}

// ZeroOut implements op.ZeroOut: DeviceForward writes the real rows.
func (gcnAgg) ZeroOut() {}

// DeviceForward implements op.DeviceOp: y = Â·x by rows
// (spn_gcn_propagate, the CPU's bits), the padding rows of the zeroed y
// left zero (op.ZeroOut).
func (o gcnAgg) DeviceForward(e *engine.Engine, in []*cuda.Buffer, y *cuda.Buffer) error {
	dg, err := o.device()
	if err != nil {
		return err
	}
	return o.devicePropagate(e, dg, y, in[0])
}

// DeviceBackward implements op.DeviceOp: dx = Â·dy (spn_gcn_propagate),
// the padding rows keeping the adaptor's zeros.
func (o gcnAgg) DeviceBackward(e *engine.Engine, _ []*cuda.Buffer, _, dy *cuda.Buffer, dIn []*cuda.Buffer) error {
	dg, err := o.device()
	if err != nil {
		return err
	}
	return o.devicePropagate(e, dg, dIn[0], dy)
}

// device returns the GCN weights on the device for the batch.
func (o gcnAgg) device() (*deviceGraph, error) {
	dg := o.gd.dev
	if dg == nil {
		return nil, fmt.Errorf("%s: the GCN weights are not on the device", o.id)
	}
	if o.gd.n != o.bd.N {
		return nil, fmt.Errorf("%s: GCN weights cover %d nodes, batch has %d", o.id, o.gd.n, o.bd.N)
	}
	return dg, nil
}

// devicePropagate sets y = Â·x on the real rows on the device.
func (o gcnAgg) devicePropagate(e *engine.Engine, dg *deviceGraph, y, x *cuda.Buffer) error {
	return e.Launch("spn_gcn_propagate", o.bd.N*o.d, y, x, dg.ptr, dg.idx, dg.w, dg.self, o.bd.N, o.d)
}
