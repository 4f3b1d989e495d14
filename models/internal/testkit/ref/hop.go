package ref

import (
	"math"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/models/kernels"
	"github.com/spn-project/spn/models/param"
)

// HopAggregation is the shortest-path aggregation of an SPN layer:
//
//	y_u = (1+ε)·x_u + Σ_{i=1..k} α_i · Σ_{v ∈ N_i(u)} x_v,  α = softmax(Logits)
//
// where N_i(u) = {v : dist(u,v) = i} (Batch.Hop[i-1]); there is no self term
// in the hop sums. The parameters are a param.HopAggregation's.
type HopAggregation struct {
	*param.HopAggregation

	hop, hopT []data.CSR
	rep, repT [][]int32
	x         []float32
	n         int
	alpha     []float32
	sums      [][]float32 // sums[i] = A_i·x, kept for the α gradient
	scratch   [][]float32 // per-hop sums of the backward pass
	y, dx     []float32
}

// NewHopAggregation returns the aggregation of param.NewHopAggregation.
func NewHopAggregation(name string, k, dim int, eps float64, learnEps bool) *HopAggregation {
	return &HopAggregation{HopAggregation: param.NewHopAggregation(name, k, dim, eps, learnEps)}
}

// Alpha returns α = softmax(Logits).
func (h *HopAggregation) Alpha() []float32 {
	a := make([]float32, h.K)
	m := math.Inf(-1)
	for _, l := range h.Logits.W {
		m = math.Max(m, float64(l))
	}
	var s float64
	e := make([]float64, h.K)
	for i, l := range h.Logits.W {
		e[i] = math.Exp(float64(l) - m)
		s += e[i]
	}
	for i := range a {
		a[i] = float32(e[i] / s)
	}
	return a
}

// Forward aggregates x (n×Dim) over hop[0..K-1] = N_1..N_K; hopT must hold
// the transposes of hop (equal to hop for the symmetric hop sets of
// undirected graphs) and is used by Backward.
func (h *HopAggregation) Forward(be kernels.Backend, x []float32, hop, hopT []data.CSR, n int) []float32 {
	return h.ForwardGrouped(be, x, hop, hopT, nil, nil, n)
}

// ForwardGrouped is Forward with the row groups of hop and hopT
// (kernels.GroupRows, nil = none), which only speed it up.
func (h *HopAggregation) ForwardGrouped(be kernels.Backend, x []float32, hop, hopT []data.CSR, rep, repT [][]int32, n int) []float32 {
	h.x, h.n, h.hop, h.hopT = x, n, hop[:h.K], hopT[:h.K]
	h.rep, h.repT = nil, nil
	if rep != nil && repT != nil {
		h.rep, h.repT = rep[:h.K], repT[:h.K]
	}
	h.alpha = h.Alpha()
	h.y = Grow(h.y, n*h.Dim)
	if len(h.sums) != h.K {
		h.sums = make([][]float32, h.K)
	}
	for i := range h.sums {
		h.sums[i] = Grow(h.sums[i], n*h.Dim)
	}
	be.HopAggregateGrouped(h.y, h.sums, x, h.hop, h.rep, h.alpha, 1+h.Eps.W[0], n, h.Dim)
	return h.y
}

// Backward accumulates the gradients of the logits and ε and returns dx:
// dx = (1+ε)·dy + Σ_i α_i·A_iᵀ·dy, dα_i = ⟨dy, A_i x⟩, dε = ⟨dy, x⟩.
func (h *HopAggregation) Backward(be kernels.Backend, dy []float32) []float32 {
	dots := be.Dots(dy, append(h.sums, h.x), h.n, h.Dim)
	// dα_i = ⟨dy, A_i x⟩; softmax backward: dl_j = α_j(dα_j − Σ α_i dα_i).
	var s float64
	for i := 0; i < h.K; i++ {
		s += float64(h.alpha[i]) * dots[i]
	}
	for j := 0; j < h.K; j++ {
		h.Logits.G[j] += float32(float64(h.alpha[j]) * (dots[j] - s))
	}
	h.Eps.G[0] += float32(dots[h.K])
	h.dx = Grow(h.dx, h.n*h.Dim)
	if len(h.scratch) != h.K {
		h.scratch = make([][]float32, h.K)
	}
	for i := range h.scratch {
		h.scratch[i] = Grow(h.scratch[i], h.n*h.Dim)
	}
	be.HopAggregateGrouped(h.dx, h.scratch, dy, h.hopT, h.repT, h.alpha, 1+h.Eps.W[0], h.n, h.Dim)
	return h.dx
}
