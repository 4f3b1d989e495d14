package kernels

import "math"

// BNReLUArgs are the operands of BNReLUForward: the N×D matrices XHat,
// Y (written) and X (read; XHat may be X, each value is read before its
// x̂ is written), and the per-column vectors Mu (μ), Inv (1/σ), Gamma (γ)
// and Beta (β), D values each.
type BNReLUArgs struct {
	XHat, Y, X           []float32
	Mu, Inv, Gamma, Beta []float32
	N, D                 int
}

// BNReLUForward is the elementwise part of a batch norm followed by ReLU
// over the n rows of x (n×d): x̂ = (x−μ)·inv and y = max(γ·x̂+β, 0), both
// stored, for the per-column μ, inv (1/σ), γ and β (d each), all given by
// a. The AVX2 kernel gives the bits of the Go loop (no fused
// multiply-add; ReLU writes +0, NaN stays NaN).
func BNReLUForward(be Backend, a BNReLUArgs) {
	xhat, y, x, mu, inv, g, bt, n, d := a.XHat, a.Y, a.X, a.Mu, a.Inv, a.Gamma, a.Beta, a.N, a.D
	be.ForEachChunk(n, func(_, lo, hi int) {
		c := a
		c.XHat, c.Y, c.X, c.N = xhat[lo*d:hi*d], y[lo*d:hi*d], x[lo*d:hi*d], hi-lo
		j0 := bnFwdAVX2(c)
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

// BNBackwardArgs are the operands of BNBackward: the N×D matrices DX
// (written), DZ and XHat (read), and the per-column vectors GI (γ/σ), M
// (the mean of dz) and MX (the mean of dz·x̂), D values each.
type BNBackwardArgs struct {
	DX, DZ, XHat []float32
	GI, M, MX    []float32
	N, D         int
}

// BNBackward sets dx = gi·((dz − m) − x̂·mx) over the n rows (n×d), for the
// per-column gi (γ/σ), m (mean of dz) and mx (mean of dz·x̂), all given by
// a: the input gradient of a training-mode batch norm. The AVX2 kernel
// gives the bits of the Go loop.
func BNBackward(be Backend, a BNBackwardArgs) {
	dx, dz, xhat, gi, m, mx, n, d := a.DX, a.DZ, a.XHat, a.GI, a.M, a.MX, a.N, a.D
	be.ForEachChunk(n, func(_, lo, hi int) {
		c := a
		c.DX, c.DZ, c.XHat, c.N = dx[lo*d:hi*d], dz[lo*d:hi*d], xhat[lo*d:hi*d], hi-lo
		j0 := bnBwdAVX2(c)
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

// RowSum sets y (d) = Σ_{r<n} x[r·d : (r+1)·d], the rows of x added one
// after the other to 0 in row order (sum pooling over one graph's rows).
func RowSum(y, x []float32, n, d int) {
	j0 := rowSumAVX2(y, x, n, d)
	y = y[:d]
	clear(y[j0:])
	for r := 0; r < n; r++ {
		for j, v := range x[r*d+j0 : (r+1)*d] {
			y[j0+j] += v
		}
	}
}
