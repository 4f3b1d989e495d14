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
