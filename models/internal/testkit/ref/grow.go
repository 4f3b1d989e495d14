package ref

// Grow returns s resized to n elements, reusing its storage when possible;
// the contents are unspecified. New storage gets 50% headroom, so buffers
// sized by batches of varying node counts stop reallocating after a few
// batches.
func Grow(s []float32, n int) []float32 {
	if cap(s) >= n {
		return s[:n]
	}
	return make([]float32, n, n+n/2)
}
