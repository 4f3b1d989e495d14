package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spn-project/spn/internal/testkit/mirrortest"
)

// table3Spec is the paper's Table 3 pipeline, relative to this package.
const table3Spec = "../../pipelines/paper/table3_tu.cue"

// TestTable3Smoke runs pipelines/paper/table3_tu.cue in smoke mode end to
// end through the real stage kinds on the mirrored TU data (2 outer folds,
// one grid point, 2 epochs): its three tables are written in every format
// with a value in every computed cell, and `spn table` regenerates them
// byte-identically from the cache without running anything.
func TestTable3Smoke(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the Table 3 smoke pipeline on the TU data (minutes)")
	}
	mirror := mirrortest.Dir(t)
	dir := t.TempDir()
	cacheDir := filepath.Join(dir, "cache")
	out1, out2 := filepath.Join(dir, "out1"), filepath.Join(dir, "out2")
	env := []string{"--mode", "smoke", "--mirror", mirror, "--data-dir", filepath.Join(dir, "data"), "--log-level", "error"}

	r, md := runPaperSmoke(t, table3Spec, cacheDir, out1, env, "results", "compare", "paired")
	// Every computed row has a mean ± std in each of the 4 columns (2
	// folds, ddof 0), and the cited rows keep their constants.
	checkCompleteRows(t, md, 4, "Baseline (ours)", "SPN (k = 1)", "SPN (k = 5)", "SPN (k = 10)")
	for _, want := range []string{"| GIN † | 75.3 ± 2.9 |", "| D&D | NCI1 | PROTEINS | ENZYMES |"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("results.md lacks %q:\n%s", want, md)
		}
	}
	// The paired table holds k = 5 and k = 10 against k = 1, fold by
	// fold, in every column.
	paired, err := os.ReadFile(filepath.Join(out1, "paired.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"5", "10"} {
		re := regexp.MustCompile(`(?m)^\| k = ` + k + ` − k = 1` + strings.Repeat(` \| -?\d+\.\d ± \d+\.\d`, 4) + ` \|$`)
		if !re.Match(paired) {
			t.Errorf("paired.md has no complete row k = %s − k = 1:\n%s", k, paired)
		}
	}
	tex, err := os.ReadFile(filepath.Join(out1, "results.tex"))
	if err != nil || !strings.Contains(string(tex), `D\&D`) || !strings.Contains(string(tex), `\label{tab:tu}`) {
		t.Errorf("results.tex (%v):\n%s", err, tex)
	}

	// table regenerates the same bytes and the same terminal output.
	checkTableRegenerates(t, table3Spec, cacheDir, out1, out2, env, r)
	r3 := spn(realEngine(), cacheDir, append([]string{"plan", table3Spec}, env...)...)
	if !strings.HasSuffix(r3.stdout, "123 stages: 123 cached, 0 to run\n") {
		t.Errorf("plan after run:\n%s", r3.stdout)
	}
}
