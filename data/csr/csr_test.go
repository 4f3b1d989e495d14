package csr

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSymmetric checks Symmetric on hand-built sets: true only for a
// well-formed set whose rows are strictly ascending and whose relation is
// symmetric.
func TestSymmetric(t *testing.T) {
	cases := []struct {
		name string
		c    CSR
		want bool
	}{
		{"no rows", CSR{}, true},
		{"one row, no entries", CSR{Ptr: []int32{0, 0}}, true},
		// The path 0-1-2 and its N_2 {0,2}.
		{"path N_1", CSR{Ptr: []int32{0, 1, 3, 4}, Idx: []int32{1, 0, 2, 1}}, true},
		{"path N_2", CSR{Ptr: []int32{0, 1, 1, 2}, Idx: []int32{2, 0}}, true},
		{"its own node", CSR{Ptr: []int32{0, 1, 1}, Idx: []int32{0}}, true},
		{"one asymmetric entry", CSR{Ptr: []int32{0, 1, 3, 3}, Idx: []int32{1, 0, 2}}, false},
		{"unsorted row", CSR{Ptr: []int32{0, 1, 3, 4}, Idx: []int32{1, 2, 0, 1}}, false},
		{"repeated entry", CSR{Ptr: []int32{0, 2, 4}, Idx: []int32{1, 1, 0, 0}}, false},
		{"entry out of range", CSR{Ptr: []int32{0, 1, 1}, Idx: []int32{2}}, false},
		{"negative entry", CSR{Ptr: []int32{0, 1, 1}, Idx: []int32{-1}}, false},
		{"pointers do not end at the entries", CSR{Ptr: []int32{0, 1, 1}, Idx: []int32{1, 0}}, false},
		{"pointers decrease", CSR{Ptr: []int32{0, 2, 1, 2}, Idx: []int32{1, 2}}, false},
		{"entries without rows", CSR{Idx: []int32{0}}, false},
		// 0-1, 0-2, 1-2 with row 2 listing 0 twice instead of 0 and 1.
		{"reverse entries miscounted", CSR{Ptr: []int32{0, 2, 4, 6}, Idx: []int32{1, 2, 0, 2, 0, 0}}, false},
		{"triangle", CSR{Ptr: []int32{0, 2, 4, 6}, Idx: []int32{1, 2, 0, 2, 0, 1}}, true},
	}
	for _, c := range cases {
		n := c.c.Len()
		// No scratch, too little, and more than enough holding garbage.
		short := make([]int32, max(n-1, 0))
		long := make([]int32, n+3)
		for i := range long {
			long[i] = int32(7 - i)
		}
		for _, s := range [][]int32{nil, short, long} {
			if got := c.c.Symmetric(s); got != c.want {
				t.Errorf("%s, %d of scratch: Symmetric = %v, want %v", c.name, len(s), got, c.want)
			}
		}
	}
}

// TestSymmetricRandom compares Symmetric with its definition, computed
// naively (every row strictly ascending, and c equal to its transpose
// built from a dense matrix), on random small sets: symmetric ones and
// ones with an entry added, dropped or swapped.
func TestSymmetricRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for trial := range 2000 {
		n := 1 + rng.IntN(8)
		dense := make([][]bool, n)
		for u := range dense {
			dense[u] = make([]bool, n)
		}
		for u := 0; u < n; u++ {
			for v := u; v < n; v++ {
				if rng.IntN(3) == 0 {
					dense[u][v], dense[v][u] = true, true
				}
			}
		}
		var c CSR
		c.Ptr = append(c.Ptr, 0)
		for u := 0; u < n; u++ {
			for v := 0; v < n; v++ {
				if dense[u][v] {
					c.Idx = append(c.Idx, int32(v))
				}
			}
			c.Ptr = append(c.Ptr, int32(len(c.Idx)))
		}
		if len(c.Idx) > 1 {
			switch trial % 4 {
			case 1: // one entry changed
				c.Idx[rng.IntN(len(c.Idx))] = int32(rng.IntN(n))
			case 2: // two neighbouring entries swapped
				i := rng.IntN(len(c.Idx) - 1)
				c.Idx[i], c.Idx[i+1] = c.Idx[i+1], c.Idx[i]
			case 3: // one entry dropped from its row
				i := rng.IntN(len(c.Idx))
				c.Idx = append(c.Idx[:i:i], c.Idx[i+1:]...)
				for u := range c.Ptr {
					if int(c.Ptr[u]) > i {
						c.Ptr[u]--
					}
				}
			}
		}
		if got, want := c.Symmetric(nil), naiveSymmetric(c); got != want {
			t.Fatalf("trial %d: %+v: Symmetric = %v, want %v", trial, c, got, want)
		}
	}
}

// naiveSymmetric is Symmetric's definition for a well-formed c.
func naiveSymmetric(c CSR) bool {
	n := c.Len()
	var tr CSR
	tr.Ptr = append(tr.Ptr, 0)
	for v := 0; v < n; v++ {
		for u := 0; u < n; u++ {
			for _, w := range c.Row(u) {
				if int(w) == v {
					tr.Idx = append(tr.Idx, int32(u))
				}
			}
		}
		tr.Ptr = append(tr.Ptr, int32(len(tr.Idx)))
	}
	for u := 0; u < n; u++ {
		r := c.Row(u)
		for j := 1; j < len(r); j++ {
			if r[j] <= r[j-1] {
				return false
			}
		}
	}
	return slices.Equal(tr.Ptr, c.Ptr) && slices.Equal(tr.Idx, c.Idx)
}
