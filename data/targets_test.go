package data

import (
	"strings"
	"testing"
)

func TestSelectTargets(t *testing.T) {
	ds := &Dataset{Name: "d", NumTargets: 3, Graphs: []Graph{{N: 1, Target: []float64{1, 2, 3}}, {N: 1, Target: []float64{4, 5, 6}}}}
	got, err := SelectTargets(ds, []int{2, 0})
	if err != nil {
		t.Fatal(err)
	}
	if got.NumTargets != 2 || got.Graphs[0].Target[0] != 3 || got.Graphs[0].Target[1] != 1 || got.Graphs[1].Target[0] != 6 || got.Graphs[1].Target[1] != 4 {
		t.Fatalf("got %+v", got.Graphs)
	}
	if ds.NumTargets != 3 || ds.Graphs[0].Target[0] != 1 {
		t.Fatal("the input changed")
	}
	if same, _ := SelectTargets(ds, nil); same != ds {
		t.Fatal("nil selection copied the dataset")
	}
	if _, err := SelectTargets(ds, []int{3}); err == nil || !strings.Contains(err.Error(), "target 3 (position 0) outside 0..2") {
		t.Fatalf("error %v", err)
	}
}
