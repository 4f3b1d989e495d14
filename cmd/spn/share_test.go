package main

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/spn-project/spn/stages/train"
)

// TestSharedRunSameTables: the default run (the stages share the cores)
// writes the same table bytes as fixed --jobs/--threads settings, and says
// that it shares the cores.
func TestSharedRunSameTables(t *testing.T) {
	dir := t.TempDir()
	spec := filepath.Join(dir, "share.cue")
	src := `package spn

name: "share"
mode: "smoke"
experiments: {
	gin: {
		dataset: {kind: "prox", h: 3, graphs: 60, folds: 3, kmax: 3}
		model: kind: "gin"
		training: epochs: 3
		protocol: {splits: 2, runs: 1}
	}
	spn: {
		dataset: {kind: "prox", h: 3, graphs: 60, folds: 3, kmax: 3}
		model: kind: "spn"
		grid: "model.k": [1, 3]
		training: epochs: 3
		protocol: {splits: 2, runs: 1}
	}
}
tables: main: {
	formats: ["markdown", "csv"]
	columns: [{key: "prox", header: "3-Prox"}]
	rows: [
		{label: "GIN", cells: prox: experiment: "gin"},
		{label: "SPN", cells: prox: experiment: "spn"},
	]
}
`
	if err := os.WriteFile(spec, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	var outs []string
	var stdout string
	for i, flags := range [][]string{nil, {"--jobs", "1", "--threads", "2"}, {"--jobs", "2", "--threads", "1"}} {
		out := filepath.Join(dir, "out", string(rune('a'+i)))
		r := spn(realEngine(), filepath.Join(dir, "cache", string(rune('a'+i))), append([]string{"run", spec, "--out", out}, flags...)...)
		if r.code != exitOK {
			t.Fatalf("run %v: exit %d:\n%s", flags, r.code, r.stderr)
		}
		if flags == nil {
			if want := "(sharing " + strconv.Itoa(runtime.NumCPU()) + " cores)"; !strings.Contains(r.stderr, want) || !strings.Contains(r.stderr, "sharing the cores: running=") {
				t.Errorf("default run's log lacks %q or the scheduler's lines:\n%s", want, r.stderr)
			}
			stdout = r.stdout
		} else if r.stdout != stdout {
			t.Errorf("run %v printed other tables", flags)
		}
		outs = append(outs, out)
	}
	sameFiles(t, outs[0], outs[1])
	sameFiles(t, outs[0], outs[2])
}

// TestSharedRunOptions: the default run shares at least one core and
// estimates and caps memory.
func TestSharedRunOptions(t *testing.T) {
	o := sharedRun(0, "/nonexistent/meminfo", (train.Kind{}).Registry())
	if o.Cores != 1 || o.Memory == nil || o.Available == nil {
		t.Errorf("sharedRun(0): %+v", o)
	}
}
