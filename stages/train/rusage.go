package train

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// cpuSeconds returns the user + system CPU time of the process so far.
func cpuSeconds() (float64, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, fmt.Errorf("getrusage: %w", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds(), nil
}

// resetPeakRSS resets the kernel's peak resident set size of this process
// (VmHWM) to the current one (Linux ≥ 4.0: "5" to /proc/self/clear_refs).
func resetPeakRSS() error {
	return os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
}

// peakRSS returns the process's peak resident set size in bytes: VmHWM
// from /proc/self/status, or getrusage's ru_maxrss where that is missing.
func peakRSS() (int64, error) {
	f, err := os.Open("/proc/self/status")
	if err == nil {
		defer f.Close()
		if v, ok, err := parseVmHWM(f); err != nil {
			return 0, fmt.Errorf("/proc/self/status: %w", err)
		} else if ok {
			return v, nil
		}
	}
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, fmt.Errorf("getrusage: %w", err)
	}
	return ru.Maxrss * 1024, nil // kilobytes on Linux
}

// parseVmHWM reads the "VmHWM:   123 kB" line of a /proc/PID/status file.
func parseVmHWM(r io.Reader) (int64, bool, error) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return 0, false, fmt.Errorf("VmHWM line %q: want \"VmHWM: N kB\"", sc.Text())
		}
		v, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil || v < 0 || v > math.MaxInt64>>10 {
			return 0, false, fmt.Errorf("VmHWM line %q: bad number", sc.Text())
		}
		return v * 1024, true, nil
	}
	return 0, false, sc.Err()
}
