package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestSlurmStageArgs: the jobs' `spn stage run` gets the submitting run's
// cache, data dir, mirror, log level and --accept-data-mismatch, so an
// override accepted locally is not refused on the cluster.
func TestSlurmStageArgs(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    envOpts
		want []string
	}{
		{"plain", envOpts{dataSource: dataSource{dataDir: "/d"}, logLevel: "info"},
			[]string{"--cache", "/c", "--data-dir", "/d", "--log-level", "info"}},
		{"mirror and override", envOpts{dataSource: dataSource{dataDir: "/d", mirror: "/m", acceptMismatch: true}, logLevel: "warn"},
			[]string{"--cache", "/c", "--data-dir", "/d", "--log-level", "warn", "--mirror", "/m", "--accept-data-mismatch"}},
	} {
		if got := tc.o.stageArgs("/c"); !slices.Equal(got, tc.want) {
			t.Errorf("%s: stageArgs = %q, want %q", tc.name, got, tc.want)
		}
	}
}

// A task index below zero (from SLURM_ARRAY_TASK_ID) is a usage error
// naming it, not a panic.
func TestStageRunNegativeTask(t *testing.T) {
	dir := t.TempDir()
	tasks := filepath.Join(dir, "tasks")
	os.WriteFile(tasks, []byte("k1\nk2\n"), 0o644)
	var out, errb bytes.Buffer
	a := &app{stdout: &out, stderr: &errb, getenv: func(k string) string {
		if k == "SLURM_ARRAY_TASK_ID" {
			return "-2"
		}
		return ""
	}}
	code := a.main([]string{"stage", "run", "--plan", filepath.Join(dir, "plan.json"), "--tasks", tasks, "--cache", filepath.Join(dir, "cache")})
	if code != exitUsage || !strings.Contains(errb.String(), "no task -2") {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
}
