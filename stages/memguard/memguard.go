// Package memguard bounds memory: the most memory this process can have
// (Limit: physical memory, the cgroup's bound, GOMEMLIMIT, ulimit -v), and
// a watch on the heap's growth (Watch) for work that cannot be
// interrupted, such as the CUE evaluation of a spec.
package memguard

import (
	"math"
	"os"
	"runtime/metrics"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// CgroupMemoryMax is where cgroup v2 states the memory bound of the
// process's group.
const CgroupMemoryMax = "/sys/fs/cgroup/memory.max"

// Watch samples the heap every 10 ms and calls exceeded once when it has
// grown by more than limit bytes since the call. Call the returned
// function to stop watching.
func Watch(limit uint64, exceeded func()) (stop func()) {
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
				if heap() > base+limit {
					exceeded()
					return
				}
			}
		}
	}()
	return func() { close(done) }
}

// Limit returns the most memory this process can have and what
// sets it: the least of physical memory (MemTotal of meminfo), the
// cgroup's memory.max, GOMEMLIMIT (as getenv reads it) and the address
// space limit (ulimit -v); 0 when none is known.
func Limit(getenv func(string) string, meminfo, cgroupMax string) (uint64, string) {
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
	if v, ok := ParseLimit(getenv("GOMEMLIMIT")); ok {
		take(v, "GOMEMLIMIT")
	}
	var rl syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_AS, &rl) == nil && rl.Cur != math.MaxUint64 {
		take(rl.Cur, "ulimit -v")
	}
	return best, what
}

// ParseLimit reads a GOMEMLIMIT value: bytes, or a number with a B,
// KiB, MiB, GiB or TiB suffix; "off" or anything else is no limit.
func ParseLimit(s string) (uint64, bool) {
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
