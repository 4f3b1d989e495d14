package schema

import (
	"reflect"
	"testing"
)

// TestTargetsOf: QM9 selects its targets by name, in the section's
// order, with GNN-FiLM's chemical-accuracy factors; the other kinds
// select none and have no factors, and naming targets for them or an
// unknown property is an error.
func TestTargetsOf(t *testing.T) {
	got, err := TargetsOf(Dataset{Kind: "qm9", Targets: []string{"U0", "mu"}})
	if err != nil {
		t.Fatal(err)
	}
	want := Targets{Index: []int{7, 0}, ChemAcc: []float64{0.004165489, 0.066513725}, HasChemAcc: true}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("QM9 U0, mu: %+v, want %+v", got, want)
	}
	if got, err := TargetsOf(Dataset{Kind: "qm9"}); err != nil || len(got.Index) != 0 || got.ChemAcc != nil || !got.HasChemAcc {
		t.Errorf("QM9, all targets: %+v, %v", got, err)
	}
	for _, kind := range []string{"prox", "tu", "ogb", "file"} {
		if got, err := TargetsOf(Dataset{Kind: kind}); err != nil || got.Index != nil || got.HasChemAcc {
			t.Errorf("%s: %+v, %v; want no targets and no factors", kind, got, err)
		}
		if _, err := TargetsOf(Dataset{Kind: kind, Targets: []string{"U0"}}); err == nil {
			t.Errorf("%s naming targets: no error", kind)
		}
	}
	if _, err := TargetsOf(Dataset{Kind: "qm9", Targets: []string{"U0", "nope"}}); err == nil {
		t.Error("QM9 with an unknown property: no error")
	}
}

// TestDatasetLabel: the dataset's part of stage names, which the plan's
// text and golden files show.
func TestDatasetLabel(t *testing.T) {
	for _, c := range []struct {
		d    Dataset
		want string
	}{
		{Dataset{Kind: "prox", H: 3}, "prox(h=3)"},
		{Dataset{Kind: "tu", Name: "NCI1"}, "tu(NCI1)"},
		{Dataset{Kind: "ogb", Name: "ogbg-molhiv", Features: "simple"}, "ogb(ogbg-molhiv, simple features)"},
		{Dataset{Kind: "file", Path: "data/peptides.jsonl"}, "file(peptides.jsonl)"},
		{Dataset{Kind: "file", Name: "peptides-func"}, "file(peptides-func)"},
		{Dataset{Kind: "qm9"}, "qm9"},
	} {
		if got := c.d.Label(); got != c.want {
			t.Errorf("%+v: label %q, want %q", c.d, got, c.want)
		}
	}
}
