//go:build amd64 && !purego

package kernels

import "golang.org/x/sys/cpu"

// haveAVX2 selects the AVX2 row kernels (set once from CPUID).
var haveAVX2 = cpu.X86.HasAVX2 && cpu.X86.HasAVX

// Row kernels (gemm_amd64.s): c[0:W] = (zero ? +0 : c[0:W]) +
// Σ_{l<k, a[l·astride] ≠ 0} a[l·astride]·b[l·ldb : l·ldb+W], in l order,
// each product rounded before it is added: axpyRow64 on W = 64 columns,
// axpyRowTail on W = 8·n8 + r < 64, the last r through the lanes of mask
// that are all ones bits (tailMask).

//go:noescape
func axpyRow64(c, a *float32, astride, k int, b *float32, ldb int, zero bool)

//go:noescape
func axpyRowTail(c, a *float32, astride, k int, b *float32, ldb int, zero bool, n8 int, mask *uint32)

// tailMask holds, from index 8−r, the VMASKMOVPS mask of a block of r < 8
// columns: r lanes of all ones bits, then 8−r zeros. It is never written.
var tailMask = [16]uint32{
	0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff,
	0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff,
}

// axpyRow sets c[j] += Σ_l a[l·astride]·b[l·ldb+j] for j < len(c) (c[j] =
// +0 + … with zero: c need not be cleared), terms with a zero a skipped,
// for the operands r: the AVX2 kernels over blocks of 64 columns and then
// the rest, with the same order and rounding as axpyRowGo.
func axpyRow(c []float32, r axpyRowArgs) {
	a, astride, k, b, ldb, zero := r.A, r.AStride, r.K, r.B, r.LdB, r.Zero
	n, j := len(c), 0
	for ; j+64 <= n; j += 64 {
		axpyRow64(&c[j], &a[0], astride, k, &b[j], ldb, zero)
	}
	if j < n {
		r := n - j
		axpyRowTail(&c[j], &a[0], astride, k, &b[j], ldb, zero, r/8, &tailMask[8-r%8])
	}
}

// dot2x4 adds to c[r·ldc+q] (r < 2, q < 4) the dot products of rows r of x
// (lda apart) with rows q of w (ldb apart), in gonum's DotUnitary order for
// rows of w with p elements before 16-byte alignment:
// len = p+16·nb+4·t4+t1, for nq blocks of four columns (nq ≥ 1).
//
//go:noescape
func dot2x4(c *float32, ldc int, x *float32, lda int, w *float32, ldb int, p, nb, t4, t1, nq int)
