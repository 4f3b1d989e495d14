package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// runPaperSmoke runs `spn run spec --out out` with env (two jobs of one
// thread), fails the test unless it succeeds and wrote every table of
// tables in every format, and returns the run's result and results.md.
func runPaperSmoke(t *testing.T, spec, cacheDir, out string, env []string, tables ...string) (result, []byte) {
	t.Helper()
	r := spn(realEngine(), cacheDir, append([]string{"run", spec, "--out", out, "--jobs", "2", "--threads", "1"}, env...)...)
	if r.code != exitOK {
		t.Fatalf("run: exit %d:\n%s", r.code, r.stderr)
	}
	for _, table := range tables {
		for _, ext := range []string{"tex", "md", "csv"} {
			if fi, err := os.Stat(filepath.Join(out, table+"."+ext)); err != nil || fi.Size() == 0 {
				t.Errorf("%s.%s not written: %v", table, ext, err)
			}
		}
	}
	md, err := os.ReadFile(filepath.Join(out, "results.md"))
	if err != nil {
		t.Fatal(err)
	}
	return r, md
}

// checkCompleteRows requires each row of the Markdown table md to hold a
// mean ± std in each of its cols columns.
func checkCompleteRows(t *testing.T, md []byte, cols int, rows ...string) {
	t.Helper()
	cell := `\*{0,2}\d+\.\d\*{0,2} ± \d+\.\d`
	for _, row := range rows {
		re := regexp.MustCompile(`(?m)^\| ` + regexp.QuoteMeta(row) + strings.Repeat(` \| `+cell, cols) + ` \|$`)
		if !re.Match(md) {
			t.Errorf("results.md has no complete row %q:\n%s", row, md)
		}
	}
}

// checkTableRegenerates requires `spn table spec --out out2` to print what
// the run printed (run) and to write the same bytes as the run wrote in out1.
func checkTableRegenerates(t *testing.T, spec, cacheDir, out1, out2 string, env []string, run result) {
	t.Helper()
	r := spn(realEngine(), cacheDir, append([]string{"table", spec, "--out", out2}, env...)...)
	if r.code != exitOK || r.stdout != run.stdout {
		t.Errorf("table: exit %d, stdout differs from run's: %s", r.code, r.stderr)
	}
	sameFiles(t, out1, out2)
}
