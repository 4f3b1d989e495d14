package main

import (
	"slices"
	"testing"
)

// TestSlurmStageArgs: the jobs' `spn stage run` gets the submitting run's
// cache, data dir, mirror, log level and --accept-data-mismatch, so an
// override accepted locally is not refused on the cluster.
func TestSlurmStageArgs(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    envOpts
		want []string
	}{
		{"plain", envOpts{dataDir: "/d", logLevel: "info"},
			[]string{"--cache", "/c", "--data-dir", "/d", "--log-level", "info"}},
		{"mirror and override", envOpts{dataDir: "/d", logLevel: "warn", mirror: "/m", acceptDataMismatch: true},
			[]string{"--cache", "/c", "--data-dir", "/d", "--log-level", "warn", "--mirror", "/m", "--accept-data-mismatch"}},
	} {
		if got := tc.o.stageArgs("/c"); !slices.Equal(got, tc.want) {
			t.Errorf("%s: stageArgs = %q, want %q", tc.name, got, tc.want)
		}
	}
}
