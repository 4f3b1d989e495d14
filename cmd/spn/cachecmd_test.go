package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCacheVerifyAndGC(t *testing.T) {
	dir := t.TempDir()
	cacheDir := filepath.Join(dir, "cache")
	if r := spn(testEngine(), cacheDir, "run", "testdata/small.cue", "--out", filepath.Join(dir, "out")); r.code != exitOK {
		t.Fatalf("run: exit %d: %s", r.code, r.stderr)
	}
	cmd := func(args ...string) result {
		var out, errb syncBuffer
		a := &app{stdout: &out, stderr: &errb, getenv: func(string) string { return "" }}
		code := a.exit(a.cache(testEngine(), append(args, "--cache", cacheDir)))
		return result{code, out.String(), errb.String()}
	}
	r := cmd("verify")
	if r.code != exitOK || r.stdout != "24 stages: 24 intact, 0 damaged, 0 without checksums\n" {
		t.Fatalf("verify: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	// Damage one checkpoint: verify names it and exits 1.
	models, _ := filepath.Glob(filepath.Join(cacheDir, "train", "*", "*", "model.bin"))
	if len(models) == 0 {
		t.Fatal("no model.bin in the cache")
	}
	os.WriteFile(models[0], []byte("modem"), 0o644)
	r = cmd("verify")
	if r.code != exitFail || !strings.Contains(r.stdout, models[0]+": checksum mismatch") || !strings.Contains(r.stdout, "24 stages: 23 intact, 1 damaged") {
		t.Fatalf("verify after damage: exit %d: %s", r.code, r.stdout)
	}

	// A spec with one experiment of small.cue's keeps only its stages.
	src, _ := os.ReadFile("testdata/small.cue")
	one := strings.Replace(string(src), `name: "small"`, `name: "one"`, 1)
	one = one[:strings.Index(one, "\tspn: {")] + "}\n" + `tables: main: {
	formats: ["csv"]
	columns: [{key: "prox", header: "3-Prox"}]
	rows: [{label: "GIN", cells: prox: experiment: "gin"}]
}
`
	one = strings.Replace(one, "experiments: {\n", "experiments: {\n", 1)
	spec := filepath.Join(dir, "one.cue")
	os.WriteFile(spec, []byte(one), 0o644)
	r = cmd("gc", "--dry-run", spec)
	if r.code != exitOK || !strings.Contains(r.stdout, "would remove train") || strings.Contains(r.stdout, "generate prox") {
		t.Fatalf("gc --dry-run: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	if v := cmd("verify"); !strings.Contains(v.stdout, "24 stages") {
		t.Fatalf("dry run removed stages: %s", v.stdout)
	}
	r = cmd("gc", spec)
	if r.code != exitOK || !strings.Contains(r.stdout, "removed") {
		t.Fatalf("gc: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	// The full spec plans again from what is left: gin is still cached.
	p := spn(testEngine(), cacheDir, "plan", "testdata/small.cue")
	if !strings.Contains(p.stdout, "cached  evaluate") || !strings.Contains(p.stdout, "to run  evaluate") {
		t.Errorf("plan after gc:\n%s", p.stdout)
	}
	// Nothing to keep named: a usage error.
	if r := cmd("gc"); r.code != exitUsage {
		t.Errorf("gc without specs: exit %d", r.code)
	}
	if r := cmd("gc", filepath.Join(dir, "missing.cue")); r.code != exitUsage {
		t.Errorf("gc with a missing spec: exit %d", r.code)
	}
}
