//go:build amd64 && !purego && !(openblas && cgo)

package kernels

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
