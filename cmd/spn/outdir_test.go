package main

import (
	"bytes"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spn-project/spn/stages/outdir"
)

// runApp runs spn with args and an empty environment.
func runApp(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	a := &app{stdout: &out, stderr: &errb, getenv: func(string) string { return "" }}
	code = a.main(args)
	return code, out.String(), errb.String()
}

// An --out that cannot be written (a path below a regular file) fails
// before the first stage: nothing is computed or cached.
func TestRunUnwritableOut(t *testing.T) {
	dir := t.TempDir()
	spec := filepath.Join(dir, "p.cue")
	os.WriteFile(spec, []byte(predictSpec), 0o644)
	file := filepath.Join(dir, "file")
	os.WriteFile(file, []byte("x"), 0o644)
	cacheDir := filepath.Join(dir, "cache")
	code, _, errs := runApp("run", spec, "--cache", cacheDir, "--out", filepath.Join(file, "results"), "--log-level", "error")
	if code != exitFail || !strings.Contains(errs, "the tables' directory "+filepath.Join(file, "results")+" is not writable") || !strings.Contains(errs, "nothing was run") {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if _, err := os.Stat(cacheDir); !os.IsNotExist(err) {
		t.Fatalf("stages ran before the check: cache %v", err)
	}
}

// Two spec files with the same name and different content do not share
// results/NAME silently: the second is refused, naming both, unless --out
// is given. The results directory records the spec's path and hash.
func TestSameNameSpecs(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	a, b := filepath.Join(dir, "a", "p.cue"), filepath.Join(dir, "b", "p.cue")
	os.MkdirAll(filepath.Dir(a), 0o755)
	os.MkdirAll(filepath.Dir(b), 0o755)
	os.WriteFile(a, []byte(predictSpec), 0o644)
	os.WriteFile(b, []byte(strings.Replace(predictSpec, "epochs: 2", "epochs: 1", 1)), 0o644)
	cacheDir := filepath.Join(dir, "cache")
	if code, _, errs := runApp("run", a, "--cache", cacheDir, "--log-level", "error"); code != exitOK {
		t.Fatalf("first spec: exit %d: %s", code, errs)
	}
	rec, err := os.ReadFile(filepath.Join("results", "p", outdir.RecordFile))
	if err != nil || !strings.Contains(string(rec), `"path": "`+a+`"`) || !strings.Contains(string(rec), `"sha256": "`) {
		t.Fatalf("spec record: %s %v", rec, err)
	}
	for _, cmd := range []string{"run", "table"} {
		code, _, errs := runApp(cmd, b, "--cache", cacheDir, "--log-level", "error")
		if code != exitUsage || !strings.Contains(errs, "another spec named \"p\": "+a) || !strings.Contains(errs, "this is "+b) || !strings.Contains(errs, "--out") {
			t.Errorf("%s of the second spec: exit %d: %s", cmd, code, errs)
		}
	}
	if code, _, errs := runApp("run", b, "--cache", cacheDir, "--log-level", "error", "--out", filepath.Join(dir, "b-results")); code != exitOK {
		t.Errorf("second spec with --out: exit %d: %s", code, errs)
	}
	// The same file again, edited, is the same spec.
	os.WriteFile(a, []byte(strings.Replace(predictSpec, "epochs: 2", "epochs: 1", 1)), 0o644)
	if code, _, errs := runApp("run", a, "--cache", cacheDir, "--log-level", "error"); code != exitOK {
		t.Errorf("edited first spec: exit %d: %s", code, errs)
	}
}

// A cache that cannot be locked (read-only; here its lock file is a
// directory) still gives the tables when every stage is cached, as spn
// table does; with stages to run it fails.
func TestRunUnlockableCache(t *testing.T) {
	dir := t.TempDir()
	spec := filepath.Join(dir, "p.cue")
	os.WriteFile(spec, []byte(predictSpec), 0o644)
	cacheDir := filepath.Join(dir, "cache")
	if code, _, errs := runApp("run", spec, "--cache", cacheDir, "--out", filepath.Join(dir, "r1"), "--log-level", "error"); code != exitOK {
		t.Fatalf("run: exit %d: %s", code, errs)
	}
	lock := filepath.Join(cacheDir, "lock")
	if err := os.Remove(lock); err != nil {
		t.Fatal(err)
	}
	os.Mkdir(lock, 0o755)
	out2 := filepath.Join(dir, "r2")
	code, stdout, errs := runApp("run", spec, "--cache", cacheDir, "--out", out2, "--log-level", "error")
	if code != exitOK || !strings.Contains(errs, "cannot lock the cache") || !strings.Contains(stdout, "SPN") {
		t.Fatalf("all cached, unlockable cache: exit %d: %s\n%s", code, errs, stdout)
	}
	if _, err := os.Stat(filepath.Join(out2, "t.csv")); err != nil {
		t.Fatalf("table not written: %v", err)
	}
	os.WriteFile(spec, []byte(strings.Replace(predictSpec, "epochs: 2", "epochs: 1", 1)), 0o644)
	if code, _, errs := runApp("run", spec, "--cache", cacheDir, "--out", out2, "--log-level", "error"); code != exitFail || !strings.Contains(errs, "opening lock") {
		t.Fatalf("stages to run, unlockable cache: exit %d: %s", code, errs)
	}
}

// A spec reached through a symlink is the same spec as its target: after
// an edit, running it by its real path is not refused as another spec of
// the same name (the record holds the resolved path).
func TestSameNameSpecSymlink(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	real := filepath.Join(dir, "specs", "p.cue")
	os.MkdirAll(filepath.Dir(real), 0o755)
	os.WriteFile(real, []byte(predictSpec), 0o644)
	link := filepath.Join(dir, "p.cue")
	if err := os.Symlink(real, link); err != nil {
		t.Skip("no symlinks:", err)
	}
	rec, err := outdir.Source(link, realEngine().quickstart)
	if err != nil {
		t.Fatal(err)
	}
	if want, _ := filepath.EvalSymlinks(real); rec.Path != want {
		t.Errorf("spec record path %q, want the symlink's target %q", rec.Path, want)
	}
	os.WriteFile(real, []byte(strings.Replace(predictSpec, "epochs: 2", "epochs: 1", 1)), 0o644)
	// A record of the resolved path, and one that names the symlink
	// itself (as records written without resolving do).
	for _, recorded := range []string{rec.Path, link} {
		if err := (tablesDir{cmd: "run", Dir: outdir.Dir{Path: filepath.Join("results", "p"), Spec: outdir.Record{Path: recorded, SHA256: rec.SHA256}}}).record(nil); err != nil {
			t.Fatal(err)
		}
		code, _, errs := runApp("table", real, "--cache", filepath.Join(dir, "cache"), "--log-level", "error")
		if code == exitUsage || strings.Contains(errs, "another spec") {
			t.Errorf("recorded as %s, the spec edited and run by its real path: exit %d: %s", recorded, code, errs)
		}
	}
}

// specTwoTables is predictSpec with a second table, u.
const specTwoTables = predictSpec + `tables: u: {
	formats: ["csv", "markdown"]
	columns: [{key: "p", header: "Prox"}]
	rows: [{label: "SPN", cells: {p: experiment: "spn"}}]
}
`

// An --out folder holding another spec's tables is refused, naming both
// specs and --take-over; taken over, the other spec's tables that spn
// wrote are removed (a file of the user's stays), and a spec that drops
// a table does not leave the old one behind.
func TestOutFolderSpecs(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.cue"), filepath.Join(dir, "b.cue")
	os.WriteFile(a, []byte(specTwoTables), 0o644)
	os.WriteFile(b, []byte(predictSpec), 0o644)
	cacheDir, out := filepath.Join(dir, "cache"), filepath.Join(dir, "out")
	if code, _, errs := runApp("run", a, "--cache", cacheDir, "--out", out, "--log-level", "error"); code != exitOK {
		t.Fatalf("first spec: exit %d: %s", code, errs)
	}
	os.WriteFile(filepath.Join(out, "notes.txt"), []byte("mine"), 0o644)
	names := func(d string) string {
		ents, _ := os.ReadDir(d)
		var n []string
		for _, e := range ents {
			n = append(n, e.Name())
		}
		return strings.Join(n, " ")
	}
	if got := names(out); got != "notes.txt report.html spec-source.json t.csv t.json u.csv u.json u.md" {
		t.Fatalf("after the first spec: %s", got)
	}
	for _, cmd := range []string{"run", "table"} {
		code, _, errs := runApp(cmd, b, "--cache", cacheDir, "--out", out, "--log-level", "error")
		if code != exitUsage || !strings.Contains(errs, out+" holds the tables of another spec: "+a) || !strings.Contains(errs, "this is "+b) || !strings.Contains(errs, "--take-over") {
			t.Errorf("%s of the second spec: exit %d: %s", cmd, code, errs)
		}
	}
	if code, _, errs := runApp("run", b, "--cache", cacheDir, "--out", out, "--take-over", "--log-level", "error"); code != exitOK {
		t.Fatalf("second spec with --take-over: exit %d: %s", code, errs)
	}
	if got := names(out); got != "notes.txt report.html spec-source.json t.csv t.json" {
		t.Errorf("after --take-over: %s", got)
	}
	// The first spec drops table u: its own folder loses u's files.
	out2 := filepath.Join(dir, "out2")
	if code, _, errs := runApp("table", a, "--cache", cacheDir, "--out", out2); code != exitOK {
		t.Fatalf("table: exit %d: %s", code, errs)
	}
	os.WriteFile(a, []byte(predictSpec), 0o644)
	if code, _, errs := runApp("table", a, "--cache", cacheDir, "--out", out2); code != exitOK {
		t.Fatalf("table after dropping u: exit %d: %s", code, errs)
	}
	if got := names(out2); got != "spec-source.json t.csv t.json" {
		t.Errorf("after dropping table u: %s", got)
	}
}

// A results folder on a nearly full disk (a 64 KiB tmpfs, where the
// probe's 1 MiB does not fit) is refused before any stage runs; with an
// empty probe file the run trained every stage first, and failed only on
// tables that did not fit.
func TestOutFullDisk(t *testing.T) {
	dir := t.TempDir()
	mnt := filepath.Join(dir, "full")
	os.MkdirAll(mnt, 0o755)
	if out, err := osexec.Command("mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", mnt).CombinedOutput(); err != nil {
		// CI runs as root on a machine where mount works.
		if os.Getenv("CI") == "true" {
			t.Fatalf("mount tmpfs: %v: %s", err, out)
		}
		t.Skipf("cannot mount a small tmpfs to fill (%v: %s)", err, strings.TrimSpace(string(out)))
	}
	t.Cleanup(func() { osexec.Command("umount", mnt).Run() })
	spec := filepath.Join(dir, "p.cue")
	os.WriteFile(spec, []byte(predictSpec), 0o644)
	cacheDir := filepath.Join(dir, "cache")
	code, _, errs := runApp("run", spec, "--cache", cacheDir, "--out", filepath.Join(mnt, "out"), "--log-level", "error")
	if code != exitFail || !strings.Contains(errs, "is not writable: writing 1024 KiB there: ") || !strings.Contains(errs, "nothing was run") {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if _, err := os.Stat(filepath.Join(cacheDir, "train")); err == nil {
		t.Error("stages were trained")
	}
	if ents, _ := os.ReadDir(mnt); len(ents) != 0 {
		t.Errorf("left in the full folder: %v", ents)
	}
}
