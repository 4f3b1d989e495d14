package main

import (
	"bytes"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDamagedEntries replaces, one after the other, a train stage's
// folder, its prefix folder (train/43), the train folder, tmp and locks
// by a regular file or a symbolic link loop. Each time spn cache verify
// reports the entry (exit 1), spn plan and spn status still work, and spn
// run recomputes what it stood for and writes the very same table bytes
// as the undamaged run; verify is then clean again.
func TestDamagedEntries(t *testing.T) {
	if testing.Short() {
		t.Skip("trains for real")
	}
	dir := t.TempDir()
	spec := filepath.Join(dir, "p.cue")
	if err := os.WriteFile(spec, []byte(predictSpec), 0o644); err != nil {
		t.Fatal(err)
	}
	cacheDir := filepath.Join(dir, "cache")
	results := filepath.Join(dir, "results")
	cmd := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		a := &app{stdout: &out, stderr: &errb, getenv: func(string) string { return "" }}
		code := a.main(append(args, "--cache", cacheDir, "--log-level", "error"))
		return code, out.String(), errb.String()
	}
	if code, _, stderr := cmd("run", spec, "--out", results); code != exitOK {
		t.Fatalf("run: exit %d: %s", code, stderr)
	}
	want := readDir(t, results)
	if code, _, stderr := cmd("cache", "verify"); code != exitOK {
		t.Fatalf("verify of the undamaged cache: exit %d: %s", code, stderr)
	}
	// trainStage is the folder of the one train stage.
	trainStage := func() string {
		m, _ := filepath.Glob(filepath.Join(cacheDir, "train", "*", "*"))
		if len(m) != 1 {
			t.Fatalf("train stages: %v", m)
		}
		return m[0]
	}
	asFile := func(p string) {
		if err := os.RemoveAll(p); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("not a folder"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	asLoop := func(p string) {
		if err := os.RemoveAll(p); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.Base(p), p); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		name   string
		path   func() string
		damage func(string)
		why    string
	}{
		{"stage folder a file", trainStage, asFile, "a regular file, not a folder"},
		{"stage folder a loop", trainStage, asLoop, "a symbolic link loop, not a folder"},
		{"train/43 a file", func() string { return filepath.Dir(trainStage()) }, asFile, "a regular file, not a folder"},
		{"train/43 a loop", func() string { return filepath.Dir(trainStage()) }, asLoop, "a symbolic link loop, not a folder"},
		{"train a file", func() string { return filepath.Join(cacheDir, "train") }, asFile, "a regular file, not a folder"},
		{"train a loop", func() string { return filepath.Join(cacheDir, "train") }, asLoop, "a symbolic link loop, not a folder"},
		{"tmp a file", func() string { return filepath.Join(cacheDir, "tmp") }, asFile, "a regular file, not a folder"},
		{"tmp a loop", func() string { return filepath.Join(cacheDir, "tmp") }, asLoop, "a symbolic link loop, not a folder"},
		{"locks a file", func() string { return filepath.Join(cacheDir, "locks") }, asFile, "a regular file, not a folder"},
		{"locks a loop", func() string { return filepath.Join(cacheDir, "locks") }, asLoop, "a symbolic link loop, not a folder"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := c.path()
			c.damage(p)
			code, out, stderr := cmd("cache", "verify")
			if code != exitFail || !strings.Contains(out, "damaged   "+p+": "+c.why+"\n") {
				t.Errorf("verify: exit %d\n%s%s", code, out, stderr)
			}
			if code, _, stderr := cmd("plan", spec); code != exitOK {
				t.Errorf("plan: exit %d: %s", code, stderr)
			}
			if code, _, stderr := cmd("status", spec); code != exitOK {
				t.Errorf("status: exit %d: %s", code, stderr)
			}
			if err := os.RemoveAll(results); err != nil {
				t.Fatal(err)
			}
			if code, _, stderr := cmd("run", spec, "--out", results); code != exitOK {
				t.Fatalf("run: exit %d: %s", code, stderr)
			}
			if got := readDir(t, results); !maps.Equal(got, want) {
				t.Errorf("tables after the repair differ:\n%v\nwant\n%v", got, want)
			}
			if code, out, stderr := cmd("cache", "verify"); code != exitOK {
				t.Errorf("verify after the run: exit %d\n%s%s", code, out, stderr)
			}
		})
	}
}

// spn cache gc removes a file or a link loop standing where a stage
// folder belongs, though no spec names it.
func TestGCRemovesStrays(t *testing.T) {
	dir := t.TempDir()
	spec := filepath.Join(dir, "p.cue")
	if err := os.WriteFile(spec, []byte(predictSpec), 0o644); err != nil {
		t.Fatal(err)
	}
	cacheDir := filepath.Join(dir, "cache")
	for _, p := range []string{"train/ab", "evaluate/cd/cdef", "tmp"} {
		os.MkdirAll(filepath.Dir(filepath.Join(cacheDir, p)), 0o755)
		os.WriteFile(filepath.Join(cacheDir, p), []byte("x"), 0o644)
	}
	os.Symlink("locks", filepath.Join(cacheDir, "locks"))
	var out, errb bytes.Buffer
	a := &app{stdout: &out, stderr: &errb, getenv: func(string) string { return "" }}
	if code := a.main([]string{"cache", "gc", "--cache", cacheDir, spec}); code != exitOK {
		t.Fatalf("gc: exit %d: %s", code, errb.String())
	}
	for _, p := range []string{"train/ab", "evaluate/cd/cdef", "tmp", "locks"} {
		if _, err := os.Lstat(filepath.Join(cacheDir, p)); err == nil {
			t.Errorf("%s is still there\n%s", p, out.String())
		}
	}
}
