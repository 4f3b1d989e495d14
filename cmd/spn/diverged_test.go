package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
)

// TestDivergedGridPoint trains for real a grid whose lr 1e6 point
// diverges: the run succeeds, both protocols pick the other point, and the
// table's caption names the excluded point.
func TestDivergedGridPoint(t *testing.T) {
	if testing.Short() {
		t.Skip("trains for real")
	}
	dir := t.TempDir()
	var out, errb bytes.Buffer
	a := &app{stdout: &out, stderr: &errb, getenv: func(string) string { return "" }}
	code := a.main([]string{"run", "testdata/diverged.cue", "--cache", filepath.Join(dir, "cache"), "--out", filepath.Join(dir, "out"), "--log-level", "error"})
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	// The losses differ between GEMM builds: no golden, the essentials.
	for _, want := range []string{"│ SPN │ 50.0 ± 0.0 │ 50.0 ± 0.0 │", "hold: grid point 1 (training.lr=1e+06) excluded from selection: run 0 diverged (training diverged: loss",
		"err: split 0: grid point 1 (training.lr=1e+06) excluded"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("stdout lacks %q", want)
		}
	}
}
