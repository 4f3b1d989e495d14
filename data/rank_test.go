package data

import (
	"slices"
	"testing"
)

func TestRank(t *testing.T) {
	for _, c := range []struct {
		name     string
		vals     []int64
		want     []int32
		distinct int
	}{
		{"none", nil, []int32{}, 0},
		{"one", []int64{7}, []int32{0}, 1},
		{"gaps and negatives", []int64{10, -1, 3, 10, -1}, []int32{2, 0, 1, 2, 0}, 3},
		{"already ranks", []int64{0, 1, 2, 1}, []int32{0, 1, 2, 1}, 3},
		{"all equal", []int64{5, 5, 5}, []int32{0, 0, 0}, 1},
	} {
		got, n := Rank(c.vals)
		if !slices.Equal(got, c.want) || n != c.distinct {
			t.Errorf("%s: Rank(%v) = %v, %d; want %v, %d", c.name, c.vals, got, n, c.want, c.distinct)
		}
	}
	if got, n := Rank([]int{3, 1}); !slices.Equal(got, []int32{1, 0}) || n != 2 {
		t.Errorf("Rank([3 1]) = %v, %d; want [1 0], 2", got, n)
	}
}
