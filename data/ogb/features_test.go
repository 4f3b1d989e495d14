package ogb

import (
	"reflect"
	"testing"
)

// TestKeepSimple: the simple feature set keeps the first two atom
// features (atomic number, chirality) and the first two bond features
// (bond type, stereo) of every node and edge entry, with their
// vocabularies, and leaves the loaded dataset as it was; full keeps all.
func TestKeepSimple(t *testing.T) {
	ds, err := Load(writeZip(t, "clintox", tiny()), "clintox")
	if err != nil {
		t.Fatal(err)
	}
	before := ds.Graphs[0].NodeCat
	s, err := Keep(ds, FeaturesSimple)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(s.NodeCatVocab, []int{119, 5}) || !reflect.DeepEqual(s.EdgeFeatVocab, []int{5, 6}) {
		t.Errorf("vocabularies %v %v", s.NodeCatVocab, s.EdgeFeatVocab)
	}
	g := s.Graphs[0]
	if want := []int32{5, 0, 7, 0, 5, 0}; !reflect.DeepEqual(g.NodeCat, want) {
		t.Errorf("atom features %v, want %v", g.NodeCat, want)
	}
	// CSR entries 1, 0, 2, 1: bonds 0-1 (0,0,0) and 2-1 (1,2,1).
	if want := []int32{0, 0, 0, 0, 1, 2, 1, 2}; !reflect.DeepEqual(g.EdgeFeat, want) {
		t.Errorf("bond features %v, want %v", g.EdgeFeat, want)
	}
	if lone := s.Graphs[1]; !reflect.DeepEqual(lone.NodeCat, []int32{16, 0}) || len(lone.EdgeFeat) != 0 {
		t.Errorf("lone atom %v %v", lone.NodeCat, lone.EdgeFeat)
	}
	if len(ds.NodeCatVocab) != 9 || len(ds.Graphs[0].NodeCat) != 27 || &before[0] != &ds.Graphs[0].NodeCat[0] {
		t.Error("Keep changed the dataset it was given")
	}
	if !reflect.DeepEqual(s.Splits, ds.Splits) || s.Graphs[1].Target[1] != ds.Graphs[1].Target[1] {
		t.Error("splits or labels changed")
	}
	// The dataset's checks accept the result (every value within its
	// vocabulary, as many columns as vocabularies).
	if err := s.Validate(); err != nil {
		t.Errorf("the simple features do not validate: %v", err)
	}
	for _, f := range []string{"", FeaturesFull} {
		if got, err := Keep(ds, f); got != ds || err != nil {
			t.Errorf("Keep(%q) = %p, %v; want the dataset itself", f, got, err)
		}
	}
	if _, err := Keep(ds, "rich"); err == nil || err.Error() != `OGB feature set "rich" is unknown (want "full" or "simple")` {
		t.Errorf("unknown set: %v", err)
	}
}
