package slurm

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
)

// TaskKeys returns the stage keys of task idx of a job array's tasks
// file (line idx+1); idx < 0 takes $SLURM_ARRAY_TASK_ID (read with
// getenv). usage reports that the error comes from the arguments (no task
// index, or one the file does not have) rather than from reading the file.
func TaskKeys(file string, idx int, getenv func(string) string) (keys []string, usage bool, err error) {
	if idx < 0 {
		v := getenv("SLURM_ARRAY_TASK_ID")
		n, err := strconv.Atoi(v)
		if err != nil {
			return nil, true, fmt.Errorf("--tasks needs --task N or SLURM_ARRAY_TASK_ID (got %q)", v)
		}
		idx = n
	}
	lines, err := os.ReadFile(file)
	if err != nil {
		return nil, false, err
	}
	ls := strings.Split(strings.TrimRight(string(lines), "\n"), "\n")
	if idx < 0 || idx >= len(ls) {
		return nil, true, fmt.Errorf("%s has %d tasks, no task %d", file, len(ls), idx)
	}
	return strings.Fields(ls[idx]), false, nil
}

// TaskThreads is the kernel threads of each stage of a job's task: flag
// when positive, else $SLURM_CPUS_PER_TASK, else the CPUs.
func TaskThreads(flag int, getenv func(string) string) int {
	if flag > 0 {
		return flag
	}
	if n, err := strconv.Atoi(getenv("SLURM_CPUS_PER_TASK")); err == nil && n > 0 {
		return n
	}
	return runtime.NumCPU()
}
