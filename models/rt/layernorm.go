package rt

import (
	"fmt"
	"math"

	"github.com/spn-project/spn/models/cuda"
	"github.com/spn-project/spn/models/cuda/engine"
	"github.com/spn-project/spn/models/kernels"
	"github.com/spn-project/spn/models/op"
)

// LayerNormEps is the ε of every layer norm (PyTorch's nn.LayerNorm
// default): Graphormer's blocks and the readout's model.layer_norm.
const LayerNormEps = 1e-5

// layerNorm is y = γ·(x−μ)/√(σ²+ε) + β per real row of x (N×d; nodes, or
// graphs for a graph-level op), μ and σ² the row's mean and biased
// variance, with inputs x, γ (d), β (d); padding rows stay zero. With
// x̂ = (x−μ)/σ and g = γ⊙dy its gradient is
//
//	dx = (g − mean(g) − x̂·mean(g⊙x̂))/σ,  dγ = Σ_rows dy⊙x̂,  dβ = Σ_rows dy,
//
// the column sums as per-chunk partials (kernels.ChunkRows rows, in
// double) added in chunk order, on the CPU and on the device alike; the
// row statistics are double on both.
type layerNorm struct {
	id    string
	be    Env
	bd    *BatchData
	graph bool // rows are graphs, not nodes
	N, d  int
	st    *layerNormState
}

// layerNormState is what a layerNorm's DeviceBackward reads of its
// DeviceForward: each row's μ and 1/σ (double, interleaved).
type layerNormState struct {
	stats *cuda.Buffer
}

// NewLayerNorm returns the layer norm over the real rows of an N×d
// node-level (graph: graph-level) tensor, with inputs x, γ and β.
func NewLayerNorm(id string, be Env, bd *BatchData, graph bool, N, d int) op.Op {
	return layerNorm{id: id, be: be, bd: bd, graph: graph, N: N, d: d, st: &layerNormState{}}
}

// Sig implements op.Op.
func (o layerNorm) Sig() op.Sig {
	return op.Sig{ID: o.id, In: [][]int{{o.N, o.d}, {o.d}, {o.d}}, Out: []int{o.N, o.d}}
}

// rowStats returns the mean and 1/√(σ²+ε) of a row, in double, the sums
// in the order of the row (spn_layer_norm's).
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
	n, d := o.bd.Rows(o.graph), o.d
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
	n, d := o.bd.Rows(o.graph), o.d
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
	sums := SumChunks(part, nc, 2*d)
	for j := 0; j < d; j++ {
		dIn[1][j] = float32(sums[j])
		dIn[2][j] = float32(sums[d+j])
	}
	return nil
}

// ZeroOut implements op.ZeroOut: DeviceForward writes the real rows.
func (layerNorm) ZeroOut() {}

// DeviceForward implements op.DeviceOp: spn_layer_norm, one thread per
// real row, keeping the rows' statistics for the backward pass.
func (o layerNorm) DeviceForward(e *engine.Engine, in []*cuda.Buffer, y *cuda.Buffer) error {
	n := o.bd.Rows(o.graph)
	stats, err := e.Scratch64(2 * max(n, 1))
	if err != nil {
		return err
	}
	o.st.stats = stats
	return e.Launch("spn_layer_norm", n, y, stats, in[0], in[1], in[2], n, o.d, LayerNormEps)
}

// DeviceBackward implements op.DeviceOp: dx by spn_layer_norm_backward
// (one thread per real row), dγ and dβ by spn_layer_norm_part (one thread
// per chunk of rows and column) and spn_layer_norm_params (the chunks in
// order), from the statistics of the DeviceForward: the CPU's order.
func (o layerNorm) DeviceBackward(e *engine.Engine, in []*cuda.Buffer, _, dy *cuda.Buffer, dIn []*cuda.Buffer) error {
	n := o.bd.Rows(o.graph)
	if o.st.stats == nil || o.st.stats.Len() != 2*max(n, 1) {
		return fmt.Errorf("%s: backward without its forward", o.id)
	}
	if err := e.Launch("spn_layer_norm_backward", n, dIn[0], dy, in[0], o.st.stats, in[1], n, o.d); err != nil {
		return err
	}
	nc := kernels.NumChunks(n)
	part, err := e.Scratch64(max(2*nc*o.d, 1))
	if err != nil {
		return err
	}
	if err := e.Launch("spn_layer_norm_part", nc*o.d, part, dy, in[0], o.st.stats, n, o.d); err != nil {
		return err
	}
	return e.Launch("spn_layer_norm_params", o.d, dIn[1], dIn[2], part, nc, o.d)
}
