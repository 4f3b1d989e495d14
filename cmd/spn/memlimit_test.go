package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// A train stage whose expected peak memory is over what the process can
// have (here GOMEMLIMIT=64MiB; the case was hidden 16k under 3 GiB)
// fails before it starts, naming both figures, instead of dying with a
// Go fatal error; nothing of it enters the cache.
func TestTrainOverMemoryLimit(t *testing.T) {
	dir := t.TempDir()
	spec := filepath.Join(dir, "p.cue")
	big := strings.Replace(predictSpec, "hidden: 8", "hidden: 4096", 1)
	if err := os.WriteFile(spec, []byte(big), 0o644); err != nil {
		t.Fatal(err)
	}
	cacheDir := filepath.Join(dir, "cache")
	var out, errb bytes.Buffer
	env := map[string]string{"GOMEMLIMIT": "64MiB"}
	a := &app{stdout: &out, stderr: &errb, getenv: func(k string) string { return env[k] }}
	code := a.main([]string{"run", spec, "--cache", cacheDir, "--out", filepath.Join(dir, "out"), "--log-level", "error", "--jobs", "1"})
	want := regexp.MustCompile(`train prox\(h=3\) spn k=3 L=2 split=0 run=0: expected peak memory [0-9]+ MiB is over the 64 MiB this process can have \(GOMEMLIMIT\); not started \(--ignore-memory-limit starts it anyway\)`)
	if code != exitFail || !want.MatchString(errb.String()) {
		t.Fatalf("exit %d\n%s", code, errb.String())
	}
	if m, _ := filepath.Glob(filepath.Join(cacheDir, "train", "*", "*")); len(m) != 0 {
		t.Errorf("train stages in the cache: %v", m)
	}
}
