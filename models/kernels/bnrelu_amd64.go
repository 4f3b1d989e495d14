//go:build amd64 && !purego

package kernels

//go:noescape
func bnFwd8(xhat, y, x, mu, inv, gam, bt *float32, n, d8, ld int)

//go:noescape
func reluMask8(dz, y, dy *float32, n int)

//go:noescape
func bnBwd8(dx, dz, xhat, gi, m, mx *float32, n, d8, ld int)

// bnFwdAVX2 does BNReLUForward's loop over the a.N rows of a.X (N×D) for
// the first j = 8·⌊D/8⌋ columns, with its bits, and returns j (0 without
// AVX2).
func bnFwdAVX2(a BNReLUArgs) int {
	xhat, y, x, mu, inv, g, bt, n, d := a.XHat, a.Y, a.X, a.Mu, a.Inv, a.Gamma, a.Beta, a.N, a.D
	d8 := d / 8 * 8
	if !haveAVX2 || n <= 0 || d8 == 0 || len(x) < n*d || len(xhat) < n*d || len(y) < n*d ||
		len(mu) < d || len(inv) < d || len(g) < d || len(bt) < d {
		return 0
	}
	bnFwd8(&xhat[0], &y[0], &x[0], &mu[0], &inv[0], &g[0], &bt[0], n, d8, d)
	return d8
}

// reluMaskAVX2 does ReLUMask's loop over the first i = 8·⌊len(y)/8⌋
// values and returns i (0 without AVX2).
func reluMaskAVX2(dz, y, dy []float32) int {
	m := len(y) / 8 * 8
	if !haveAVX2 || m == 0 || len(dz) < m || len(dy) < m {
		return 0
	}
	reluMask8(&dz[0], &y[0], &dy[0], m)
	return m
}

// bnBwdAVX2 does BNBackward's loop over the a.N rows for the first
// j = 8·⌊D/8⌋ columns, with its bits, and returns j (0 without AVX2).
func bnBwdAVX2(a BNBackwardArgs) int {
	dx, dz, xhat, gi, m, mx, n, d := a.DX, a.DZ, a.XHat, a.GI, a.M, a.MX, a.N, a.D
	d8 := d / 8 * 8
	if !haveAVX2 || n <= 0 || d8 == 0 || len(dx) < n*d || len(dz) < n*d || len(xhat) < n*d ||
		len(gi) < d || len(m) < d || len(mx) < d {
		return 0
	}
	bnBwd8(&dx[0], &dz[0], &xhat[0], &gi[0], &m[0], &mx[0], n, d8, d)
	return d8
}

//go:noescape
func scale8(y, x *float32, a float32, n int)

// scaleAVX2 sets y = a·x over the first i = 8·⌊len(y)/8⌋ values and
// returns i (0 without AVX2).
func scaleAVX2(y, x []float32, a float32) int {
	m := len(y) / 8 * 8
	if !haveAVX2 || m == 0 || len(x) < m {
		return 0
	}
	scale8(&y[0], &x[0], a, m)
	return m
}

//go:noescape
func rowSum64(y, x *float32, n, ld int)

// rowSumAVX2 sets y[0:j] to RowSum's sums for the first j = 64·⌊d/64⌋
// columns and returns j (0 without AVX2).
func rowSumAVX2(y, x []float32, n, d int) int {
	d64 := d / 64 * 64
	if !haveAVX2 || n <= 0 || d64 == 0 || len(x) < n*d || len(y) < d {
		return 0
	}
	for j := 0; j < d64; j += 64 {
		rowSum64(&y[j], &x[j], n, d)
	}
	return d64
}
