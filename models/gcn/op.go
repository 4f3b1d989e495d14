package gcn

import (
	"fmt"
	"github.com/spn-project/spn/models/rt"

	"github.com/spn-project/spn/models/op"
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
