package param

import "math"

// Adam is the Adam optimiser (Kingma & Ba) with PyTorch's semantics,
// including its coupled L2 weight decay (g ← g + λ·w before the moments).
type Adam struct {
	LR, Beta1, Beta2, Eps, WeightDecay float64

	params []*Param
	m, v   [][]float32
	t      int
}

// NewAdam returns Adam over params with β = (0.9, 0.999) and ε = 1e-8.
func NewAdam(params []*Param, lr, weightDecay float64) *Adam {
	a := &Adam{LR: lr, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: weightDecay, params: params}
	for _, p := range params {
		a.m = append(a.m, make([]float32, len(p.W)))
		a.v = append(a.v, make([]float32, len(p.W)))
	}
	return a
}

// Step applies one update from the accumulated gradients and clears them.
func (a *Adam) Step() {
	a.t++
	bc1 := 1 - math.Pow(a.Beta1, float64(a.t))
	bc2 := 1 - math.Pow(a.Beta2, float64(a.t))
	for pi, p := range a.params {
		if p.Frozen {
			p.ZeroGrad()
			continue
		}
		m, v := a.m[pi], a.v[pi]
		for i, g32 := range p.G {
			g := float64(g32)
			if a.WeightDecay != 0 && !p.NoDecay {
				g += a.WeightDecay * float64(p.W[i])
			}
			mi := a.Beta1*float64(m[i]) + (1-a.Beta1)*g
			vi := a.Beta2*float64(v[i]) + (1-a.Beta2)*g*g
			m[i], v[i] = float32(mi), float32(vi)
			p.W[i] -= float32(a.LR * (mi / bc1) / (math.Sqrt(vi/bc2) + a.Eps))
		}
		p.ZeroGrad()
	}
}
