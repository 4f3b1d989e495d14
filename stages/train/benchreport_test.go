package train

import (
	"runtime"
	"strings"
	"testing"

	"github.com/spn-project/spn/models/kernels"
	"github.com/spn-project/spn/schema"
)

// TestBenchReportCheck: a report of runnable settings passes; each
// impossible setting is named, the first one when several are.
func TestBenchReportCheck(t *testing.T) {
	model := schema.Model{Kind: "spn", K: 2, Layers: 2, Hidden: 8, Pool: "sum"}
	for _, tc := range []struct {
		name                                 string
		batch, epochs, threads, jobs, warmup int
		want                                 string // "" when valid
	}{
		{"valid", 32, 1, 2, 1, 0, ""},
		{"valid with warm-up", 1, 3, 1, 4, 2, ""},
		{"no epochs", 32, 0, 2, 1, 0, "epochs must be at least 1, got 0"},
		{"negative warm-up", 32, 1, 2, 1, -1, "warmup must not be negative, got -1"},
		{"no batch", 0, 1, 2, 1, 0, "batch must be at least 1, got 0"},
		{"no threads", 32, 1, 0, 1, 0, "threads must be at least 1, got 0"},
		{"no copies", 32, 1, 2, 0, 0, "jobs must be at least 1, got 0"},
		{"epochs first", 0, 0, 0, 0, -1, "epochs must be at least 1, got 0"},
	} {
		rep := NewBenchReport(model, BenchSettings{LR: 1e-3, Batch: tc.batch, Epochs: tc.epochs, Threads: tc.threads, Jobs: tc.jobs, Warmup: tc.warmup})
		err := rep.Check()
		if got := ""; err != nil {
			got = err.Error()
			if got != tc.want {
				t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
			}
		} else if tc.want != "" {
			t.Errorf("%s: no error, want %q", tc.name, tc.want)
		}
	}
	rep := NewBenchReport(model, BenchSettings{LR: 0.01, Batch: 8, Epochs: 2, Threads: 3, Jobs: 1, Warmup: 1, SyncSteps: true})
	if rep.Training.Optimizer != "adam" || rep.Training.LR != 0.01 || rep.Training.BatchSize != 8 || rep.Training.Epochs != 2 ||
		rep.Training.Selection != SelectBestValLoss || rep.Threads != 3 || !rep.SyncSteps || rep.GEMM != kernels.GEMM ||
		rep.GoVersion != runtime.Version() || !strings.HasPrefix(rep.GoVersion, "go") || rep.Workloads != nil {
		t.Errorf("report %+v", rep)
	}
}

// TestBenchWorkload: prox is labelled with its h and size, any other
// dataset by its name.
func TestBenchWorkload(t *testing.T) {
	for _, tc := range []struct {
		name          string
		proxH, graphs int
		want          string
	}{
		{"prox", 3, 1000, "3-Prox (1000 graphs)"},
		{"prox", 5, 40, "5-Prox (40 graphs)"},
		{"PROTEINS", 3, 1000, "PROTEINS"},
		{"Prox", 3, 1000, "Prox"},
	} {
		if got := BenchWorkload(tc.name, tc.proxH, tc.graphs); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
