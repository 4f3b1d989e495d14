//go:build amd64 && !purego

package kernels

import "github.com/spn-project/spn/data/csr"

//go:noescape
func sumRows64(s, x *float32, rows *int32, n, ld int)

//go:noescape
func sumRows8(s, x *float32, rows *int32, n, ld int)

// sumRowsAVX2 is sumRows for d ≥ 8 on AVX2 (same order, same bits):
// columns in blocks of 64 and 8 through the assembly kernels, the rest in
// Go. It reports false when it does not apply (no AVX2, d < 8, no rows).
func sumRowsAVX2(s, x []float32, rows []int32, d int) bool {
	if !haveAVX2 || d < 8 || len(rows) == 0 {
		return false
	}
	// The kernels read x[v·d : v·d+d] unchecked: check every row once.
	for _, v := range rows {
		if v < 0 || (int(v)+1)*d > len(x) {
			return false // sumRows' own loop reports it
		}
	}
	s = s[:d]
	j := 0
	for ; j+64 <= d; j += 64 {
		sumRows64(&s[j], &x[j], &rows[0], len(rows), d)
	}
	for ; j+8 <= d; j += 8 {
		sumRows8(&s[j], &x[j], &rows[0], len(rows), d)
	}
	if j < d {
		sumRowsGo(s[j:], x[j:], rows, d, d-j)
	}
	return true
}

//go:noescape
func sumRowsCSR64(s, x *float32, ptr, idx *int32, nrows, ld int)

// sumRowsCSRAVX2 is sumRowsCSR on AVX2 for d a multiple of 64 (same order,
// same bits): one kernel call per 64 columns for all rows lo..hi-1. It
// reports false when it does not apply (no AVX2, another width, an index
// outside x or a malformed row range).
func sumRowsCSRAVX2(s, x []float32, a csr.CSR, lo, hi, d int) bool {
	if !haveAVX2 || d%64 != 0 || d == 0 || hi <= lo || len(s) < (hi-lo)*d || hi >= len(a.Ptr) {
		return false
	}
	ptr := a.Ptr[lo : hi+1]
	for u := 1; u < len(ptr); u++ {
		if ptr[u] < ptr[u-1] {
			return false
		}
	}
	if ptr[0] < 0 || int(ptr[len(ptr)-1]) > len(a.Idx) {
		return false
	}
	// The kernel reads x[v·d : v·d+d] unchecked: check every index once.
	for _, v := range a.Idx[ptr[0]:ptr[len(ptr)-1]] {
		if v < 0 || (int(v)+1)*d > len(x) {
			return false
		}
	}
	var idx *int32
	if len(a.Idx) > 0 {
		idx = &a.Idx[0]
	} else {
		idx = new(int32) // every row is empty: never read
	}
	for j := 0; j < d; j += 64 {
		sumRowsCSR64(&s[j], &x[j], &ptr[0], idx, hi-lo, d)
	}
	return true
}
