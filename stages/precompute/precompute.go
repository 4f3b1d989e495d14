// Package precompute implements the "precompute" stage kind: it reads the
// dataset of its generate input and writes the shortest-path hop sets
// N_1..N_KMax (and N_∞ when asked) as stages.FileHops.
package precompute

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/data/sp"
	"github.com/spn-project/spn/stages"
)

// Kind is the precompute stage kind.
type Kind struct{}

// Name returns "precompute".
func (Kind) Name() string { return stages.KindPrecompute }

// Version returns the kind's version.
func (Kind) Version() string { return "1" }

// Run computes the hop sets with job.Env.Threads threads. A KMax of 0 means
// sp.DefaultKMax.
func (Kind) Run(ctx context.Context, job *stages.Job) error {
	var p stages.PrecomputeParams
	if err := job.Decode(&p); err != nil {
		return err
	}
	if p.KMax == 0 {
		p.KMax = sp.DefaultKMax
	}
	in := job.InputsOf(stages.KindGenerate)
	if len(in) != 1 {
		return fmt.Errorf("want exactly one generate input, got %d", len(in))
	}
	ds, err := data.ReadDatasetFile(filepath.Join(in[0].Dir, stages.FileDataset))
	if err != nil {
		return err
	}
	h, err := sp.Compute(ctx, ds.Graphs, p.KMax, p.Unreachable, job.Env.Threads)
	if err != nil {
		return err
	}
	if err := data.WriteHopsFile(filepath.Join(job.Dir, stages.FileHops), h); err != nil {
		return err
	}
	return nil
}
