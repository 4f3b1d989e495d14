package data

import (
	"slices"
	"testing"
)

// TestHopSizes: the pairs are counted per distance over the graphs, N_∞'s
// apart with the graphs where it is not empty, and all in the total.
func TestHopSizes(t *testing.T) {
	set := func(n int) CSR { return CSR{Idx: make([]int32, n)} }
	unr := func(n int) *CSR { c := set(n); return &c }
	for _, tc := range []struct {
		name string
		h    Hops
		want HopSizes
	}{
		{"no graphs", Hops{KMax: 2}, HopSizes{Entries: []int{0, 0}}},
		{"two graphs", Hops{KMax: 2, Graphs: []GraphHops{{Hop: []CSR{set(6), set(2)}}, {Hop: []CSR{set(4), set(0)}}}},
			HopSizes{Entries: []int{10, 2}}},
		{"N_∞ in two of three graphs", Hops{KMax: 1, Graphs: []GraphHops{
			{Hop: []CSR{set(2)}, Unreachable: unr(0)},
			{Hop: []CSR{set(4)}, Unreachable: unr(8)},
			{Hop: []CSR{set(2)}, Unreachable: unr(4)},
		}}, HopSizes{Entries: []int{8}, Unreachable: 12, Split: 2}},
	} {
		got := tc.h.Sizes()
		if !slices.Equal(got.Entries, tc.want.Entries) || got.Unreachable != tc.want.Unreachable || got.Split != tc.want.Split {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
		total := tc.want.Unreachable
		for _, e := range tc.want.Entries {
			total += e
		}
		if got.Total() != total {
			t.Errorf("%s: total %d, want %d", tc.name, got.Total(), total)
		}
	}
}
