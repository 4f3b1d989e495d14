package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
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
	os.Exit(a.exit(a.run(en, []string{"testdata/small.cue", "--out", os.Getenv("SPN_CMD_OUT"), "--jobs", "1"})))
}

// SIGINT and SIGTERM stop a run cleanly: exit 130 and 143 with a clear
// message, no temp dirs left, finished stages kept; the next run resumes
// and completes.
func TestRunInterrupt(t *testing.T) {
	if testing.Short() {
		t.Skip("subprocess test")
	}
	for _, c := range []struct {
		sig  syscall.Signal
		code int
	}{{syscall.SIGINT, 130}, {syscall.SIGTERM, 143}} {
		t.Run(c.sig.String(), func(t *testing.T) {
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
			if err := cmd.Process.Signal(c.sig); err != nil {
				t.Fatal(err)
			}
			for sc.Scan() {
				log = append(log, sc.Text())
			}
			err = cmd.Wait()
			ee, ok := err.(*osexec.ExitError)
			if !ok || ee.ExitCode() != c.code {
				t.Fatalf("exit: %v, want %d\n%s", err, c.code, strings.Join(log, "\n"))
			}
			if last := log[len(log)-1]; last != "spn run: interrupted; finished stages are kept, run again to resume" {
				t.Errorf("last line %q", last)
			}
			if ents, _ := os.ReadDir(filepath.Join(cacheDir, "tmp")); len(ents) != 0 {
				t.Errorf("%d temp dirs left after %v", len(ents), c.sig)
			}
			r := spn(testEngine(), cacheDir, "plan", "testdata/small.cue")
			if !strings.Contains(r.stdout, "2 cached, 22 to run") {
				t.Errorf("plan after interrupt:\n%s", r.stdout)
			}
			r = spn(testEngine(), cacheDir, "run", "testdata/small.cue", "--out", filepath.Join(dir, "out"), "--log-level", "error")
			if r.code != exitOK || !strings.Contains(r.stderr, "24 stages, 2 cached, 22 to run") {
				t.Errorf("resume: exit %d\n%s", r.code, r.stderr)
			}
		})
	}
}

// The exit status is 128 + the signal's number once a signal stopped the
// command, whatever the command returned; otherwise the error's code.
func TestExitStatus(t *testing.T) {
	for _, c := range []struct {
		name   string
		sig    syscall.Signal
		err    error
		code   int
		stderr string
	}{
		{"ok", 0, nil, exitOK, ""},
		{"usage", 0, usageErrf("plan", "want one spec FILE, got %d arguments", 0), exitUsage, "spn plan: want one spec FILE, got 0 arguments\n"},
		{"runtime", 0, runtimeErr("run", errors.New("disk full")), exitFail, "spn run: disk full\n"},
		{"no prefix", 0, runtimeErrf("", "table %s is not in the plan", "t"), exitFail, "spn: table t is not in the plan\n"},
		{"reported", 0, reported(exitUsage), exitUsage, ""},
		{"untyped", 0, errors.New("boom"), exitFail, "spn: boom\n"},
		{"wrapped", 0, fmt.Errorf("ctx: %w", usageErrf("vet", "x")), exitUsage, "ctx: spn vet: x\n"},
		{"joined", 0, joinErrs([]error{usageErrf("t", "a"), usageErrf("t", "b")}), exitUsage, "spn t: a\nspn t: b\n"},
		{"help", 0, usageErr("plan", flag.ErrHelp), exitOK, ""},
		{"SIGINT", syscall.SIGINT, runtimeErrf("run", "interrupted"), 130, "spn run: interrupted\n"},
		{"SIGTERM", syscall.SIGTERM, runtimeErrf("stage run", "interrupted"), 143, "spn stage run: interrupted\n"},
		{"SIGINT after success", syscall.SIGINT, nil, 130, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			var errb bytes.Buffer
			a := &app{stderr: &errb}
			a.signal.Store(int32(c.sig))
			if code := a.exit(c.err); code != c.code || errb.String() != c.stderr {
				t.Errorf("exit %d, stderr %q; want %d, %q", code, errb.String(), c.code, c.stderr)
			}
		})
	}
}

// signalContext records the signal and cancels the context; stop without
// a signal records nothing.
func TestSignalContext(t *testing.T) {
	a := &app{}
	ctx, stop := a.signalContext()
	stop()
	<-ctx.Done()
	if s := a.signal.Load(); s != 0 {
		t.Fatalf("signal %d recorded without one", s)
	}
	ctx, stop = a.signalContext()
	defer stop()
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("context not cancelled by SIGTERM")
	}
	if s := a.signal.Load(); s != int32(syscall.SIGTERM) {
		t.Errorf("recorded signal %d, want %d", s, syscall.SIGTERM)
	}
}
