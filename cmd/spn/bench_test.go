package main

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spn-project/spn/stages/train"
)

// benchRun runs `spn bench ARGS` with SPN_DATA set to a temporary dir.
func benchRun(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	env := map[string]string{envDataDir: t.TempDir()}
	a := &app{stdout: &out, stderr: &errb, getenv: func(k string) string { return env[k] }}
	code = a.main(append([]string{"bench"}, args...))
	return code, out.String(), errb.String()
}

// benchJSON runs `spn bench ARGS --json`, which must succeed, and returns
// its report.
func benchJSON(t *testing.T, args ...string) train.BenchReport {
	t.Helper()
	code, out, errs := benchRun(t, append(args, "--json")...)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var rep train.BenchReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("JSON: %v\n%s", err, out)
	}
	return rep
}

// TestBenchProx trains a small generated workload and checks the JSON
// report and the table.
func TestBenchProx(t *testing.T) {
	rep := benchJSON(t, "prox", "--graphs", "40", "--layers", "2", "--hidden", "8", "--k", "3")
	if len(rep.Workloads) != 1 {
		t.Fatalf("workloads: %+v", rep.Workloads)
	}
	w := rep.Workloads[0]
	if w.Workload != "3-Prox (40 graphs)" || w.Graphs != 40 || w.Epochs != 1 || w.GraphsPerSec <= 0 || w.GraphsPerCPUSec <= 0 || w.PeakRSSMB <= 0 || w.MeanNodes <= 0 {
		t.Errorf("row %+v", w)
	}
	if rep.Model.K != 3 || rep.Model.Layers != 2 || rep.Model.Hidden != 8 || rep.Training.BatchSize != 32 || rep.Threads != 2 || rep.GEMM == "" {
		t.Errorf("report header %+v", rep)
	}
	code, out, errs := benchRun(t, "prox", "--graphs", "20", "--layers", "1", "--hidden", "4", "--k", "2")
	if code != exitOK || !strings.Contains(out, "graphs/s") || !strings.Contains(out, "3-Prox (20 graphs)") {
		t.Fatalf("table: exit %d:\n%s%s", code, out, errs)
	}
}

// TestBenchWarmup trains two copies with two untimed warm-up epochs each:
// the report counts the one timed epoch alone (the rate times the slowest
// copy's time covers 2 × 40 graphs, not 2 × 3 × 40), and the table's
// header says so.
func TestBenchWarmup(t *testing.T) {
	args := []string{"prox", "--graphs", "40", "--layers", "2", "--hidden", "8", "--k", "3", "--threads", "1", "--jobs", "2", "--warmup", "2"}
	rep := benchJSON(t, args...)
	w := rep.Workloads[0]
	if rep.Warmup != 2 || rep.Training.Epochs != 1 || w.Epochs != 1 || !(w.GraphsPerSec > 0) || !(w.GraphsPerCPUSec > 0) {
		t.Fatalf("report %+v, row %+v; want warmup 2, 1 timed epoch", rep, w)
	}
	// Each copy's rate is 40 graphs over its timed epoch: the sum times
	// the slowest copy's time is at least 80, and far below the 240 of
	// all three epochs of both copies unless the copies' speeds differ
	// threefold.
	if trained := w.GraphsPerSec * w.TrainSeconds; trained < 80*0.999 || trained > 200 {
		t.Errorf("graphs/s %.1f × train s %.3f = %.1f graphs, want about 80 (the timed epoch of two copies)", w.GraphsPerSec, w.TrainSeconds, trained)
	}
	code, out, errs := benchRun(t, args...)
	if code != exitOK || !strings.Contains(out, ", batch 32, 1 epoch(s) after 2 warm-up, 2 copies × 1 threads") {
		t.Fatalf("table: exit %d:\n%s%s", code, out, errs)
	}
}

// TestBenchJobs trains three copies at once: the rate is their sum (above
// any one copy's: each trained every graph), the trained graphs over the
// CPU time count all three, and the header says so.
func TestBenchJobs(t *testing.T) {
	args := []string{"prox", "--graphs", "40", "--layers", "2", "--hidden", "8", "--k", "3", "--threads", "1"}
	rep := benchJSON(t, append(args, "--jobs", "3")...)
	w := rep.Workloads[0]
	if rep.Jobs != 3 || w.Graphs != 40 || w.Epochs != 1 || w.GraphsPerSec <= 0 || w.TrainSeconds <= 0 {
		t.Fatalf("report %+v, row %+v", rep, w)
	}
	// Summed: the rate times the slowest copy's time covers all 3 × 40
	// graphs (each copy was at least as fast as the slowest).
	if trained := w.GraphsPerSec * w.TrainSeconds; trained < 3*40*0.999 {
		t.Errorf("graphs/s %.1f × train s %.3f = %.1f graphs, want ≥ 120 (three copies)", w.GraphsPerSec, w.TrainSeconds, trained)
	}
	code, out, errs := benchRun(t, append(args, "--jobs", "2")...)
	if code != exitOK || !strings.Contains(out, "2 copies × 1 threads (graphs/s summed)") {
		t.Fatalf("table: exit %d:\n%s%s", code, out, errs)
	}
}

// TestBenchProfiles writes the CPU and heap profiles and checks that they
// are pprof files (gzipped protocol buffers, not empty); an unwritable
// path exits 1.
func TestBenchProfiles(t *testing.T) {
	dir := t.TempDir()
	cpu, mem := filepath.Join(dir, "cpu.prof"), filepath.Join(dir, "mem.prof")
	code, _, errs := benchRun(t, "prox", "--graphs", "40", "--layers", "2", "--hidden", "8", "--k", "3",
		"--cpuprofile", cpu, "--memprofile", mem)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, path := range []string{cpu, mem} {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		zr, err := gzip.NewReader(f)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		b, err := io.ReadAll(zr)
		f.Close()
		if err != nil || len(b) == 0 {
			t.Errorf("%s: %d bytes, %v", path, len(b), err)
		}
	}
	code, _, errs = benchRun(t, "prox", "--graphs", "20", "--memprofile", filepath.Join(dir, "no", "such", "mem.prof"))
	if code != exitFail || !strings.Contains(errs, "--memprofile") {
		t.Errorf("unwritable heap profile: exit %d, stderr %q", code, errs)
	}
}

// TestBenchValSize: one validation graph, or for binary multi-task sets
// the shortest prefix with a positive and a negative label of one task.
func TestBenchErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--epochs", "0"}, "--epochs must be at least 1"},
		{[]string{"--warmup", "-1"}, "--warmup must not be negative"},
		{[]string{"--threads", "0"}, "--threads must be at least 1"},
		{[]string{"--jobs", "0"}, "--jobs must be at least 1"},
		{[]string{"--batch", "-1"}, "--batch must be at least 1"},
		{[]string{"--nope"}, "flag provided but not defined"},
		{[]string{"NOSUCH"}, `unknown dataset "NOSUCH"`},
		{[]string{"prox", "--graphs", "40", "--kind", "nosuch"}, "model configuration"},
	} {
		code, _, errs := benchRun(t, tc.args...)
		if code != exitUsage || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and %q", tc.args, code, errs, exitUsage, tc.want)
		}
	}
}

// spn bench -h prints the usage (the h of h-Proximity is --prox-h).
func TestBenchHelp(t *testing.T) {
	code, _, errs := benchRun(t, "-h")
	if code != exitOK || !strings.HasPrefix(errs, "Usage: spn bench [WORKLOAD...]") || !strings.Contains(errs, "-prox-h h") {
		t.Errorf("bench -h: exit %d: %q", code, errs)
	}
}
