package sched

import "fmt"

// Parallelism derives jobs and threads per stage: given one of them, the
// other shares the CPUs; given neither, one job using every CPU (spn run
// then shares the cores among its stages instead: its shared run).
func Parallelism(jobs, threads, ncpu int) (int, int, error) {
	if jobs < 0 || threads < 0 {
		return 0, 0, fmt.Errorf("--jobs and --threads must be positive")
	}
	if ncpu < 1 {
		ncpu = 1
	}
	switch {
	case jobs == 0 && threads == 0:
		jobs, threads = 1, ncpu
	case threads == 0:
		threads = max(1, ncpu/jobs)
	case jobs == 0:
		jobs = max(1, ncpu/threads)
	}
	return jobs, threads, nil
}
