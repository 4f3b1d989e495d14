package main

import (
	"fmt"
	"math"
	"os"
	"runtime/metrics"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// cgroupMemoryMax is where cgroup v2 states the memory bound of the
// process's group.
const cgroupMemoryMax = "/sys/fs/cgroup/memory.max"

// specMemoryLimit bounds the heap growth allowed while one spec is
// evaluated. A spec that grows a value without bound (a string or list
// doubled over and over) would otherwise make the CUE evaluator exhaust
// memory and die with a goroutine dump; the syntax limits of package
// schema catch big literals, this catches what only evaluation builds.
const specMemoryLimit = 2 << 30

// guardSpecMemory watches the heap while file is evaluated: above
// specMemoryLimit of growth it prints what happened and exits with status
// 2 (the evaluator cannot be interrupted). Call the returned function
// when evaluation is done.
func (a *app) guardSpecMemory(cmd, file string) (stop func()) {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	heap := func() uint64 {
		metrics.Read(sample)
		if sample[0].Value.Kind() != metrics.KindUint64 {
			return 0
		}
		return sample[0].Value.Uint64()
	}
	base := heap()
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				if h := heap(); h > base+specMemoryLimit {
					fmt.Fprintf(a.stderr, "%s:1:1: evaluating the spec took more than %d MiB of memory, so spn %s stopped: some value grows without bound (a string or list built by repeated doubling?); specs are limited to %d MiB of evaluation\n",
						file, specMemoryLimit>>20, cmd, specMemoryLimit>>20)
					os.Exit(exitUsage)
				}
			}
		}
	}()
	return func() { close(done) }
}

// memoryLimit returns the most memory this process can have and what
// sets it: the least of physical memory (MemTotal of meminfo), the
// cgroup's memory.max, GOMEMLIMIT (as getenv reads it) and the address
// space limit (ulimit -v); 0 when none is known.
func memoryLimit(getenv func(string) string, meminfo, cgroupMax string) (uint64, string) {
	var best uint64
	var what string
	take := func(v uint64, w string) {
		if v > 0 && (best == 0 || v < best) {
			best, what = v, w
		}
	}
	if b, err := os.ReadFile(meminfo); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
				f := strings.Fields(rest)
				if len(f) == 2 && f[1] == "kB" {
					if v, err := strconv.ParseUint(f[0], 10, 64); err == nil {
						take(v<<10, "physical memory")
					}
				}
			}
		}
	}
	if b, err := os.ReadFile(cgroupMax); err == nil {
		if v, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64); err == nil {
			take(v, "the cgroup's memory.max")
		}
	}
	if v, ok := parseMemLimit(getenv("GOMEMLIMIT")); ok {
		take(v, "GOMEMLIMIT")
	}
	var rl syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_AS, &rl) == nil && rl.Cur != math.MaxUint64 {
		take(rl.Cur, "ulimit -v")
	}
	return best, what
}

// parseMemLimit reads a GOMEMLIMIT value: bytes, or a number with a B,
// KiB, MiB, GiB or TiB suffix; "off" or anything else is no limit.
func parseMemLimit(s string) (uint64, bool) {
	mult := uint64(1)
	for _, u := range []struct {
		suffix string
		m      uint64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"B", 1}} {
		if rest, ok := strings.CutSuffix(s, u.suffix); ok {
			s, mult = rest, u.m
			break
		}
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil || v == 0 || v > math.MaxUint64/mult {
		return 0, false
	}
	return v * mult, true
}
