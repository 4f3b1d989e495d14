package kerntest

import (
	"math"
	"math/rand/v2"

	"github.com/spn-project/spn/models/kernels"
)

// Randn returns n values drawn from N(0, scale²).
func Randn(rng *rand.Rand, n int, scale float64) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(rng.NormFloat64() * scale)
	}
	return x
}

// AbsDot returns Σ|a_i·b_i|, the scale of a dot product's rounding.
func AbsDot(a, b []float32) float64 {
	var s float64
	for i := range a {
		s += math.Abs(float64(a[i]) * float64(b[i]))
	}
	return s
}

// BNCase is the input of BNTrain: the N×W matrix X, the per-column γ
// (Gamma) and β (Beta), the running statistics RunMean and RunVar (W
// each), the momentum of their update and the ε added to the variance
// (Eps).
type BNCase struct {
	X, Gamma, Beta  []float32
	RunMean, RunVar []float64
	N, W            int
	Momentum, Eps   float64
}

// BNTrain is batch norm + ReLU in training mode on the n×w rows of x as
// models/rt's op computes it from the CPU kernels: mean and biased
// variance from kernels.ColSums, μ and 1/√(σ²+eps), the running
// statistics updated with momentum (unbiased variance), x̂ and
// y = ReLU(g·x̂ + bt), for x, g (γ), bt (β), n, w, momentum and eps of c.
// c.RunMean and c.RunVar are left as they are; the updated statistics are
// returned.
func BNTrain(c BNCase) (mu, inv, xhat, y []float32, newMean, newVar []float64) {
	x, g, bt, runMean, runVar, n, w, momentum, eps := c.X, c.Gamma, c.Beta, c.RunMean, c.RunVar, c.N, c.W, c.Momentum, c.Eps
	be := kernels.CPU{Threads: 2}
	newMean, newVar = append([]float64(nil), runMean...), append([]float64(nil), runVar...)
	s := kernels.ColSums(be, x, nil, n, w)
	mean := make([]float64, w)
	for j := range mean {
		mean[j] = s[j] / float64(n)
	}
	sq := kernels.ColSums(be, x, mean, n, w)
	mu, inv = make([]float32, w), make([]float32, w)
	for j := range mean {
		v := sq[j] / float64(n)
		newMean[j] = (1-momentum)*newMean[j] + momentum*mean[j]
		newVar[j] = (1-momentum)*newVar[j] + momentum*(v*float64(n)/float64(n-1))
		mu[j], inv[j] = float32(mean[j]), float32(1/math.Sqrt(v+eps))
	}
	xhat, y = make([]float32, n*w), make([]float32, n*w)
	kernels.BNReLUForward(be, kernels.BNReLUArgs{XHat: xhat, Y: y, X: x, Mu: mu, Inv: inv, Gamma: g, Beta: bt, N: n, D: w})
	return mu, inv, xhat, y, newMean, newVar
}
