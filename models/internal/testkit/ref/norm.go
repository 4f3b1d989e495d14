package ref

import (
	"math"

	"github.com/spn-project/spn/models/param"
)

// BatchNormReLU is y = ReLU(γ·(x−μ)/√(σ²+ε) + β) over the rows of x: batch
// statistics in training mode, running statistics in evaluation mode
// (PyTorch's BatchNorm1d semantics: momentum 0.1, ε = 1e-5, biased batch
// variance for normalising, unbiased variance in the running estimate).
// The running statistics, in the param.BatchNormReLU, are changed only by a
// training-mode Forward. Written from the definition, in float64: the mean
// and the variance are two passes over the rows.
type BatchNormReLU struct {
	*param.BatchNormReLU

	n      int
	train  bool
	xhat   []float64 // normalised input
	y      []float64
	invStd []float64
}

// NewBatchNormReLU returns the batch norm of param.NewBatchNormReLU.
func NewBatchNormReLU(name string, dim int) *BatchNormReLU {
	return &BatchNormReLU{BatchNormReLU: param.NewBatchNormReLU(name, dim)}
}

// Forward normalises the n rows of x (n×Dim).
func (b *BatchNormReLU) Forward(x []float64, n int, train bool) []float64 {
	d := b.Dim
	b.n, b.train = n, train
	mean := make([]float64, d)
	variance := make([]float64, d)
	if train && n > 0 {
		for r := 0; r < n; r++ {
			for j := 0; j < d; j++ {
				mean[j] += x[r*d+j]
			}
		}
		for j := range mean {
			mean[j] /= float64(n)
		}
		for r := 0; r < n; r++ {
			for j := 0; j < d; j++ {
				c := x[r*d+j] - mean[j]
				variance[j] += c * c
			}
		}
		for j := range variance {
			variance[j] /= float64(n) // biased: normalises the batch
			unbiased := variance[j]
			if n > 1 {
				unbiased = variance[j] * float64(n) / float64(n-1)
			}
			b.RunMean[j] = (1-b.Momentum)*b.RunMean[j] + b.Momentum*mean[j]
			b.RunVar[j] = (1-b.Momentum)*b.RunVar[j] + b.Momentum*unbiased
		}
	} else {
		copy(mean, b.RunMean)
		copy(variance, b.RunVar)
	}
	b.invStd = make([]float64, d)
	for j := range b.invStd {
		b.invStd[j] = 1 / math.Sqrt(variance[j]+b.Eps)
	}
	b.xhat = make([]float64, n*d)
	b.y = make([]float64, n*d)
	for r := 0; r < n; r++ {
		for j := 0; j < d; j++ {
			h := (x[r*d+j] - mean[j]) * b.invStd[j]
			b.xhat[r*d+j] = h
			b.y[r*d+j] = math.Max(float64(b.Gamma.W[j])*h+float64(b.Beta.W[j]), 0)
		}
	}
	return b.y
}

// Backward accumulates dγ, dβ and returns dx for the last Forward. With
// dz = dy·[y > 0]: dβ = Σ_r dz, dγ = Σ_r dz·x̂, and in training mode
// dx = γ/σ·(dz − mean_r dz − x̂·mean_r(dz·x̂)); in evaluation mode
// dx = γ/σ·dz.
func (b *BatchNormReLU) Backward(dy []float64) []float64 {
	d, n := b.Dim, b.n
	dz := make([]float64, n*d)
	for i, v := range dy {
		if b.y[i] > 0 {
			dz[i] = v
		}
	}
	sdz := make([]float64, d)
	sdzx := make([]float64, d)
	for r := 0; r < n; r++ {
		for j := 0; j < d; j++ {
			sdz[j] += dz[r*d+j]
			sdzx[j] += dz[r*d+j] * b.xhat[r*d+j]
		}
	}
	for j := 0; j < d; j++ {
		b.Gamma.G[j] += float32(sdzx[j])
		b.Beta.G[j] += float32(sdz[j])
	}
	dx := make([]float64, n*d)
	for r := 0; r < n; r++ {
		for j := 0; j < d; j++ {
			s := float64(b.Gamma.W[j]) * b.invStd[j]
			if b.train {
				dx[r*d+j] = s * (dz[r*d+j] - sdz[j]/float64(n) - b.xhat[r*d+j]*sdzx[j]/float64(n))
			} else {
				dx[r*d+j] = s * dz[r*d+j]
			}
		}
	}
	return dx
}
