package exec_test

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/spn-project/spn/stages/cache"
	"github.com/spn-project/spn/stages/exec"
	"github.com/spn-project/spn/stages/plan"
)

// TestMissingInput: the first input not in the cache is named, none when
// all are there or the stage has no inputs.
func TestMissingInput(t *testing.T) {
	c, err := cache.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	tmp, err := c.NewTemp("aa11")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Commit(tmp, &cache.Record{Key: "aa11", Kind: "generate", Name: "generate x"}); err != nil {
		t.Fatal(err)
	}
	have := &plan.Node{Key: "aa11", Kind: "generate", Name: "generate x"}
	lack := &plan.Node{Key: "bb22", Kind: "precompute", Name: "precompute x"}
	lack2 := &plan.Node{Key: "cc33", Kind: "precompute", Name: "precompute y"}
	for _, tc := range []struct {
		name string
		deps []*plan.Node
		want string
	}{
		{"no inputs", nil, ""},
		{"all cached", []*plan.Node{have}, ""},
		{"one missing", []*plan.Node{have, lack}, "precompute x"},
		{"first missing named", []*plan.Node{lack2, have, lack}, "precompute y"},
	} {
		if got := exec.MissingInput(c, &plan.Node{Key: "dd44", Kind: "train", Deps: tc.deps}); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestRecordFailures: every known key of a plan file gets the error as its
// last failure; unknown keys and a missing cache record nothing.
func TestRecordFailures(t *testing.T) {
	gen := &plan.Node{Key: "aa11", SeedKey: "aa11", Kind: "generate", Name: "generate x"}
	tr := &plan.Node{Key: "bb22", SeedKey: "bb22", Kind: "train", Name: "train x", Deps: []*plan.Node{gen}}
	f := exec.NewPlanFile("spec", []*plan.Node{gen, tr})
	root := t.TempDir()
	f.RecordFailures(root, []string{"bb22", "zz99"}, errors.New("no GPU"))
	c := &cache.Cache{Root: root}
	for _, tc := range []struct {
		key  string
		want string // "" for no failure
	}{
		{"bb22", "no GPU"},
		{"aa11", ""},
		{"zz99", ""},
	} {
		fl, ok := c.LastFailure(tc.key)
		switch {
		case tc.want == "" && ok:
			t.Errorf("%s: failure %+v recorded", tc.key, fl)
		case tc.want != "" && (!ok || fl.Error != tc.want || fl.Name != "train x" || fl.Kind != "train"):
			t.Errorf("%s: %+v, %v; want %q of train x", tc.key, fl, ok, tc.want)
		}
	}
	missing := filepath.Join(t.TempDir(), "none")
	f.RecordFailures(missing, []string{"bb22"}, errors.New("no GPU"))
	if _, ok := (&cache.Cache{Root: missing}).LastFailure("bb22"); ok {
		t.Error("a missing cache got a failure recorded")
	}
}
