package kernels

import "math"

// BNReLUForward is the elementwise part of a batch norm followed by ReLU
// over the n rows of x (n×d): x̂ = (x−μ)·inv and y = max(γ·x̂+β, 0), both
// stored, for the per-column μ, inv (1/σ), γ and β (d each). The AVX2
// kernel gives the bits of the Go loop (no fused multiply-add; ReLU writes
// +0, NaN stays NaN).
func BNReLUForward(be Backend, xhat, y, x, mu, inv, g, bt []float32, n, d int) {
	be.ForEachChunk(n, func(_, lo, hi int) {
		j0 := bnFwdAVX2(xhat[lo*d:hi*d], y[lo*d:hi*d], x[lo*d:hi*d], mu, inv, g, bt, hi-lo, d)
		if j0 == d {
			return
		}
		for r := lo; r < hi; r++ {
			xr, hr, yr := x[r*d:(r+1)*d], xhat[r*d:(r+1)*d], y[r*d:(r+1)*d]
			for j := j0; j < d; j++ {
				h := (xr[j] - mu[j]) * inv[j]
				hr[j] = h
				yr[j] = max(g[j]*h+bt[j], 0)
			}
		}
	})
}

// ReLUMask sets dz = dy where y ≠ +0 and dz = 0 where y = +0, for the
// output y of a ReLU (which writes +0, so y > 0 exactly when its bits are
// non-zero): the gradient through the ReLU, over the first n·d values.
func ReLUMask(be Backend, dz, y, dy []float32, n, d int) {
	be.ForEachChunk(n, func(_, lo, hi int) {
		ys, zs, gs := y[lo*d:hi*d], dz[lo*d:hi*d], dy[lo*d:hi*d]
		i := reluMaskAVX2(zs, ys, gs)
		for ; i < len(ys); i++ {
			bits := math.Float32bits(ys[i])
			mask := uint32(int32(bits|-bits) >> 31)
			zs[i] = math.Float32frombits(math.Float32bits(gs[i]) & mask)
		}
	})
}

// BNBackward sets dx = gi·((dz − m) − x̂·mx) over the n rows (n×d), for the
// per-column gi (γ/σ), m (mean of dz) and mx (mean of dz·x̂): the input
// gradient of a training-mode batch norm. The AVX2 kernel gives the bits
// of the Go loop.
func BNBackward(be Backend, dx, dz, xhat, gi, m, mx []float32, n, d int) {
	be.ForEachChunk(n, func(_, lo, hi int) {
		j0 := bnBwdAVX2(dx[lo*d:hi*d], dz[lo*d:hi*d], xhat[lo*d:hi*d], gi, m, mx, hi-lo, d)
		if j0 == d {
			return
		}
		for r := lo; r < hi; r++ {
			xr, zr, hr := dx[r*d:(r+1)*d], dz[r*d:(r+1)*d], xhat[r*d:(r+1)*d]
			for j := j0; j < d; j++ {
				xr[j] = gi[j] * (zr[j] - m[j] - hr[j]*mx[j])
			}
		}
	})
}
