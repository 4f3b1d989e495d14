//go:build !openblas || !cgo

package kernels

import "gonum.org/v1/gonum/blas"

// GEMM names the matrix-multiply implementation of this build.
const GEMM = "gonum (pure Go)"

// DefaultGEMM reports whether this build's products are the default
// build's (gonum's bits), against which tolerances to other
// implementations (the GPU's) are stated.
const DefaultGEMM = true

// sgemm is C = alpha·op(A)·op(B) + beta·C on row-major matrices, computed
// by gonum's pure-Go BLAS (serial for the chunk sizes used here), or, with
// the same bits, by sgemmExact's register-blocked kernels where they apply.
func sgemm(tA, tB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	if sgemmExact(tA, tB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc) {
		return
	}
	ta, tb := blas.NoTrans, blas.NoTrans
	if tA {
		ta = blas.Trans
	}
	if tB {
		tb = blas.Trans
	}
	impl.Sgemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}
