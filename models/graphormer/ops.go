package graphormer

import (
	"fmt"
	"github.com/spn-project/spn/models/rt"
	"math"

	"github.com/spn-project/spn/models/kernels"
	"github.com/spn-project/spn/models/op"
)

// LayerNormEps is the ε of Graphormer's layer norms.
const LayerNormEps = 1e-5

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

// layerNorm is y = γ·(x−μ)/√(σ²+ε) + β per row of x (N×d), with inputs x,
// γ (d), β (d); padding rows stay zero. With x̂ = (x−μ)/σ and g = γ⊙dy its
// gradient is
//
//	dx = (g − mean(g) − x̂·mean(g⊙x̂))/σ,  dγ = Σ_rows dy⊙x̂,  dβ = Σ_rows dy,
//
// the column sums as per-chunk partials added in chunk order.
type layerNorm struct {
	id   string
	be   rt.Env
	bd   *rt.BatchData
	N, d int
}

func newLayerNorm(id string, be rt.Env, bd *rt.BatchData, N, d int) layerNorm {
	return layerNorm{id: id, be: be, bd: bd, N: N, d: d}
}

// Sig implements op.Op.
func (o layerNorm) Sig() op.Sig {
	return op.Sig{ID: o.id, In: [][]int{{o.N, o.d}, {o.d}, {o.d}}, Out: []int{o.N, o.d}}
}

// rowStats returns the mean and 1/√(σ²+ε) of a row, in float64.
func rowStats(x []float32) (mu, inv float64) {
	for _, v := range x {
		mu += float64(v)
	}
	mu /= float64(len(x))
	var s float64
	for _, v := range x {
		s += (float64(v) - mu) * (float64(v) - mu)
	}
	return mu, 1 / math.Sqrt(s/float64(len(x))+LayerNormEps)
}

// Forward implements op.Op.
func (o layerNorm) Forward(in [][]float32, y []float32) error {
	x, gamma, beta := in[0], in[1], in[2]
	n, d := o.bd.N, o.d
	clear(y[n*d:])
	o.be.ForEachChunk(n, func(_, lo, hi int) {
		for u := lo; u < hi; u++ {
			xr := x[u*d : (u+1)*d]
			mu, inv := rowStats(xr)
			for j, v := range xr {
				y[u*d+j] = float32((float64(v)-mu)*inv)*gamma[j] + beta[j]
			}
		}
	})
	return nil
}

// Backward implements op.Op.
func (o layerNorm) Backward(in [][]float32, _, dy []float32, dIn [][]float32) error {
	x, gamma, dx := in[0], in[1], dIn[0]
	n, d := o.bd.N, o.d
	nc := kernels.NumChunks(n)
	part := make([]float64, nc*2*d)
	o.be.ForEachChunk(n, func(ch, lo, hi int) {
		ps := part[ch*2*d : (ch+1)*2*d]
		xh := make([]float64, d)
		for u := lo; u < hi; u++ {
			xr, dr := x[u*d:(u+1)*d], dy[u*d:(u+1)*d]
			mu, inv := rowStats(xr)
			var mg, mgx float64
			for j, v := range xr {
				xh[j] = (float64(v) - mu) * inv
				g := float64(gamma[j]) * float64(dr[j])
				mg += g
				mgx += g * xh[j]
				ps[j] += float64(dr[j]) * xh[j]
				ps[d+j] += float64(dr[j])
			}
			mg /= float64(d)
			mgx /= float64(d)
			for j := range xr {
				g := float64(gamma[j]) * float64(dr[j])
				dx[u*d+j] = float32((g - mg - xh[j]*mgx) * inv)
			}
		}
	})
	sums := rt.SumChunks(part, nc, 2*d)
	for j := 0; j < d; j++ {
		dIn[1][j] = float32(sums[j])
		dIn[2][j] = float32(sums[d+j])
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
