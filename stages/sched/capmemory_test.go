package sched

import (
	"math"
	"testing"
)

func TestCapMemory(t *testing.T) {
	known := func(v uint64) func() (uint64, bool) { return func() (uint64, bool) { return v, true } }
	unknown := func() (uint64, bool) { return 0, false }
	for _, tc := range []struct {
		name  string
		avail func() (uint64, bool)
		limit int64
		want  uint64
		ok    bool
	}{
		{"no limit", known(8 << 30), math.MaxInt64, 8 << 30, true},
		{"limit below free", known(8 << 30), 2 << 30, 2 << 30, true},
		{"limit above free", known(1 << 30), 2 << 30, 1 << 30, true},
		{"limit, free unknown", unknown, 2 << 30, 2 << 30, true},
		{"nothing known", unknown, math.MaxInt64, 0, false},
		{"zero limit is none", known(3 << 30), 0, 3 << 30, true},
	} {
		got, ok := CapMemory(tc.avail, tc.limit)()
		if got != tc.want || ok != tc.ok {
			t.Errorf("%s: %d %v, want %d %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}
