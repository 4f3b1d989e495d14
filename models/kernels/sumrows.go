package kernels

import "github.com/spn-project/spn/data/csr"

// sumRowsCSR sets s[(u−lo)·d : (u−lo+1)·d] = Σ_{v ∈ a's row u} x[v·d : v·d+d]
// for the rows u = lo..hi-1 of a, each as sumRows computes it.
func sumRowsCSR(s, x []float32, a csr.CSR, lo, hi, d int) {
	if sumRowsCSRAVX2(s, x, a, lo, hi, d) {
		return
	}
	for u := lo; u < hi; u++ {
		sumRows(s[(u-lo)*d:(u-lo+1)*d], x, a.Idx[a.Ptr[u]:a.Ptr[u+1]], d)
	}
}

// sumRowsGo sets s[0:w] = Σ_{v ∈ rows} x[v·ld : v·ld+w], adding four rows
// at a time as s += (x0+x1) + (x2+x3), then the rest one at a time.
func sumRowsGo(s, x []float32, rows []int32, ld, w int) {
	s = s[:w]
	clear(s)
	r := 0
	for ; r+4 <= len(rows); r += 4 {
		x0 := x[int(rows[r])*ld : int(rows[r])*ld+w]
		x1 := x[int(rows[r+1])*ld : int(rows[r+1])*ld+w]
		x2 := x[int(rows[r+2])*ld : int(rows[r+2])*ld+w]
		x3 := x[int(rows[r+3])*ld : int(rows[r+3])*ld+w]
		x1, x2, x3 = x1[:len(x0)], x2[:len(x0)], x3[:len(x0)]
		for j, v := range x0 {
			s[j] += (v + x1[j]) + (x2[j] + x3[j])
		}
	}
	for ; r < len(rows); r++ {
		xr := x[int(rows[r])*ld : int(rows[r])*ld+w]
		for j, v := range xr {
			s[j] += v
		}
	}
}
