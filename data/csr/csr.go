// Package csr holds the compressed-sparse-row adjacency shared by the
// datasets (data.Graph's Adj, data/sp's hop sets) and the kernels that
// aggregate over it (models/kernels). It imports nothing, so the kernels
// depend on this type alone and not on the dataset package.
package csr

// CSR is a compressed sparse row list of neighbour sets over nodes 0..n-1:
// the set of node u is Idx[Ptr[u]:Ptr[u+1]], sorted ascending.
type CSR struct {
	Ptr []int32 // len n+1, Ptr[0] == 0
	Idx []int32 // len Ptr[n]
}

// Row returns the neighbour set of node u.
func (c CSR) Row(u int) []int32 { return c.Idx[c.Ptr[u]:c.Ptr[u+1]] }

// Len returns the number of rows (nodes).
func (c CSR) Len() int {
	if len(c.Ptr) == 0 {
		return 0
	}
	return len(c.Ptr) - 1
}

// Symmetric reports whether c equals its transpose entry for entry (the
// transpose listing every row ascending, as models/kernels' Transpose
// does): whether c is a well-formed CSR over its n rows (Ptr[0] = 0,
// pointers non-decreasing up to len(Idx), entries in 0..n-1) whose rows
// are strictly ascending and whose relation is symmetric, v in row u
// exactly when u is in row v. It reads every entry once, O(n + nnz), and
// needs n int32 of scratch: the first n of scratch when it holds that
// many (their values do not matter and are overwritten), else allocated.
func (c CSR) Symmetric(scratch []int32) bool {
	n := c.Len()
	if n == 0 {
		return len(c.Idx) == 0
	}
	if c.Ptr[0] != 0 || int(c.Ptr[n]) != len(c.Idx) {
		return false
	}
	for u := 0; u < n; u++ {
		if c.Ptr[u+1] < c.Ptr[u] {
			return false
		}
	}
	// next[v] is the first entry of row v not yet matched. Rows u are
	// visited in ascending order, so in a symmetric c with sorted rows
	// the u that list v come in the order row v lists them: each entry
	// (u, v) must meet u at next[v]. When every entry has met its match,
	// the nnz entries have taken nnz distinct positions, all of them: the
	// matching pairs each entry with its reverse.
	next := scratch
	if len(next) < n {
		next = make([]int32, n)
	}
	copy(next, c.Ptr[:n])
	for u := 0; u < n; u++ {
		prev := int32(-1)
		for _, v := range c.Idx[c.Ptr[u]:c.Ptr[u+1]] {
			if v <= prev || int(v) >= n {
				return false
			}
			prev = v
			p := next[v]
			if p == c.Ptr[v+1] || c.Idx[p] != int32(u) {
				return false
			}
			next[v] = p + 1
		}
	}
	return true
}
