// Package mirrortest locates the offline data mirror for tests: the
// directory named by SPN_DATA_MIRROR, or ../shared/data next to the
// repository root (the directory holding go.mod).
package mirrortest

import (
	"os"
	"path/filepath"
	"testing"
)

// Dir returns the mirror directory, skipping the test when it is absent.
func Dir(t testing.TB) string {
	t.Helper()
	if d := os.Getenv("SPN_DATA_MIRROR"); d != "" {
		if _, err := os.Stat(d); err != nil {
			t.Skipf("SPN_DATA_MIRROR=%s: %v", d, err)
		}
		return d
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			m := filepath.Join(d, "..", "shared", "data")
			if _, err := os.Stat(filepath.Join(m, "tu")); err != nil {
				t.Skipf("offline data mirror not found at %s (set SPN_DATA_MIRROR)", m)
			}
			return m
		}
		if filepath.Dir(d) == d {
			t.Skip("repository root (go.mod) not found; set SPN_DATA_MIRROR")
		}
	}
}

// TUZip returns the path of a TU zip of the mirror.
func TUZip(t testing.TB, name string) string {
	return filepath.Join(Dir(t), "tu", name+".zip")
}

// Splits returns the path of an Errica split file of the mirror.
func Splits(t testing.TB, name string) string {
	return filepath.Join(Dir(t), "splits", "errica", name+"_splits.json")
}

// PaperDir returns the directory of the paper's source and numbers
// (paper.tex, results.json): the mirror's sibling "paper", i.e.
// $SPN_DATA_MIRROR/../paper or ../shared/paper next to the repository
// root. When it is absent the test is skipped, or fails when CI=true (a CI
// run must check the paper's numbers).
func PaperDir(t testing.TB) string {
	t.Helper()
	missing := func(format string, args ...any) {
		t.Helper()
		if os.Getenv("CI") == "true" {
			t.Fatalf(format+" (CI=true: the paper's numbers must be checked)", args...)
		}
		t.Skipf(format, args...)
	}
	mirror := os.Getenv("SPN_DATA_MIRROR")
	if mirror == "" {
		wd, err := os.Getwd()
		if err != nil {
			t.Fatal(err)
		}
		for d := wd; mirror == ""; d = filepath.Dir(d) {
			if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
				mirror = filepath.Join(d, "..", "shared", "data")
			} else if filepath.Dir(d) == d {
				missing("repository root (go.mod) not found; set SPN_DATA_MIRROR")
				return ""
			}
		}
	}
	p := filepath.Join(mirror, "..", "paper")
	if _, err := os.Stat(filepath.Join(p, "results.json")); err != nil {
		missing("the paper's numbers not found at %s (the data mirror's sibling; set SPN_DATA_MIRROR): %v", p, err)
		return ""
	}
	return p
}
