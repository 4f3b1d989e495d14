//go:build !amd64 || purego

package kernels

import "github.com/spn-project/spn/data/csr"

// haveAVX2 is false off amd64 and with -tags purego: sgemmExact declines and
// gonum computes every product.
const haveAVX2 = false

func axpyRow(c []float32, r axpyRowArgs) {
	if r.Zero {
		clear(c)
	}
	axpyRowGo(c, r.A, r.AStride, r.K, r.B, r.LdB)
}

func dot2x4(c *float32, ldc int, x *float32, lda int, w *float32, ldb int, p, nb, t4, t1, nq int) {
	panic("kernels: dot2x4 without AVX2")
}

func sumRowsAVX2(s, x []float32, rows []int32, d int) bool { return false }

func sumRowsCSRAVX2(s, x []float32, a csr.CSR, lo, hi, d int) bool { return false }

func colSumsAVX2(p []float64, x []float32, center []float64, n, d int) int { return 0 }

func colPairAVX2(s, sp []float64, a, b []float32, n, d int) int { return 0 }

func bnFwdAVX2(BNReLUArgs) int { return 0 }

func reluMaskAVX2(dz, y, dy []float32) int { return 0 }

func bnBwdAVX2(BNBackwardArgs) int { return 0 }

func scaleAVX2(y, x []float32, a float32) int { return 0 }

func rowSumAVX2(y, x []float32, n, d int) int { return 0 }

func dot1x4(out *float32, x, w0, w1, w2, w3 *float32, p, nb, t4, t1 int) {
	panic("kernels: dot1x4 without AVX2")
}
