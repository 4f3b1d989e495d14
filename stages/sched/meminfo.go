package sched

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
)

// MemInfoFile is where Linux reports the memory free for new work.
const MemInfoFile = "/proc/meminfo"

// MemAvailable returns a function reporting the MemAvailable line of the
// meminfo file at path (MemInfoFile), the kernel's estimate of the memory
// new work can take without swapping; ok is false where the file or the
// line is missing (another OS, an old kernel).
func MemAvailable(path string) func() (uint64, bool) {
	return func() (uint64, bool) {
		f, err := os.Open(path)
		if err != nil {
			return 0, false
		}
		defer f.Close()
		v, err := ParseMemAvailable(f)
		return v, err == nil
	}
}

// ParseMemAvailable reads the "MemAvailable:  123 kB" line of a meminfo
// file and returns it in bytes.
func ParseMemAvailable(r io.Reader) (uint64, error) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "MemAvailable:")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return 0, fmt.Errorf("meminfo line %q: want \"MemAvailable: N kB\"", sc.Text())
		}
		v, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil || v > 1<<53 {
			return 0, fmt.Errorf("meminfo line %q: bad number", sc.Text())
		}
		return v << 10, nil
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("meminfo has no MemAvailable line")
}

// CapMemory returns avail capped by the Go memory limit (limit, as
// debug.SetMemoryLimit(-1) reports it: GOMEMLIMIT, e.g. a cluster job's
// memory) when one is set: the memory free for new stages.
func CapMemory(avail func() (uint64, bool), limit int64) func() (uint64, bool) {
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
