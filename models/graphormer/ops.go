package graphormer

import (
	"fmt"

	"github.com/spn-project/spn/models/op"
	"github.com/spn-project/spn/models/rt"
)

// degEmb is Graphormer's centrality encoding y_u = x_u + E[deg_u] for
// inputs x (N×d) and E ((MaxDegree+1)×d), deg_u the clamped degree of
// graphData. Its gradient: dx = dy on the real rows (zero on the padding),
// dE[δ] = Σ_{u: deg_u = δ} dy_u (added in node order, in float64).
type degEmb struct {
	id   string
	be   rt.Env
	bd   *rt.BatchData
	gd   *graphData
	N, d int
}

func newDegEmb(id string, be rt.Env, bd *rt.BatchData, gd *graphData, N, d int) degEmb {
	return degEmb{id: id, be: be, bd: bd, gd: gd, N: N, d: d}
}

// Sig implements op.Op.
func (o degEmb) Sig() op.Sig {
	return op.Sig{ID: o.id, In: [][]int{{o.N, o.d}, {MaxDegree + 1, o.d}}, Out: []int{o.N, o.d}}
}

// Forward implements op.Op.
func (o degEmb) Forward(in [][]float32, y []float32) error {
	x, emb := in[0], in[1]
	n, d := o.bd.N, o.d
	if len(o.gd.deg) != n {
		return fmt.Errorf("degrees cover %d nodes, batch has %d", len(o.gd.deg), n)
	}
	clear(y[n*d:])
	for u := 0; u < n; u++ {
		e := emb[int(o.gd.deg[u])*d : int(o.gd.deg[u]+1)*d]
		for j, v := range x[u*d : (u+1)*d] {
			y[u*d+j] = v + e[j]
		}
	}
	return nil
}

// Backward implements op.Op.
func (o degEmb) Backward(_ [][]float32, _, dy []float32, dIn [][]float32) error {
	n, d := o.bd.N, o.d
	copy(dIn[0][:n*d], dy[:n*d])
	acc := make([]float64, (MaxDegree+1)*d)
	for u := 0; u < n; u++ {
		r := acc[int(o.gd.deg[u])*d : int(o.gd.deg[u]+1)*d]
		for j, v := range dy[u*d : (u+1)*d] {
			r[j] += float64(v)
		}
	}
	for i, v := range acc {
		dIn[1][i] = float32(v)
	}
	return nil
}

// relu is y = max(x, 0) elementwise; dx = dy·[y > 0].
type relu struct {
	id    string
	shape []int
}

func newReLU(id string, shape ...int) relu { return relu{id: id, shape: shape} }

// Sig implements op.Op.
func (o relu) Sig() op.Sig { return op.Sig{ID: o.id, In: [][]int{o.shape}, Out: o.shape} }

// Forward implements op.Op.
func (o relu) Forward(in [][]float32, y []float32) error {
	for i, v := range in[0] {
		y[i] = max(v, 0)
	}
	return nil
}

// Backward implements op.Op.
func (o relu) Backward(_ [][]float32, y, dy []float32, dIn [][]float32) error {
	for i, v := range y {
		if v > 0 {
			dIn[0][i] = dy[i]
		}
	}
	return nil
}
