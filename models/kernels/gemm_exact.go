package kernels

// sgemmExact computes C = op(A)·B + beta·C for op(A) = A (tA false) or Aᵀ,
// B not transposed and alpha = 1, with the same additions in the same order
// and the same roundings as gonum's Sgemm, so the bits are the same:
// C[i,j] is first zeroed (beta = 0) or scaled (beta ≠ 1), then gets
// A[i,l]·B[l,j] added for l = 0..k-1 in order, each product rounded to
// float32 before the addition (no fused multiply-add), and products with
// A[i,l] = ±0 left out. gonum adds them row by row through AxpyUnitary,
// loading and storing C for every l; here each row of C stays in
// registers over the whole l loop (AVX2 row kernels on amd64).
//
// It reports false, doing nothing, where it does not apply (no AVX2, B
// transposed, alpha ≠ 1, or slices shorter than the shapes need, which
// gonum then reports); the caller then uses gonum.
func sgemmExact(tA, tB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) bool {
	if !haveAVX2 || tB || alpha != 1 || m <= 0 || n <= 0 || k < 0 || ldb < n || ldc < n {
		return false
	}
	rowStep, astride := lda, 1 // A[i,l] = a[i·lda + l]
	if tA {
		rowStep, astride = 1, lda // A[i,l] = a[l·lda + i]
		if lda < m || (k > 0 && len(a) < (k-1)*lda+m) {
			return false
		}
	} else if lda < k || (k > 0 && len(a) < (m-1)*lda+k) {
		return false
	}
	if (k > 0 && len(b) < (k-1)*ldb+n) || len(c) < (m-1)*ldc+n {
		return false
	}
	if k == 0 && beta == 1 {
		return true
	}
	if beta != 1 {
		for i := 0; i < m; i++ {
			ci := c[i*ldc : i*ldc+n]
			if beta == 0 {
				clear(ci)
				continue
			}
			for j := range ci {
				ci[j] *= beta
			}
		}
	}
	if k == 0 {
		return true
	}
	for i := 0; i < m; i++ {
		axpyRow(c[i*ldc:i*ldc+n], a[i*rowStep:], astride, k, b, ldb)
	}
	return true
}

// axpyRowGo is the portable row kernel: c[j] += a[l·astride]·b[l·ldb+j]
// for l in order, zero a skipped, each product rounded (the float32
// conversion forbids fusing it into the addition).
func axpyRowGo(c, a []float32, astride, k int, b []float32, ldb int) {
	for l := 0; l < k; l++ {
		v := a[l*astride]
		if v == 0 {
			continue
		}
		bl := b[l*ldb : l*ldb+len(c)]
		for j, bv := range bl {
			c[j] += float32(v * bv)
		}
	}
}
