package ref

import (
	"math/rand/v2"

	"github.com/spn-project/spn/models/kernels"
	"github.com/spn-project/spn/models/param"
)

// Linear is y = x·W + b over the parameters of a param.Linear.
type Linear struct {
	*param.Linear
	x       []float32 // cached input
	n       int
	y, dx   []float32
	partial []float32 // MatMulATBuf scratch
}

// NewLinear returns the linear map of param.NewLinear.
func NewLinear(name string, in, out int, rng *rand.Rand) *Linear {
	return &Linear{Linear: param.NewLinear(name, in, out, rng)}
}

// Forward returns x·W + b for n rows; the result is owned by l until the
// next Forward.
func (l *Linear) Forward(be kernels.Backend, x []float32, n int) []float32 {
	l.x, l.n = x, n
	l.y = Grow(l.y, n*l.Out)
	be.MatMul(l.y, x, l.W.W, l.B.W, n, l.In, l.Out)
	return l.y
}

// Backward accumulates dW, db and returns dx for the last Forward.
func (l *Linear) Backward(be kernels.Backend, dy []float32) []float32 {
	be.MatMulATBuf(l.W.G, l.B.G, l.x, dy, l.n, l.In, l.Out, &l.partial)
	l.dx = Grow(l.dx, l.n*l.In)
	be.MatMulBT(l.dx, dy, l.W.W, l.n, l.In, l.Out)
	return l.dx
}
