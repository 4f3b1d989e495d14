// Package golden compares a test's output with a golden file and rewrites
// the file on request. Every golden file of spn's tests goes through Check.
//
// To rewrite golden files instead of comparing them, set
// SPN_UPDATE_GOLDEN=1:
//
//	SPN_UPDATE_GOLDEN=1 go test ./...
//	SPN_UPDATE_GOLDEN=1 go test ./stages/plan
//
// The environment variable reaches every test binary, including those
// that have no golden file, which is why it is the mechanism rather than a
// flag: `go test ./... -update` would fail in every package whose test
// binary does not define -update. For a package whose tests use golden
// files, the -update flag this package registers does the same:
//
//	go test ./stages/plan -update
//
// Review the rewritten files with git diff before committing them.
package golden

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// EnvUpdate is the environment variable that, set to 1, makes Check
// rewrite the golden files.
const EnvUpdate = "SPN_UPDATE_GOLDEN"

var updateFlag = flag.Bool("update", false, "rewrite golden files instead of comparing them (same as "+EnvUpdate+"=1)")

// Update reports whether golden files are to be rewritten: -update was
// given or SPN_UPDATE_GOLDEN is 1.
func Update() bool { return *updateFlag || os.Getenv(EnvUpdate) == "1" }

// Check compares got with the golden file at path (relative to the test's
// package directory, e.g. "testdata/plan.json.golden"). When updating it
// writes got to path instead, creating the directory.
func Check(t testing.TB, path string, got []byte) {
	t.Helper()
	if Update() {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading golden file: %v (%s=1 go test writes it)", err, EnvUpdate)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("output differs from %s (%s=1 go test rewrites it)\n%s", path, EnvUpdate, Diff(string(got), string(want)))
	}
}

// CheckString is Check for a string.
func CheckString(t testing.TB, path, got string) {
	t.Helper()
	Check(t, path, []byte(got))
}

// maxShown is how many lines of got and want Diff shows in full.
const maxShown = 60

// Diff describes how got differs from want: the first differing line,
// then both texts when they are short enough to read.
func Diff(got, want string) string {
	gl, wl := strings.Split(got, "\n"), strings.Split(want, "\n")
	line := min(len(gl), len(wl))
	for i := range line {
		if gl[i] != wl[i] {
			line = i
			break
		}
	}
	var b strings.Builder
	b.WriteString("first difference at line " + strconv.Itoa(line+1) + ":\n")
	b.WriteString(" got: " + at(gl, line) + "\n")
	b.WriteString("want: " + at(wl, line) + "\n")
	if len(gl) <= maxShown && len(wl) <= maxShown {
		b.WriteString("--- got\n" + got + "\n--- want\n" + want)
	}
	return b.String()
}

// at returns line i of lines, or a marker past the end.
func at(lines []string, i int) string {
	if i < len(lines) {
		return lines[i]
	}
	return "(end of text)"
}
