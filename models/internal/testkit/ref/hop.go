package ref

import (
	"math"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/models/param"
)

// HopAggregation is the shortest-path aggregation of an SPN layer:
//
//	y_u = (1+ε)·x_u + Σ_{i=1..k} α_i · Σ_{v ∈ N_i(u)} x_v,  α = softmax(Logits)
//
// where N_i(u) = {v : dist(u,v) = i} (Batch.Hop[i-1], row u); there is no
// self term in the hop sums. The parameters are a param.HopAggregation's.
// The sums are plain loops over the rows of the hop sets, in float64.
type HopAggregation struct {
	*param.HopAggregation

	hop   []data.CSR
	x     []float64
	n     int
	alpha []float64
	sums  [][]float64 // sums[i][u] = Σ_{v ∈ N_{i+1}(u)} x_v, kept for the α gradient
}

// NewHopAggregation returns the aggregation of param.NewHopAggregation.
func NewHopAggregation(name string, k, dim int, eps float64, learnEps bool) *HopAggregation {
	return &HopAggregation{HopAggregation: param.NewHopAggregation(name, k, dim, eps, learnEps)}
}

// Alpha returns α = softmax(Logits).
func (h *HopAggregation) Alpha() []float64 {
	return softmax(h.Logits.W)
}

// softmax returns exp(l_i − max l) / Σ_j exp(l_j − max l).
func softmax(l []float32) []float64 {
	m := math.Inf(-1)
	for _, v := range l {
		m = math.Max(m, float64(v))
	}
	e := make([]float64, len(l))
	var s float64
	for i, v := range l {
		e[i] = math.Exp(float64(v) - m)
		s += e[i]
	}
	for i := range e {
		e[i] /= s
	}
	return e
}

// Forward aggregates x (n×Dim) over hop[0..K-1] = N_1..N_K.
func (h *HopAggregation) Forward(x []float64, hop []data.CSR, n int) []float64 {
	d := h.Dim
	h.x, h.n, h.hop = x, n, hop[:h.K]
	h.alpha = h.Alpha()
	eps := float64(h.Eps.W[0])
	y := make([]float64, n*d)
	for i := range y {
		y[i] = (1 + eps) * x[i]
	}
	h.sums = make([][]float64, h.K)
	for i, a := range h.hop {
		s := make([]float64, n*d)
		for u := 0; u < n; u++ {
			for _, v := range a.Idx[a.Ptr[u]:a.Ptr[u+1]] {
				for j := 0; j < d; j++ {
					s[u*d+j] += x[int(v)*d+j]
				}
			}
		}
		for k, v := range s {
			y[k] += h.alpha[i] * v
		}
		h.sums[i] = s
	}
	return y
}

// Backward accumulates the gradients of the logits and ε and returns dx:
//
//	dx_v = (1+ε)·dy_v + Σ_i α_i Σ_{u: v ∈ N_i(u)} dy_u,
//	dα_i = ⟨dy, sums_i⟩, dε = ⟨dy, x⟩, dl_j = α_j(dα_j − Σ_i α_i dα_i).
func (h *HopAggregation) Backward(dy []float64) []float64 {
	d, n := h.Dim, h.n
	eps := float64(h.Eps.W[0])
	dalpha := make([]float64, h.K)
	for i, s := range h.sums {
		dalpha[i] = dot(dy, s)
	}
	var m float64
	for i, a := range h.alpha {
		m += a * dalpha[i]
	}
	for j, a := range h.alpha {
		h.Logits.G[j] += float32(a * (dalpha[j] - m))
	}
	h.Eps.G[0] += float32(dot(dy, h.x))
	dx := make([]float64, n*d)
	for i, v := range dy {
		dx[i] = (1 + eps) * v
	}
	for i, a := range h.hop {
		for u := 0; u < n; u++ {
			for _, v := range a.Idx[a.Ptr[u]:a.Ptr[u+1]] {
				for j := 0; j < d; j++ {
					dx[int(v)*d+j] += h.alpha[i] * dy[u*d+j]
				}
			}
		}
	}
	return dx
}

// dot returns Σ_i a_i·b_i.
func dot(a, b []float64) float64 {
	var s float64
	for i, v := range a {
		s += v * b[i]
	}
	return s
}
