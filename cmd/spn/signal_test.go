package main

import (
	"bufio"
	"context"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spn-project/spn/stages"
)

// slowTrain is a train kind (test only) that waits for its context.
type slowTrain struct{}

func (slowTrain) Name() string    { return stages.KindTrain }
func (slowTrain) Version() string { return "test" }
func (slowTrain) Run(ctx context.Context, j *stages.Job) error {
	if err := os.WriteFile(filepath.Join(j.Dir, "partial"), []byte("x"), 0o644); err != nil {
		return err
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(time.Minute):
		return nil
	}
}

// TestHelperRun is not a test: run as a subprocess with SPN_CMD_HELPER=1 it
// is `spn run testdata/small.cue --jobs 1` with a train kind that hangs.
func TestHelperRun(t *testing.T) {
	if os.Getenv("SPN_CMD_HELPER") != "1" {
		return
	}
	en := testEngine()
	kinds := []stages.Kind{slowTrain{}}
	for _, n := range []string{stages.KindGenerate, stages.KindPrecompute, stages.KindSelect, stages.KindEvaluate, stages.KindTabulate} {
		k, _ := en.reg.Get(n)
		kinds = append(kinds, k)
	}
	en.reg = stages.NewRegistry(kinds...)
	a := &app{stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv}
	// One stage at a time, so that the stages finished before the first
	// train are the same on any number of cores.
	os.Exit(a.run(en, []string{"testdata/small.cue", "--out", os.Getenv("SPN_CMD_OUT"), "--jobs", "1"}))
}

// SIGINT stops a run cleanly: exit 1 with a clear message, no temp dirs
// left, finished stages kept; the next run resumes and completes.
func TestRunInterrupt(t *testing.T) {
	if testing.Short() {
		t.Skip("subprocess test")
	}
	dir := t.TempDir()
	cacheDir := filepath.Join(dir, "cache")
	cmd := osexec.Command(os.Args[0], "-test.run=^TestHelperRun$")
	cmd.Env = append(os.Environ(), "SPN_CMD_HELPER=1", "SPN_CACHE="+cacheDir, "SPN_CMD_OUT="+filepath.Join(dir, "out"))
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stderr)
	var log []string
	for sc.Scan() {
		log = append(log, sc.Text())
		if strings.Contains(sc.Text(), `start: stage="train`) {
			break
		}
	}
	time.Sleep(100 * time.Millisecond)
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	for sc.Scan() {
		log = append(log, sc.Text())
	}
	err = cmd.Wait()
	ee, ok := err.(*osexec.ExitError)
	if !ok || ee.ExitCode() != exitFail {
		t.Fatalf("exit: %v\n%s", err, strings.Join(log, "\n"))
	}
	if last := log[len(log)-1]; last != "spn run: interrupted; finished stages are kept, run again to resume" {
		t.Errorf("last line %q", last)
	}
	if ents, _ := os.ReadDir(filepath.Join(cacheDir, "tmp")); len(ents) != 0 {
		t.Errorf("%d temp dirs left after SIGINT", len(ents))
	}
	r := spn(testEngine(), cacheDir, "plan", "testdata/small.cue")
	if !strings.Contains(r.stdout, "2 cached, 22 to run") {
		t.Errorf("plan after interrupt:\n%s", r.stdout)
	}
	r = spn(testEngine(), cacheDir, "run", "testdata/small.cue", "--out", filepath.Join(dir, "out"), "--log-level", "error")
	if r.code != exitOK || !strings.Contains(r.stderr, "24 stages, 2 cached, 22 to run") {
		t.Errorf("resume: exit %d\n%s", r.code, r.stderr)
	}
}
