package main

import (
	"runtime/debug"
	"testing"
)

// TestSetGC checks that spn collects at gcPercent by default and leaves
// the collector alone when the environment sets GOGC.
func TestSetGC(t *testing.T) {
	prev := debug.SetGCPercent(100)
	defer debug.SetGCPercent(prev)
	setGC(func(string) string { return "" })
	if got := debug.SetGCPercent(100); got != gcPercent {
		t.Errorf("without GOGC: GC percent %d, want %d", got, gcPercent)
	}
	setGC(func(k string) string {
		if k == "GOGC" {
			return "100"
		}
		return ""
	})
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("with GOGC=100: GC percent %d, want it left at 100", got)
	}
}
