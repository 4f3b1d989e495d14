package cache

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/spn-project/spn/stages"
)

// TestVerify: an intact stage is not reported, a changed artifact is
// damage and a record without checksums unchecked, in key order.
func TestVerify(t *testing.T) {
	c := &Cache{Root: t.TempDir()}
	commitStage(t, c, "aaaa")
	bad := commitStage(t, c, "bbbb")
	legacy := commitStage(t, c, "cccc")
	if err := os.WriteFile(filepath.Join(bad, "a.bin"), []byte("changed"), 0o644); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(legacy, stages.FileRecord))
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	delete(m, "files")
	b, _ = json.Marshal(m)
	if err := os.WriteFile(filepath.Join(legacy, stages.FileRecord), b, 0o644); err != nil {
		t.Fatal(err)
	}
	var found []string
	n, damaged, unchecked, err := (&Cache{Root: c.Root}).Verify(func(v Verified) {
		switch {
		case v.Damage != nil && !v.Unchecked:
			found = append(found, "damaged "+v.Key)
		case v.Unchecked && v.Damage == nil:
			found = append(found, "unchecked "+v.Key)
		default:
			found = append(found, "? "+v.Key)
		}
	})
	if err != nil || n != 3 || damaged != 1 || unchecked != 1 || !slices.Equal(found, []string{"damaged bbbb", "unchecked cccc"}) {
		t.Errorf("Verify: %d stages, %d damaged, %d unchecked, %v; found %v", n, damaged, unchecked, err, found)
	}
	if _, _, _, err := (&Cache{Root: filepath.Join(c.Root, "none")}).Verify(func(Verified) {}); err == nil {
		t.Error("Verify of a missing cache: no error")
	}
}

// TestGC: the stages not kept and the strays are reported and, unless
// dry, removed; kept stages stay.
func TestGC(t *testing.T) {
	for _, tc := range []struct {
		name string
		dry  bool
		keep map[string]bool
		want []string // removed stages' keys
	}{
		{"dry run", true, map[string]bool{"k/aaaa": true}, []string{"bbbb"}},
		{"remove", false, map[string]bool{"k/aaaa": true}, []string{"bbbb"}},
		{"keep all", false, map[string]bool{"k/aaaa": true, "k/bbbb": true}, nil},
		{"keep none", false, nil, []string{"aaaa", "bbbb"}},
	} {
		c := &Cache{Root: t.TempDir()}
		commitStage(t, c, "aaaa")
		commitStage(t, c, "bbbb")
		stray := filepath.Join(c.Root, "locks")
		if err := os.WriteFile(stray, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		var removed, strays []string
		res, err := c.GC(tc.keep, tc.dry, func(e Entry) { removed = append(removed, e.Key) }, func(s Stray) { strays = append(strays, s.Path) })
		if err != nil || !slices.Equal(removed, tc.want) || !slices.Equal(strays, []string{stray}) ||
			res.Stages != 2 || res.Removed != len(tc.want) || (res.Bytes > 0) != (len(tc.want) > 0) {
			t.Errorf("%s: %+v, %v; removed %v, strays %v", tc.name, res, err, removed, strays)
		}
		for _, key := range []string{"aaaa", "bbbb"} {
			gone := slices.Contains(tc.want, key) && !tc.dry
			if _, err := os.Stat(c.StageDir("k", key)); os.IsNotExist(err) != gone {
				t.Errorf("%s: stage %s gone: %v, want %v", tc.name, key, os.IsNotExist(err), gone)
			}
		}
		if _, err := os.Stat(stray); os.IsNotExist(err) != !tc.dry {
			t.Errorf("%s: stray gone: %v, want %v", tc.name, os.IsNotExist(err), !tc.dry)
		}
	}
}

// TestFailureMessage: a recorded failure's error, a damaged record's
// stand-in, nothing for a stage that did not fail.
func TestFailureMessage(t *testing.T) {
	c := &Cache{Root: t.TempDir()}
	if err := c.RecordFailure(Failure{Key: "aaaa", Kind: "train", Name: "train x", Error: "diverged"}); err != nil {
		t.Fatal(err)
	}
	if err := c.RecordFailure(Failure{Key: "bbbb", Kind: "train", Name: "train y", Error: "x"}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(c.failurePath("bbbb"), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		key, want string
		ok        bool
	}{
		{"aaaa", "diverged", true},
		{"bbbb", "unknown (damaged failure record)", true},
		{"cccc", "", false},
	} {
		if got, ok := c.FailureMessage(tc.key); got != tc.want || ok != tc.ok {
			t.Errorf("%s: %q, %v; want %q, %v", tc.key, got, ok, tc.want, tc.ok)
		}
	}
}
