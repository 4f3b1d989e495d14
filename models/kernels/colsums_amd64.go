//go:build amd64 && !purego

package kernels

//go:noescape
func colSums32(p *float64, x *float32, n, ld int)

//go:noescape
func colSq32(p *float64, x *float32, center *float64, n, ld int)

//go:noescape
func colPair16(p, q *float64, a, b *float32, n, ld int)

// colSumsAVX2 adds to p[0:j] ColSums' sums over the n rows of x (n×d) for
// the first j = 32·⌊d/32⌋ columns, with the Go loop's bits, and returns j
// (0 without AVX2): the caller does the remaining columns.
func colSumsAVX2(p []float64, x []float32, center []float64, n, d int) int {
	if !haveAVX2 || n <= 0 || d < 32 || len(x) < n*d || len(p) < d || (center != nil && len(center) < d) {
		return 0
	}
	j := 0
	for ; j+32 <= d; j += 32 {
		if center == nil {
			colSums32(&p[j], &x[j], n, d)
		} else {
			colSq32(&p[j], &x[j], &center[j], n, d)
		}
	}
	return j
}

// colPairAVX2 adds to s[0:j] and sp[0:j] ColSumsPair's sums over the n rows
// of a and b (n×d) for the first j = 16·⌊d/16⌋ columns, with the Go loop's
// bits, and returns j (0 without AVX2).
func colPairAVX2(s, sp []float64, a, b []float32, n, d int) int {
	if !haveAVX2 || n <= 0 || d < 16 || len(a) < n*d || len(b) < n*d || len(s) < d || len(sp) < d {
		return 0
	}
	j := 0
	for ; j+16 <= d; j += 16 {
		colPair16(&s[j], &sp[j], &a[j], &b[j], n, d)
	}
	return j
}
