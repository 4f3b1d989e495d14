//go:build amd64 && !purego

package kernels

import "golang.org/x/sys/cpu"

// haveAVX2 selects the AVX2 row kernels (set once from CPUID).
var haveAVX2 = cpu.X86.HasAVX2 && cpu.X86.HasAVX

// Row kernels (gemm_amd64.s): c[0:W] = (zero ? +0 : c[0:W]) +
// Σ_{l<k, a[l·astride] ≠ 0} a[l·astride]·b[l·ldb : l·ldb+W], W = 64, 32, 8,
// in l order, each product rounded before it is added.

//go:noescape
func axpyRow64(c, a *float32, astride, k int, b *float32, ldb int, zero bool)

//go:noescape
func axpyRow32(c, a *float32, astride, k int, b *float32, ldb int, zero bool)

//go:noescape
func axpyRow8(c, a *float32, astride, k int, b *float32, ldb int, zero bool)

// axpyRow sets c[j] += Σ_l a[l·astride]·b[l·ldb+j] for j < len(c) (c[j] =
// +0 + … with zero: c need not be cleared), terms with a zero a skipped:
// the AVX2 kernels over blocks of 64, 32 and 8 columns, the rest in Go
// with the same order and rounding.
func axpyRow(c, a []float32, astride, k int, b []float32, ldb int, zero bool) {
	n, j := len(c), 0
	for ; j+64 <= n; j += 64 {
		axpyRow64(&c[j], &a[0], astride, k, &b[j], ldb, zero)
	}
	for ; j+32 <= n; j += 32 {
		axpyRow32(&c[j], &a[0], astride, k, &b[j], ldb, zero)
	}
	for ; j+8 <= n; j += 8 {
		axpyRow8(&c[j], &a[0], astride, k, &b[j], ldb, zero)
	}
	if j < n {
		if zero {
			clear(c[j:])
		}
		axpyRowGo(c[j:], a, astride, k, b[j:], ldb)
	}
}

// dot2x4 adds to c[r·ldc+q] (r < 2, q < 4) the dot products of rows r of x
// (lda apart) with rows q of w (ldb apart), in gonum's DotUnitary order for
// rows of w with p elements before 16-byte alignment:
// len = p+16·nb+4·t4+t1, for nq blocks of four columns (nq ≥ 1).
//
//go:noescape
func dot2x4(c *float32, ldc int, x *float32, lda int, w *float32, ldb int, p, nb, t4, t1, nq int)
