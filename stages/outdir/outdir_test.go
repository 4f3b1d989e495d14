package outdir

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Prepare refuses a directory recorded for another spec unless told to
// take it over; Record and Prune keep the list of spn's files and remove
// only those no longer written.
func TestPrepareRecordPrune(t *testing.T) {
	out := filepath.Join(t.TempDir(), "results", "s")
	a := Record{Path: "/a.cue", SHA256: "aaaa"}
	d, err := Prepare(out, a, "s", false, false)
	if err != nil || d.Path != out {
		t.Fatalf("fresh directory: %+v, %v", d, err)
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("Prepare created the directory")
	}
	if err := d.Record([]string{"t1.txt", "t2.txt"}); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"t1.txt", "t2.txt", "mine.txt"} {
		if err := os.WriteFile(filepath.Join(out, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b := Record{Path: "/b.cue", SHA256: "bbbb"}
	var ce *ConflictError
	if _, err := Prepare(out, b, "s", false, false); !errors.As(err, &ce) || !strings.Contains(err.Error(), `another spec named "s"`) {
		t.Errorf("another spec: %v, want a ConflictError", err)
	}
	d, err = Prepare(out, b, "s", true, true)
	if err != nil {
		t.Fatalf("take over: %v", err)
	}
	old := d.Previous()
	if !slices.Equal(old, []string{"t1.txt", "t2.txt"}) {
		t.Errorf("previous files %v", old)
	}
	if err := d.Prune(old, []string{"t2.txt"}); err != nil {
		t.Fatal(err)
	}
	for f, want := range map[string]bool{"t1.txt": false, "t2.txt": true, "mine.txt": true} {
		if _, err := os.Stat(filepath.Join(out, f)); (err == nil) != want {
			t.Errorf("%s exists: %v, want %v", f, err == nil, want)
		}
	}
	if got := d.Previous(); !slices.Equal(got, []string{"t2.txt"}) {
		t.Errorf("after prune: %v", got)
	}
}

// ProbeWritable refuses a path under a file.
func TestProbeWritableFile(t *testing.T) {
	f := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(f, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := ProbeWritable(filepath.Join(f, "x")); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("under a file: %v", err)
	}
}
