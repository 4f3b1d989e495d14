package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// repoRoot is the repository's root, relative to this package.
const repoRoot = "../.."

// installPkg is what the CI recipe installs with go install.
const installPkg = "github.com/spn-project/spn/cmd/spn@latest"

// fencedBlocks returns the bodies of the ```lang blocks of a Markdown file.
func fencedBlocks(t *testing.T, file, lang string) []string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile("(?ms)^```" + lang + "\n(.*?)^```$")
	var out []string
	for _, m := range re.FindAllStringSubmatch(string(b), -1) {
		out = append(out, m[1])
	}
	return out
}

// ciEnv installs spn as the recipe does (go install, from this checkout:
// the module proxy does not serve it) into a fresh GOBIN and returns a
// work dir whose pipelines/ is the repository's, and the environment with
// GOBIN first on PATH.
func ciEnv(t *testing.T) (work string, env []string) {
	t.Helper()
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	work = t.TempDir()
	if err := os.Symlink(filepath.Join(root, "pipelines"), filepath.Join(work, "pipelines")); err != nil {
		t.Fatal(err)
	}
	env = append(os.Environ(), "GOBIN="+bin, "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	return work, env
}

// runStep runs one shell step as GitHub Actions runs bash steps, with the
// install command pointed at this checkout.
func runStep(t *testing.T, work string, env []string, step string) (stdout, stderr string, err error) {
	t.Helper()
	root, _ := filepath.Abs(repoRoot)
	step = strings.ReplaceAll(step, installPkg, "-C "+root+" ./cmd/spn")
	cmd := exec.Command("nice", "-n", "10", "bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step)
	cmd.Dir = work
	cmd.Env = env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	return out.String(), errb.String(), err
}

// The GitHub Actions workflow of docs/ci.md: its run: steps, run in
// order on the repository's own pipelines/, install spn with go install,
// vet every spec clean (no workflow command printed) and write a SARIF log
// without results. The generic shell step does the same.
func TestCIRecipe(t *testing.T) {
	if testing.Short() {
		t.Skip("builds spn with go install")
	}
	var workflow struct {
		Jobs map[string]struct {
			Steps []struct {
				Name string `yaml:"name"`
				Uses string `yaml:"uses"`
				Run  string `yaml:"run"`
			} `yaml:"steps"`
		} `yaml:"jobs"`
	}
	var found bool
	for _, blk := range fencedBlocks(t, filepath.Join(repoRoot, "docs", "ci.md"), "yaml") {
		if strings.Contains(blk, "jobs:") {
			if err := yaml.Unmarshal([]byte(blk), &workflow); err != nil {
				t.Fatalf("docs/ci.md's workflow is not YAML: %v", err)
			}
			found = true
		}
	}
	if !found || len(workflow.Jobs["vet"].Steps) == 0 {
		t.Fatal("docs/ci.md has no workflow with a vet job")
	}
	work, env := ciEnv(t)
	var runs []string
	uploads := false
	for _, s := range workflow.Jobs["vet"].Steps {
		if strings.HasPrefix(s.Uses, "github/codeql-action/upload-sarif@") {
			uploads = true
		}
		if s.Run == "" {
			continue
		}
		runs = append(runs, s.Run)
		stdout, stderr, err := runStep(t, work, env, s.Run)
		if err != nil {
			t.Fatalf("step %q: %v\nstdout:\n%s\nstderr:\n%s", s.Name, err, stdout, stderr)
		}
		if strings.Contains(stdout, "::error") {
			t.Errorf("step %q annotated problems of pipelines/:\n%s", s.Name, stdout)
		}
	}
	all := strings.Join(runs, "\n")
	for _, want := range []string{"go install " + installPkg, "--format github", "--format sarif"} {
		if !strings.Contains(all, want) {
			t.Errorf("the workflow's run steps lack %q", want)
		}
	}
	if !uploads {
		t.Error("the workflow does not upload the SARIF log")
	}
	checkEmptySARIF(t, filepath.Join(work, "spn-vet.sarif"))

	// The generic shell step, in a fresh work dir.
	sh := fencedBlocks(t, filepath.Join(repoRoot, "docs", "ci.md"), "sh")
	if len(sh) == 0 || !strings.Contains(sh[0], "go install "+installPkg) {
		t.Fatalf("docs/ci.md's first sh block is not the shell step:\n%q", sh)
	}
	work, env = ciEnv(t)
	if stdout, stderr, err := runStep(t, work, env, sh[0]); err != nil || !strings.Contains(stdout, "ok pipelines/quickstart.cue") {
		t.Fatalf("shell step: %v\nstdout:\n%s\nstderr:\n%s", err, stdout, stderr)
	}
	checkEmptySARIF(t, filepath.Join(work, "spn-vet.sarif"))
}

// checkEmptySARIF checks that file is a SARIF 2.1.0 log of one run
// without results.
func checkEmptySARIF(t *testing.T, file string) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("the SARIF log: %v", err)
	}
	var log struct {
		Version string
		Runs    []struct{ Results []any }
	}
	if err := json.Unmarshal(b, &log); err != nil || log.Version != "2.1.0" || len(log.Runs) != 1 || len(log.Runs[0].Results) != 0 {
		t.Errorf("SARIF log (%v): want version 2.1.0, one run, no results:\n%s", err, b)
	}
}

// The pre-commit hook of .pre-commit-hooks.yaml, run as pre-commit runs
// it (its entry with the matching files as arguments) on pipelines/:
// every spec passes; on a spec broken in smoke mode only, it fails.
func TestPreCommitHook(t *testing.T) {
	if testing.Short() {
		t.Skip("builds spn with go install")
	}
	b, err := os.ReadFile(filepath.Join(repoRoot, ".pre-commit-hooks.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var hooks []struct {
		ID, Entry, Language, Files string
	}
	if err := yaml.Unmarshal(b, &hooks); err != nil || len(hooks) != 1 || hooks[0].ID != "spn-vet" || hooks[0].Language != "golang" {
		t.Fatalf(".pre-commit-hooks.yaml (%v): %+v", err, hooks)
	}
	h := hooks[0]
	files := regexp.MustCompile(h.Files)
	var specs []string
	err = filepath.WalkDir(filepath.Join(repoRoot, "pipelines"), func(p string, d os.DirEntry, err error) error {
		rel, _ := filepath.Rel(repoRoot, p)
		if err == nil && !d.IsDir() && files.MatchString(rel) {
			specs = append(specs, rel)
		}
		return err
	})
	if err != nil || len(specs) < 5 {
		t.Fatalf("specs matching %q: %v (%v)", h.Files, specs, err)
	}
	work, env := ciEnv(t)
	if _, stderr, err := runStep(t, work, env, "go install "+installPkg); err != nil {
		t.Fatalf("go install: %v\n%s", err, stderr)
	}
	if stdout, stderr, err := runStep(t, work, env, h.Entry+" "+strings.Join(specs, " ")); err != nil || strings.Count(stdout, "ok ") != len(specs) {
		t.Errorf("hook on pipelines/: %v\nstdout:\n%s\nstderr:\n%s", err, stdout, stderr)
	}
	bad, _ := filepath.Abs(filepath.Join(repoRoot, "schema", "testdata", "allmodes", "smoke_only.cue"))
	if _, stderr, err := runStep(t, work, env, h.Entry+" "+bad); err == nil || !strings.Contains(stderr, "(mode smoke)") {
		t.Errorf("hook on a spec broken in smoke: %v\n%s", err, stderr)
	}
}
