package expressivity

import (
	"slices"
	"testing"
)

// TestPairKs: the hop limits checked come in order, with those where the
// refinement distinguishes (or some SPN separates) the pair.
func TestPairKs(t *testing.T) {
	for _, tc := range []struct {
		name              string
		p                 PairReport
		ks, yes, sks, spn []int
	}{
		{"nothing checked", PairReport{Result: &Result{}}, nil, nil, nil, nil},
		{"from k 2", PairReport{
			Result: &Result{SPMPNN: []KResult{{K: 1}, {K: 2, Distinguishes: true}, {K: 3, Distinguishes: true}}},
			SPN:    []Separation{{K: 1, Separating: 0}, {K: 2, Separating: 2}, {K: 3, Separating: 0}},
		}, []int{1, 2, 3}, []int{2, 3}, []int{1, 2, 3}, []int{2}},
		{"none", PairReport{Result: &Result{SPMPNN: []KResult{{K: 1}, {K: 4}}}}, []int{1, 4}, nil, nil, nil},
	} {
		ks, yes := tc.p.SPMPNNKs()
		sks, spn := tc.p.SPNKs()
		if !slices.Equal(ks, tc.ks) || !slices.Equal(yes, tc.yes) || !slices.Equal(sks, tc.sks) || !slices.Equal(spn, tc.spn) {
			t.Errorf("%s: SP-MPNN %v yes %v, SPN %v yes %v", tc.name, ks, yes, sks, spn)
		}
	}
}
