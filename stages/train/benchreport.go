package train

import (
	"fmt"
	"runtime"

	"github.com/spn-project/spn/models/kernels"
	"github.com/spn-project/spn/schema"
	"github.com/spn-project/spn/stages"
)

// BenchReport is the JSON output of spn bench: what was trained, how, on
// what build, and one row per workload.
type BenchReport struct {
	Model    schema.Model    `json:"model"`
	Training schema.Training `json:"training"`
	Threads  int             `json:"threads"`
	// Jobs is the number of copies of each workload trained at once.
	Jobs int `json:"jobs"`
	// Warmup is the number of untimed epochs each workload trains before
	// the Training.Epochs that the figures cover.
	Warmup int `json:"warmup,omitempty"`
	// SyncSteps is --sync-steps: the host waited for every training step
	// on the GPU (fit.Options.SyncSteps) instead of pipelining them.
	SyncSteps bool   `json:"sync_steps,omitempty"`
	GEMM      string `json:"gemm"`
	// GEMMKernels names the kernels standing in for gonum's GEMM in the
	// default build (same bits), "" when gonum computes them all.
	GEMMKernels string `json:"gemm_kernels,omitempty"`
	GOMAXPROCS  int    `json:"gomaxprocs"`
	GoVersion   string `json:"go_version"`
	// Compute is the GPU the steps ran on (as in a train stage's
	// result.json); nil on the CPU.
	Compute   *stages.Compute `json:"compute,omitempty"`
	Workloads []BenchRow      `json:"workloads"`
}

// BenchSettings are spn bench's settings of a report: Adam's learning
// rate, the batch size, the timed epochs, the kernel threads per copy, the
// copies trained at once, the untimed warm-up epochs, and whether the host
// waits for every GPU step.
type BenchSettings struct {
	LR                                   float64
	Batch, Epochs, Threads, Jobs, Warmup int
	SyncSteps                            bool
}

// NewBenchReport returns the report of training model with s (optimizer
// Adam, the best validation loss selected); this build's GEMM, GOMAXPROCS
// and Go version filled in, no workloads yet.
func NewBenchReport(model schema.Model, s BenchSettings) BenchReport {
	return BenchReport{
		Model: model,
		Training: schema.Training{Optimizer: "adam", LR: s.LR, BatchSize: s.Batch, Epochs: s.Epochs,
			Selection: SelectBestValLoss},
		Threads: s.Threads, Jobs: s.Jobs, Warmup: s.Warmup, SyncSteps: s.SyncSteps,
		GEMM: kernels.GEMM, GEMMKernels: kernels.GEMMKernels(), GOMAXPROCS: runtime.GOMAXPROCS(0), GoVersion: runtime.Version(),
	}
}

// Check returns the first setting of r that no benchmark runs with:
// fewer than one epoch, a negative warm-up, a batch, threads or copies
// below one. Its errors begin with the setting's name as spn bench's
// flag names it (epochs, warmup, batch, threads, jobs).
func (r *BenchReport) Check() error {
	switch {
	case r.Training.Epochs < 1:
		return fmt.Errorf("epochs must be at least 1, got %d", r.Training.Epochs)
	case r.Warmup < 0:
		return fmt.Errorf("warmup must not be negative, got %d", r.Warmup)
	case r.Training.BatchSize < 1:
		return fmt.Errorf("batch must be at least 1, got %d", r.Training.BatchSize)
	case r.Threads < 1:
		return fmt.Errorf("threads must be at least 1, got %d", r.Threads)
	case r.Jobs < 1:
		return fmt.Errorf("jobs must be at least 1, got %d", r.Jobs)
	}
	return nil
}

// BenchWorkload is the report's label of the workload name (a dataset
// name as spn data takes it): the generated h-Proximity set "prox" is
// labelled with its h and size, "3-Prox (1000 graphs)".
func BenchWorkload(name string, proxH, graphs int) string {
	if name == "prox" {
		return fmt.Sprintf("%d-Prox (%d graphs)", proxH, graphs)
	}
	return name
}
