package slurm

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/spn-project/spn/stages/cache"
)

// Active is a stage's place in Slurm's queue.
type Active struct {
	// JobID is the array job's id; Task the array task index.
	JobID string
	Task  int
	// State is Slurm's job state, e.g. PENDING, RUNNING, COMPLETING.
	State string
	// Reason is Slurm's pending reason, e.g. Dependency, JobHeldUser.
	Reason string
}

// Running reports whether the stage's task is running (not pending).
func (a Active) Running() bool {
	return a.State == "RUNNING" || a.State == "COMPLETING" || a.State == "CONFIGURING"
}

// Queue returns, for every stage of spn's queued or running jobs on cache
// c, where it is. Jobs that can never run (pending with reason
// DependencyNeverSatisfied, left by clusters that do not honour
// --kill-on-invalid-dep) are returned in dead instead, in job id order:
// resubmission must cancel them (Cancel) and submit their stages again.
func Queue(ctx context.Context, r Runner, c *cache.Cache) (active map[string]Active, dead []string, err error) {
	if r == nil {
		r = Commands{}
	}
	args := []string{"-h", "-r", "-o", "%F|%K|%T|%r|%k"}
	if u, uerr := user.Current(); uerr == nil {
		args = append(args, "-u", u.Username)
	}
	out, err := r.Run(ctx, "squeue", args...)
	if err != nil {
		return nil, nil, fmt.Errorf("listing spn's Slurm jobs: %w", err)
	}
	root, err := filepath.Abs(c.Root)
	if err != nil {
		return nil, nil, err
	}
	active = map[string]Active{}
	tasks := map[string][]string{} // tasks file → lines
	deadSet := map[string]bool{}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	sc.Buffer(make([]byte, 1<<16), 1<<22)
	for sc.Scan() {
		f := strings.SplitN(sc.Text(), "|", 5)
		if len(f) != 5 || !strings.HasPrefix(f[4], CommentPrefix) {
			continue
		}
		file := strings.TrimPrefix(f[4], CommentPrefix)
		if !strings.HasPrefix(file, root+string(filepath.Separator)) {
			continue // another cache's job
		}
		task, err := strconv.Atoi(f[1])
		if err != nil {
			continue
		}
		if f[3] == "DependencyNeverSatisfied" {
			deadSet[f[0]] = true
			continue
		}
		lines, ok := tasks[file]
		if !ok {
			lines = readLines(file)
			tasks[file] = lines
		}
		if task < 0 || task >= len(lines) {
			continue
		}
		for _, key := range strings.Fields(lines[task]) {
			active[key] = Active{JobID: f[0], Task: task, State: f[2], Reason: f[3]}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, nil, fmt.Errorf("reading squeue output: %w", err)
	}
	for id := range deadSet {
		dead = append(dead, id)
	}
	slices.SortFunc(dead, byJobID)
	return active, dead, nil
}

// Cancel cancels the given jobs (scancel).
func Cancel(ctx context.Context, r Runner, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	if r == nil {
		r = Commands{}
	}
	_, err := r.Run(ctx, "scancel", ids...)
	return err
}

// byJobID orders job ids as numbers (Slurm's are decimal integers), any
// other string after them.
func byJobID(a, b string) int {
	x, errA := strconv.ParseUint(a, 10, 64)
	y, errB := strconv.ParseUint(b, 10, 64)
	switch {
	case errA == nil && errB == nil:
		return cmp.Compare(x, y)
	case errA == nil:
		return -1
	case errB == nil:
		return 1
	}
	return strings.Compare(a, b)
}

func readLines(path string) []string {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	return strings.Split(strings.TrimRight(string(b), "\n"), "\n")
}

func jsonMarshal(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encoding plan file: %w", err)
	}
	return append(b, '\n'), nil
}
