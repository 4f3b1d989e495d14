package data

import (
	"cmp"
	"slices"
)

// Rank maps each of vals to the rank of its value among the distinct
// values, ascending from 0, and returns the ranks with the number of
// distinct values: how the readers turn a file's label values (any
// integers, in any order, with gaps) into the labels 0..L-1 of a
// Dataset.
func Rank[T cmp.Ordered](vals []T) (ranks []int32, distinct int) {
	d := slices.Clone(vals)
	slices.Sort(d)
	d = slices.Compact(d)
	ranks = make([]int32, len(vals))
	for i, v := range vals {
		j, _ := slices.BinarySearch(d, v)
		ranks[i] = int32(j)
	}
	return ranks, len(d)
}
