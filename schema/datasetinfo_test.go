package schema

import "testing"

func TestInfoOf(t *testing.T) {
	tests := []struct {
		d    Dataset
		want DatasetInfo
	}{
		{Dataset{Kind: "prox", KMax: 10}, DatasetInfo{Kind: "prox", Known: true, KMax: 10}},
		{Dataset{Kind: "tu", Name: "PROTEINS", KMax: 5, Unreachable: true}, DatasetInfo{Kind: "tu", Known: true, KMax: 5, Unreachable: true}},
		{Dataset{Kind: "qm9", KMax: 10}, DatasetInfo{Kind: "qm9", Known: true, KMax: 10, Relations: 4}},
		{Dataset{Kind: "ogb", Name: "bace", KMax: 5}, DatasetInfo{Kind: "ogb", Known: true, KMax: 5, EdgeFeatures: true, NodeCategories: true}},
		{Dataset{Kind: "zinc", KMax: 3}, DatasetInfo{Kind: "zinc", KMax: 3}},
	}
	for _, tc := range tests {
		if got := InfoOf(tc.d); got != tc.want {
			t.Errorf("InfoOf(%+v) = %+v, want %+v", tc.d, got, tc.want)
		}
	}
}
