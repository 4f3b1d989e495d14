package main

import (
	"bytes"
	"strings"
	"testing"
)

// spn plan --cost prints CPU-hours per kind from a calibration file; a
// missing calibration is a clear error naming the command that makes one.
func TestPlanCost(t *testing.T) {
	var out, errb bytes.Buffer
	a := &app{stdout: &out, stderr: &errb, getenv: func(string) string { return "" }}
	code := a.main([]string{"plan", "--cost", "testdata/slurm_tiny.cue", "--calibration", "testdata/tiny_calibration.json",
		"--cache", t.TempDir()})
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	// gin: 2 holdout trains × 6 epochs × 600 s = 2 h; spn k=1: 2 select
	// trains × 6 × 300 s = 1 h; spn k=3 (nearest k=1): 1 h; 2 finals at
	// the fold mean (300·6 s) = 1 h; generate 1 h.
	for _, want := range []string{
		"    generate       1       1              1.0                 1.0",
		"       train       8       8              5.0                 5.0",
		"       total      15      15              6.0                 6.0",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	errb.Reset()
	code = a.main([]string{"plan", "--cost", "testdata/slurm_tiny.cue", "--calibration", "testdata/none.json"})
	if code != exitFail || !strings.Contains(errb.String(), "spn calibrate testdata/slurm_tiny.cue --out testdata/none.json") {
		t.Errorf("missing calibration: exit %d: %s", code, errb.String())
	}
}
