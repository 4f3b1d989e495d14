package data

// PackedBytes returns the bytes that the packed hop sets h hold (their
// coded rows and their index), 0 when h is decoded: for the tests of the
// external package data_test.
func PackedBytes(h *Hops) int {
	p := h.packed
	if p == nil {
		return 0
	}
	return len(p.rows) + 8*len(p.start) + 4*len(p.nnz) + 4*len(p.n)
}
