package ref

import (
	"math/rand/v2"

	"github.com/spn-project/spn/models/param"
)

// Linear is y = x·W + b over the parameters of a param.Linear (W is
// In×Out, row-major), in float64.
type Linear struct {
	*param.Linear
	x []float64 // cached input
	n int
}

// NewLinear returns the linear map of param.NewLinear.
func NewLinear(name string, in, out int, rng *rand.Rand) *Linear {
	return &Linear{Linear: param.NewLinear(name, in, out, rng)}
}

// Forward returns x·W + b for the n rows of x (n×In).
func (l *Linear) Forward(x []float64, n int) []float64 {
	l.x, l.n = x, n
	return affine(x, l.W.W, l.B.W, n, l.In, l.Out)
}

// Backward accumulates dW = xᵀ·dy, db = Σ_r dy_r and returns dx = dy·Wᵀ
// for the last Forward.
func (l *Linear) Backward(dy []float64) []float64 {
	affineBackward(l.W.G, l.B.G, l.x, dy, affineShape{N: l.n, In: l.In, Out: l.Out})
	dx := make([]float64, l.n*l.In)
	for r := 0; r < l.n; r++ {
		for i := 0; i < l.In; i++ {
			var s float64
			for o := 0; o < l.Out; o++ {
				s += dy[r*l.Out+o] * float64(l.W.W[i*l.Out+o])
			}
			dx[r*l.In+i] = s
		}
	}
	return dx
}

// affine returns x·w + b for x n×in and w in×out (b: out, or nil).
func affine(x []float64, w, b []float32, n, in, out int) []float64 {
	y := make([]float64, n*out)
	for r := 0; r < n; r++ {
		for o := 0; o < out; o++ {
			var s float64
			if b != nil {
				s = float64(b[o])
			}
			for i := 0; i < in; i++ {
				s += x[r*in+i] * float64(w[i*out+o])
			}
			y[r*out+o] = s
		}
	}
	return y
}

// affineShape is the shape of affineBackward's operands: N rows of x
// (N×In) and dy (N×Out).
type affineShape struct {
	N, In, Out int
}

// affineBackward accumulates dw += xᵀ·dy and db += Σ_r dy_r.
func affineBackward(dw, db []float32, x, dy []float64, s affineShape) {
	n, in, out := s.N, s.In, s.Out
	for i := 0; i < in; i++ {
		for o := 0; o < out; o++ {
			var s float64
			for r := 0; r < n; r++ {
				s += x[r*in+i] * dy[r*out+o]
			}
			dw[i*out+o] += float32(s)
		}
	}
	for o := 0; o < out; o++ {
		var s float64
		for r := 0; r < n; r++ {
			s += dy[r*out+o]
		}
		db[o] += float32(s)
	}
}
