package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spn-project/spn/stages/cache"
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
	// Entries of another batch size (the spec's is 8) still estimate, and
	// are listed.
	b, err := os.ReadFile("testdata/tiny_calibration.json")
	if err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(t.TempDir(), "cal.json")
	if err := os.WriteFile(other, bytes.ReplaceAll(b, []byte(`"graphs": 120,`), []byte(`"graphs": 120, "batch_size": 32,`)), 0o644); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if code := a.main([]string{"plan", "--cost", "testdata/slurm_tiny.cue", "--calibration", other, "--cache", t.TempDir()}); code != exitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	for _, want := range []string{
		"       train       8       8              5.0                 5.0",
		"estimated from another configuration: prox(h=2) gin k=1 batch 8 (from batch 32); run spn calibrate on this spec",
		"estimated from another configuration: prox(h=2) spn k=3 batch 8 (from batch 32); run spn calibrate on this spec",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("with batch size 32 entries, output lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	errb.Reset()
	code = a.main([]string{"plan", "--cost", "testdata/slurm_tiny.cue", "--calibration", "testdata/none.json"})
	if code != exitFail || !strings.Contains(errb.String(), "spn calibrate testdata/slurm_tiny.cue --out testdata/none.json") {
		t.Errorf("missing calibration: exit %d: %s", code, errb.String())
	}
}

// A calibration measured on one device does not estimate another's
// stages: plan --cost names both and how to measure the right one.
func TestPlanCostDevice(t *testing.T) {
	b, err := os.ReadFile("testdata/tiny_calibration.json")
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	m["device"] = "cuda:0"
	b, err = json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	gpuCal := filepath.Join(t.TempDir(), "gpu.json")
	if err := os.WriteFile(gpuCal, b, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		cal, device, want string
	}{
		{gpuCal, "", gpuCal + ": calibration measured on cuda:0, but the stages run on cpu (spn calibrate testdata/slurm_tiny.cue --device cpu --out FILE measures one)"},
		{"testdata/tiny_calibration.json", "cuda:1", "testdata/tiny_calibration.json: calibration measured on cpu, but the stages run on cuda:1 (spn calibrate testdata/slurm_tiny.cue --device cuda:1 --out FILE measures one)"},
	} {
		var out, errb bytes.Buffer
		a := &app{stdout: &out, stderr: &errb, getenv: func(string) string { return "" }}
		args := []string{"plan", "--cost", "testdata/slurm_tiny.cue", "--calibration", c.cal, "--cache", t.TempDir()}
		if c.device != "" {
			args = append(args, "--device", c.device)
		}
		if code := a.main(args); code != exitFail || !strings.Contains(errb.String(), c.want) {
			t.Errorf("%v: exit %d: %s\nwant %q", args, code, errb.String(), c.want)
		}
	}
}

// spn status counts stages per kind and lists recorded failures.
func TestStatus(t *testing.T) {
	dir := t.TempDir()
	var out, errb bytes.Buffer
	a := &app{stdout: &out, stderr: &errb, getenv: func(string) string { return "" }}
	// Record a failure of the first stage as a Slurm job would.
	var pj bytes.Buffer
	a.stdout = &pj
	if code := a.main([]string{"plan", "--json", "testdata/slurm_tiny.cue", "--cache", dir}); code != exitOK {
		t.Fatalf("plan: %s", errb.String())
	}
	var nodes []struct{ Key, Kind, Name string }
	if err := json.Unmarshal(pj.Bytes(), &nodes); err != nil {
		t.Fatal(err)
	}
	c, err := cache.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.RecordFailure(cache.Failure{Key: nodes[0].Key, Kind: nodes[0].Kind, Name: nodes[0].Name, Error: "disk full"}); err != nil {
		t.Fatal(err)
	}
	a.stdout = &out
	if code := a.main([]string{"status", "testdata/slurm_tiny.cue", "--cache", dir}); code != exitOK {
		t.Fatalf("status: exit %d: %s", code, errb.String())
	}
	for _, want := range []string{
		"kind  cached  running  queued  failed  to run",
		"generate       0        0       0       1       0",
		"total       0        0       0       1      14",
		"failed " + nodes[0].Name + ": disk full",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("status lacks %q:\n%s", want, out.String())
		}
	}
}
