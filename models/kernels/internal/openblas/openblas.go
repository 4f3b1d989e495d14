//go:build openblas && cgo

package openblas

/*
#cgo LDFLAGS: -lopenblas
#include <cblas.h>
*/
import "C"

import "sync"

var singleThread sync.Once

// Sgemm sets C = alpha·op(A)·op(B) + beta·C on row-major matrices (op
// transposes when tA, tB) with OpenBLAS, asked to use one thread per call:
// callers parallelise over row chunks themselves, and a single-threaded
// call always sums in the same order, so results stay reproducible. m, n
// or k = 0 are handled here (OpenBLAS needs non-empty operands).
func Sgemm(tA, tB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	if m == 0 || n == 0 {
		return
	}
	singleThread.Do(func() { C.openblas_set_num_threads(1) })
	if k == 0 {
		for i := 0; i < m; i++ {
			row := c[i*ldc : i*ldc+n]
			for j := range row {
				row[j] *= beta
			}
		}
		return
	}
	ta, tb := uint32(C.CblasNoTrans), uint32(C.CblasNoTrans)
	if tA {
		ta = uint32(C.CblasTrans)
	}
	if tB {
		tb = uint32(C.CblasTrans)
	}
	C.cblas_sgemm(C.CblasRowMajor, C.enum_CBLAS_TRANSPOSE(ta), C.enum_CBLAS_TRANSPOSE(tb), C.blasint(m), C.blasint(n), C.blasint(k),
		C.float(alpha), (*C.float)(&a[0]), C.blasint(lda), (*C.float)(&b[0]), C.blasint(ldb),
		C.float(beta), (*C.float)(&c[0]), C.blasint(ldc))
}
