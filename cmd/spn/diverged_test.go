package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spn-project/spn/models/kernels"
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
	// spn status says what computed the cached results, diverged ones too.
	out.Reset()
	if code := a.main([]string{"status", "testdata/diverged.cue", "--cache", filepath.Join(dir, "cache")}); code != exitOK {
		t.Fatalf("status: exit %d: %s", code, errb.String())
	}
	var lines []string
	for _, l := range strings.Split(out.String(), "\n") {
		if strings.HasPrefix(l, "cached train results computed on ") {
			lines = append(lines, l)
		}
	}
	if want := "cached train results computed on cpu, " + kernels.GEMM + ": "; len(lines) != 1 || !strings.HasPrefix(lines[0], want) {
		t.Errorf("status: compute lines %q, want one starting %q", lines, want)
	}
}
