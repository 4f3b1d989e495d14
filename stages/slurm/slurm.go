// Package slurm runs a plan's stages as Slurm jobs over a shared cache.
//
// Submit groups the stages that are neither cached nor already queued or
// running into jobs (see Group), writes for each job a plan file (the
// job's stages, exec.PlanFile), a tasks file (one line per array task: the
// keys of the stages it runs, in order) and a batch script into
// <cache>/slurm/<submission>/, and submits the jobs with sbatch, each
// waiting (--dependency) on the array tasks that produce its inputs, so
// that a failure stops only its dependents (see dependency).
// Every array task runs `spn stage run --plan FILE --tasks FILE`, which
// runs its stages one by one under their per-stage locks (cache.LockStage),
// so a stage never runs twice at once even when two submissions overlap.
//
// Queue finds spn's jobs of a cache with squeue: every job carries the
// comment "spn:<tasks file>", so the stages of each queued or running
// array task are known without any state outside the cache.
package slurm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	osexec "os/exec"
	"strings"
)

// Runner runs a Slurm client command and returns its standard output.
type Runner interface {
	Run(ctx context.Context, name string, args ...string) ([]byte, error)
}

// Commands runs the real Slurm client commands found on PATH.
type Commands struct{}

// Run implements Runner; the error names the command and holds its
// standard error.
func (Commands) Run(ctx context.Context, name string, args ...string) ([]byte, error) {
	cmd := osexec.CommandContext(ctx, name, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if errors.Is(err, osexec.ErrNotFound) {
			return nil, fmt.Errorf("%s not found: is this a Slurm login node? (install slurm-wlm or load the slurm module)", name)
		}
		if msg == "" {
			msg = err.Error()
		}
		return nil, fmt.Errorf("%s: %s", name, msg)
	}
	return stdout.Bytes(), nil
}

// Available reports whether the Slurm client commands are on PATH.
func Available() bool {
	_, err := osexec.LookPath("sbatch")
	if err != nil {
		return false
	}
	_, err = osexec.LookPath("squeue")
	return err == nil
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-=:,+@", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
