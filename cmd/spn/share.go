package main

import (
	"math"
	"runtime/debug"

	"github.com/spn-project/spn/models"
	"github.com/spn-project/spn/stages"
	"github.com/spn-project/spn/stages/exec"
	"github.com/spn-project/spn/stages/plan"
	"github.com/spn-project/spn/stages/sched"
	"github.com/spn-project/spn/stages/train"
)

// sharedRun is how spn run executes with neither --jobs nor --threads: the
// stages share the ncpu cores (exec.Options.Cores), and a train stage
// starts only when its expected peak memory (train.PeakEstimator, for the
// model kinds of mr) fits in what is free (MemAvailable of meminfo, and
// no more than GOMEMLIMIT).
func sharedRun(ncpu int, meminfo string, mr models.Registry) exec.Options {
	return exec.Options{
		Cores:     max(ncpu, 1),
		Memory:    peakMemory(mr),
		Available: freeMemory(sched.MemAvailable(meminfo), debug.SetMemoryLimit(-1)),
	}
}

// peakMemory returns the expected peak memory of a stage (a train
// stage's, from its parameters and inputs; 0 for other kinds), as the
// executor and spn report estimate it.
func peakMemory(mr models.Registry) func(n *plan.Node, in []stages.Input) uint64 {
	est := train.NewPeakEstimator(mr)
	return func(n *plan.Node, in []stages.Input) uint64 {
		if n.Kind != stages.KindTrain {
			return 0
		}
		b, err := est.PeakBytes(n.JSON, in)
		if err != nil {
			return 0 // the stage itself reports what is wrong
		}
		return b
	}
}

// freeMemory is avail capped by the Go memory limit (GOMEMLIMIT, e.g. a
// cluster job's memory) when one is set.
func freeMemory(avail func() (uint64, bool), limit int64) func() (uint64, bool) {
	return func() (uint64, bool) {
		free, ok := avail()
		if limit > 0 && limit < math.MaxInt64 {
			if !ok || uint64(limit) < free {
				return uint64(limit), true
			}
		}
		return free, ok
	}
}
