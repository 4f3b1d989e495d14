package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// spn table while another spn holds the cache lock: with --no-wait it
// fails at once naming the holder; without, it waits for the lock and then
// renders what the holder finished.
func TestTableWaitsForRun(t *testing.T) {
	dir := t.TempDir()
	cacheDir, lk := lockedCache(t, dir)
	r := spn(testEngine(), cacheDir, "table", "testdata/small.cue", "--out", filepath.Join(dir, "out"), "--no-wait")
	if r.code != exitFail || !strings.Contains(r.stderr, fmt.Sprintf("pid %d", os.Getpid())) || strings.Contains(r.stderr, "run it first") {
		t.Fatalf("table --no-wait under a lock: exit %d: %s", r.code, r.stderr)
	}
	// The "run" finishes while table waits.
	done := make(chan result)
	go func() {
		done <- spn(testEngine(), cacheDir, "table", "testdata/small.cue", "--out", filepath.Join(dir, "out"))
	}()
	time.Sleep(300 * time.Millisecond)
	lk.Unlock()
	r = <-done
	// Nothing ran meanwhile here, so after waiting it names what is missing.
	if r.code != exitFail || !strings.Contains(r.stderr, "experiment enz has no results") {
		t.Errorf("table after waiting: exit %d: %s", r.code, r.stderr)
	}
}
