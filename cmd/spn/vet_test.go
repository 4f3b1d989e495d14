package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spn-project/spn/internal/testkit/golden"
)

// vetRun runs `spn vet args...` and returns its exit code and outputs.
func vetRun(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	a := &app{stdout: &out, stderr: &errb, getenv: func(string) string { return "" }}
	code = a.main(append([]string{"vet"}, args...))
	return code, out.String(), errb.String()
}

// TestVet checks exit codes and output of spn vet, the output against
// golden files under testdata/vet (go test -update rewrites them).
func TestVet(t *testing.T) {
	empty := t.TempDir()
	bad := filepath.Join("..", "..", "schema", "testdata", "bad")
	smokeOnly := filepath.Join("..", "..", "schema", "testdata", "allmodes", "smoke_only.cue")
	tests := []struct {
		name     string
		args     []string
		wantCode int
	}{
		{"good_dir", []string{filepath.Join("..", "..", "schema", "testdata", "good")}, exitOK},
		{"smoke_mode", []string{"--mode", "smoke", filepath.Join("..", "..", "pipelines", "quickstart.cue")}, exitOK},
		{"good_and_bad", []string{
			filepath.Join("..", "..", "schema", "testdata", "good", "grid.cue"),
			filepath.Join(bad, "gin_k5.cue"),
			filepath.Join(bad, "unknown_model_kind.cue"),
		}, exitUsage},
		{"help", []string{"-h"}, exitOK},
		{"no_args", nil, exitUsage},
		{"bad_mode", []string{"--mode", "fast", "x.cue"}, exitUsage},
		{"bad_flag", []string{"--bogus"}, exitUsage},
		{"missing_file", []string{"testdata/vet/does-not-exist.cue"}, exitUsage},
		// Valid in full, broken in smoke: every mode is vetted by default.
		{"smoke_fault", []string{smokeOnly}, exitUsage},
		{"smoke_fault_all_modes", []string{"--all-modes", smokeOnly, filepath.Join("..", "..", "pipelines", "quickstart.cue")}, exitUsage},
		{"smoke_fault_full", []string{"--mode", "full", smokeOnly}, exitOK},
		{"all_modes_and_mode", []string{"--all-modes", "--mode", "smoke", smokeOnly}, exitUsage},
		{"format_json", []string{"--format", "json", smokeOnly, filepath.Join(bad, "gin_k5.cue")}, exitUsage},
		{"format_github", []string{"--format", "github", smokeOnly, filepath.Join(bad, "gin_k5.cue")}, exitUsage},
		{"format_sarif_ok", []string{"--format", "sarif", filepath.Join("..", "..", "pipelines", "quickstart.cue")}, exitOK},
		{"bad_format", []string{"--format", "xml", smokeOnly}, exitUsage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := vetRun(tt.args...)
			if code != tt.wantCode {
				t.Errorf("exit code %d, want %d\nstderr:\n%s", code, tt.wantCode, stderr)
			}
			golden.CheckString(t, filepath.Join("testdata", "vet", tt.name+".golden"), "stdout:\n"+stdout+"stderr:\n"+stderr)
		})
	}

	code, _, stderr := vetRun(empty)
	if code != exitUsage || !strings.Contains(stderr, "no .cue files under") {
		t.Errorf("empty directory: code %d, stderr %q", code, stderr)
	}
}

// TestVetPipelines checks that every spec shipped under pipelines/ is
// valid in both modes.
func TestVetPipelines(t *testing.T) {
	for _, mode := range []string{"full", "smoke", ""} {
		args := []string{"--mode", mode}
		if mode == "" {
			args = []string{"--all-modes"} // every mode each spec defines
		}
		code, stdout, stderr := vetRun(append(args, filepath.Join("..", "..", "pipelines"))...)
		if code != exitOK || stderr != "" || !strings.Contains(stdout, "ok ") {
			t.Errorf("mode %s: code %d\nstdout:\n%s\nstderr:\n%s", mode, code, stdout, stderr)
		}
	}
}

// TestVetAllBadSpecs checks that every malformed spec of the schema's
// test data fails spn vet with at least one positioned line.
func TestVetAllBadSpecs(t *testing.T) {
	dir := filepath.Join("..", "..", "schema", "testdata", "bad")
	code, stdout, stderr := vetRun(dir)
	if code != exitUsage {
		t.Errorf("exit code %d, want %d", code, exitUsage)
	}
	if stdout != "" {
		t.Errorf("a malformed spec was reported ok:\n%s", stdout)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.cue"))
	for _, f := range files {
		if !strings.Contains(stderr, f+":") {
			t.Errorf("no error line for %s", f)
		}
	}
}
