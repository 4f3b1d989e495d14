package kernels

// ColSums returns Σ_r x[r,j] (center == nil) or Σ_r (x[r,j]−center[j])²,
// in float64, chunk partials added in chunk order (so the result does not
// depend on the thread count). Batch norm uses it for its statistics.
func ColSums(be Backend, x []float32, center []float64, n, d int) []float64 {
	nc := NumChunks(n)
	part := make([]float64, nc*d)
	be.ForEachChunk(n, func(ch, lo, hi int) {
		p := part[ch*d : (ch+1)*d]
		j0 := colSumsAVX2(p, x[lo*d:hi*d], center, hi-lo, d) // columns the AVX2 kernels did, same bits
		for r := lo; r < hi; r++ {
			xr := x[r*d+j0 : (r+1)*d]
			if center == nil {
				for j, v := range xr {
					p[j0+j] += float64(v)
				}
			} else {
				for j, v := range xr {
					e := float64(v) - center[j0+j]
					p[j0+j] += e * e
				}
			}
		}
	})
	out := make([]float64, d)
	for ch := 0; ch < nc; ch++ {
		for j := range out {
			out[j] += part[ch*d+j]
		}
	}
	return out
}

// ColSumsPair returns Σ_r a[r,j] and Σ_r a[r,j]·b[r,j] in float64, chunk
// partials added in chunk order.
func ColSumsPair(be Backend, a, b []float32, n, d int) ([]float64, []float64) {
	nc := NumChunks(n)
	part := make([]float64, nc*2*d)
	be.ForEachChunk(n, func(ch, lo, hi int) {
		p := part[ch*2*d : (ch+1)*2*d]
		j0 := colPairAVX2(p[:d], p[d:], a[lo*d:hi*d], b[lo*d:hi*d], hi-lo, d) // same bits
		for r := lo; r < hi; r++ {
			ar, br := a[r*d+j0:(r+1)*d], b[r*d+j0:(r+1)*d]
			for j, v := range ar {
				p[j0+j] += float64(v)
				p[d+j0+j] += float64(v * br[j])
			}
		}
	})
	s, sp := make([]float64, d), make([]float64, d)
	for ch := 0; ch < nc; ch++ {
		for j := 0; j < d; j++ {
			s[j] += part[ch*2*d+j]
			sp[j] += part[ch*2*d+d+j]
		}
	}
	return s, sp
}
