package rt

import (
	"fmt"

	"github.com/spn-project/spn/data"
)

// CheckSymmetric verifies that every entry (u,v) of a has its reverse
// (v,u) (GCN's gradient uses Â as its own transpose; GAT pairs entries).
func CheckSymmetric(a data.CSR) error {
	for u := 0; u < a.Len(); u++ {
		for _, v := range a.Row(u) {
			if _, ok := FindSorted(a.Row(int(v)), int32(u)); !ok {
				return fmt.Errorf("adjacency is not symmetric: edge %d→%d has no reverse", u, v)
			}
		}
	}
	return nil
}

// FindSorted returns the index of x in the ascending slice s.
func FindSorted(s []int32, x int32) (int, bool) {
	lo, hi := 0, len(s)
	for lo < hi {
		m := (lo + hi) / 2
		if s[m] < x {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo, lo < len(s) && s[lo] == x
}

// Resize returns s with length n, reusing its storage when it is large
// enough (the contents are unspecified).
func Resize[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// Dot32 returns ⟨a, b⟩ accumulated in float64.
func Dot32(a, b []float32) float64 {
	var s float64
	for i, x := range a {
		s += float64(x) * float64(b[i])
	}
	return s
}

// SumChunks adds the nc per-chunk partial vectors of width w in part, in
// chunk order (the fixed-order reduction that makes results independent of
// the thread count).
func SumChunks(part []float64, nc, w int) []float64 {
	s := make([]float64, w)
	for ch := 0; ch < nc; ch++ {
		for i, x := range part[ch*w : (ch+1)*w] {
			s[i] += x
		}
	}
	return s
}
