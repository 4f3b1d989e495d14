package ref

import (
	"math"

	"github.com/spn-project/spn/models/kernels"
	"github.com/spn-project/spn/models/param"
)

// BatchNormReLU is y = ReLU(γ·(x−μ)/√(σ²+ε) + β) over the rows of x: batch
// statistics in training mode, running statistics in evaluation mode
// (PyTorch's BatchNorm1d semantics: momentum 0.1, ε = 1e-5, biased batch
// variance for normalising, unbiased variance in the running estimate).
// The running statistics, in the param.BatchNormReLU, are changed only by a
// training-mode Forward.
type BatchNormReLU struct {
	*param.BatchNormReLU

	n      int
	train  bool
	xhat   []float32 // normalised input
	y, dx  []float32
	invStd []float32
}

// NewBatchNormReLU returns the batch norm of param.NewBatchNormReLU.
func NewBatchNormReLU(name string, dim int) *BatchNormReLU {
	return &BatchNormReLU{BatchNormReLU: param.NewBatchNormReLU(name, dim)}
}

// Forward normalises the n rows of x (n×Dim).
func (b *BatchNormReLU) Forward(be kernels.Backend, x []float32, n int, train bool) []float32 {
	d := b.Dim
	b.n, b.train = n, train
	b.xhat = Grow(b.xhat, n*d)
	b.y = Grow(b.y, n*d)
	b.invStd = Grow(b.invStd, d)
	mean := make([]float64, d)
	variance := make([]float64, d)
	if train && n > 0 {
		s := kernels.ColSums(be, x, nil, n, d)
		for j := range mean {
			mean[j] = s[j] / float64(n)
		}
		sq := kernels.ColSums(be, x, mean, n, d)
		for j := range variance {
			variance[j] = sq[j] / float64(n)
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
	mu := make([]float32, d)
	for j := range mu {
		mu[j] = float32(mean[j])
		b.invStd[j] = float32(1 / math.Sqrt(variance[j]+b.Eps))
	}
	g, bt := b.Gamma.W, b.Beta.W
	be.ForEachChunk(n, func(_, lo, hi int) {
		for r := lo; r < hi; r++ {
			xr, hr, yr := x[r*d:(r+1)*d], b.xhat[r*d:(r+1)*d], b.y[r*d:(r+1)*d]
			for j := range xr {
				h := (xr[j] - mu[j]) * b.invStd[j]
				hr[j] = h
				yr[j] = max(g[j]*h+bt[j], 0)
			}
		}
	})
	return b.y
}

// Backward accumulates dγ, dβ and returns dx for the last Forward.
func (b *BatchNormReLU) Backward(be kernels.Backend, dy []float32) []float32 {
	d, n := b.Dim, b.n
	b.dx = Grow(b.dx, n*d)
	// dz = dy·[y>0], stored in dx for now.
	be.ForEachChunk(n, func(_, lo, hi int) {
		y, dz, g := b.y[lo*d:hi*d], b.dx[lo*d:hi*d], dy[lo*d:hi*d]
		for i, v := range y {
			// Branch-free ReLU mask: y ≥ 0, and y > 0 exactly when its bits
			// are non-zero (the ReLU writes +0).
			bits := math.Float32bits(v)
			mask := uint32(int32(bits|-bits) >> 31)
			dz[i] = math.Float32frombits(math.Float32bits(g[i]) & mask)
		}
	})
	sdz, sdzx := kernels.ColSumsPair(be, b.dx, b.xhat, n, d)
	for j := 0; j < d; j++ {
		b.Gamma.G[j] += float32(sdzx[j])
		b.Beta.G[j] += float32(sdz[j])
	}
	g := b.Gamma.W
	if !b.train {
		be.ForEachChunk(n, func(_, lo, hi int) {
			for r := lo; r < hi; r++ {
				for j := 0; j < d; j++ {
					b.dx[r*d+j] *= g[j] * b.invStd[j]
				}
			}
		})
		return b.dx
	}
	mdz := make([]float32, d)
	mdzx := make([]float32, d)
	for j := 0; j < d; j++ {
		mdz[j] = float32(sdz[j] / float64(n))
		mdzx[j] = float32(sdzx[j] / float64(n))
	}
	be.ForEachChunk(n, func(_, lo, hi int) {
		for r := lo; r < hi; r++ {
			dr, hr := b.dx[r*d:(r+1)*d], b.xhat[r*d:(r+1)*d]
			for j := range dr {
				dr[j] = g[j] * b.invStd[j] * (dr[j] - mdz[j] - hr[j]*mdzx[j])
			}
		}
	})
	return b.dx
}
