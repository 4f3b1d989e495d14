package main

import "runtime/debug"

// gcPercent is the garbage collector's target spn runs with when the
// environment does not set GOGC: a collection starts once the heap has
// grown 25 % over what the last one left live, where Go's default (100 %)
// lets a process hold twice its live memory. A training stage's live
// memory is almost all float32 and int32 arrays (activations, hop sets),
// which the collector does not scan, so collecting four times as often
// costs little CPU (docs/performance.md, Memory: within the noise of the
// measurements). GOGC and GOMEMLIMIT in the environment work as for any
// Go program: GOGC replaces this default, GOMEMLIMIT adds a soft limit of
// the whole process (e.g. a Slurm job's memory).
const gcPercent = 25

// setGC applies gcPercent unless getenv has GOGC.
func setGC(getenv func(string) string) {
	if getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
}
