//go:build !amd64 || purego

package kernels

// haveAVX2 is false off amd64 (and with -tags purego): sgemmExact declines
// and gonum computes every product.
const haveAVX2 = false

func axpyRow(c, a []float32, astride, k int, b []float32, ldb int) {
	axpyRowGo(c, a, astride, k, b, ldb)
}
