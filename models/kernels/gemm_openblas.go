//go:build openblas && cgo

package kernels

import "github.com/spn-project/spn/models/kernels/internal/openblas"

// GEMM names the matrix-multiply implementation of this build.
const GEMM = "OpenBLAS (cgo, single-threaded calls)"

// DefaultGEMM reports whether this build's products are the default
// build's (gonum's bits): not in the OpenBLAS build.
const DefaultGEMM = false

// sgemm is C = alpha·op(A)·op(B) + beta·C on row-major matrices, computed
// by OpenBLAS (see package openblas); the other kernels keep their AVX2
// paths in this build.
func sgemm(tA, tB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	openblas.Sgemm(tA, tB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}
