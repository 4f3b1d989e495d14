package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spn-project/spn/internal/testkit/golden"
)

// quickstartSpec is the quickstart pipeline, relative to this package.
const quickstartSpec = "../../pipelines/quickstart.cue"

// spn plan --summary, against the cache of the quickstart run in smoke
// mode (≈ 10 CPU-seconds): Table 3 has nothing cached and its train
// stages cost the CPU-hours of a calibration (performance.md's Table 3
// seconds per epoch); the quickstart in smoke mode is all cached; in full
// mode it shares the smoke run's dataset stages and trains anew.
func TestPlanSummaryTable3(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the quickstart's cache (a smoke run)")
	}
	dir := t.TempDir()
	cacheDir := filepath.Join(dir, "cache")
	r := spn(realEngine(), cacheDir, "run", quickstartSpec, "--mode", "smoke", "--out", filepath.Join(dir, "out"), "--log-level", "error")
	if r.code != exitOK {
		t.Fatalf("quickstart smoke run: exit %d\n%s", r.code, r.stderr)
	}
	var b strings.Builder
	for _, args := range [][]string{
		{"plan", "--summary", table3Spec, "--calibration", "testdata/table3_calibration.json"},
		{"plan", "--summary", quickstartSpec, "--mode", "smoke"},
		{"plan", "--summary", quickstartSpec},
	} {
		r := spn(realEngine(), cacheDir, args...)
		if r.code != exitOK {
			t.Fatalf("%s: exit %d\n%s", args, r.code, r.stderr)
		}
		b.WriteString("$ spn " + strings.Join(args, " ") + "\n" + r.stdout)
	}
	golden.CheckString(t, "testdata/plan_summary.golden", b.String())
}

// spn plan --format reports a spec's problems as spn vet does, before it
// plans anything; a bad format is a usage error.
func TestPlanFormat(t *testing.T) {
	const file = "../../schema/testdata/allmodes/smoke_only.cue"
	for format, want := range map[string]string{
		"github": "::error file=" + file + ",line=11,col=29,title=spn schema (smoke)::experiments.e.model.pool: conflicting values",
		"json":   `"mode": "smoke",`,
		"sarif":  `"ruleId": "spn/schema",`,
	} {
		var out, errb bytes.Buffer
		a := &app{stdout: &out, stderr: &errb, getenv: func(string) string { return "" }}
		code := a.main([]string{"plan", file, "--mode", "smoke", "--format", format, "--cache", t.TempDir()})
		if code != exitUsage || !strings.Contains(out.String(), want) || errb.Len() != 0 {
			t.Errorf("%s: exit %d, stdout lacks %q:\n%s\nstderr:\n%s", format, code, want, out.String(), errb.String())
		}
	}
	var out, errb bytes.Buffer
	a := &app{stdout: &out, stderr: &errb, getenv: func(string) string { return "" }}
	if code := a.main([]string{"plan", file, "--format", "xml"}); code != exitUsage || !strings.Contains(errb.String(), `format "xml" is not one of`) {
		t.Errorf("--format xml: exit %d: %s", code, errb.String())
	}
}
