package main

import (
	"runtime/debug"

	"github.com/spn-project/spn/models"
	"github.com/spn-project/spn/stages/exec"
	"github.com/spn-project/spn/stages/sched"
	"github.com/spn-project/spn/stages/train"
)

// sharedRun is how spn run executes with neither --jobs nor --threads: the
// stages share the ncpu cores (exec.Options.Cores), and a train stage
// starts only when its expected peak memory (train.PlanMemory, for the
// model kinds of mr) fits in what is free (MemAvailable of meminfo, and
// no more than GOMEMLIMIT: sched.CapMemory).
func sharedRun(ncpu int, meminfo string, mr models.Registry) exec.Options {
	return exec.Options{
		Cores:     max(ncpu, 1),
		Memory:    train.PlanMemory(mr),
		Available: sched.CapMemory(sched.MemAvailable(meminfo), debug.SetMemoryLimit(-1)),
	}
}
