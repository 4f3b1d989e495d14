package schema

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// SpecFiles keeps files, expands a directory to its .cue files in order
// (cue.mod skipped) and refuses a directory without any.
func TestSpecFiles(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"b.cue", "a/x.cue", "cue.mod/m.cue", "c.txt"} {
		p := filepath.Join(dir, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := SpecFiles([]string{filepath.Join(dir, "c.txt"), dir})
	want := []string{filepath.Join(dir, "c.txt"), filepath.Join(dir, "a", "x.cue"), filepath.Join(dir, "b.cue")}
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("SpecFiles = %v, %v; want %v", got, err, want)
	}
	if _, err := SpecFiles([]string{filepath.Join(dir, "cue.mod")}); err == nil {
		t.Error("a directory of cue.mod files only: no error")
	}
}
