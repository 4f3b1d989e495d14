// Package generate implements the "generate" stage kind: it materialises a
// dataset (h-Proximity generated from its seed, a TU dataset, QM9 or an OGB
// MoleculeNet set fetched and parsed) into the stage directory as stages.FileDataset.
package generate

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/data/fetch"
	"github.com/spn-project/spn/data/ogb"
	"github.com/spn-project/spn/data/prox"
	"github.com/spn-project/spn/data/qm9"
	"github.com/spn-project/spn/data/tu"
	"github.com/spn-project/spn/schema"
	"github.com/spn-project/spn/stages"
)

// Kind is the generate stage kind.
type Kind struct{}

// Name returns "generate".
func (Kind) Name() string { return stages.KindGenerate }

// Version returns the kind's version.
func (Kind) Version() string { return "3" }

// Run builds the dataset of job.Params (stages.GenerateParams) and writes
// it to job.Dir/dataset.bin. h-Proximity uses the spec's dataset seed
// (not job.Seed), so equal dataset parameters give equal bytes.
func (Kind) Run(ctx context.Context, job *stages.Job) error {
	var p stages.GenerateParams
	if err := job.Decode(&p); err != nil {
		return err
	}
	ds, err := Build(ctx, p.Dataset, job.Env)
	if err != nil {
		return err
	}
	if err := data.WriteDatasetFile(filepath.Join(job.Dir, stages.FileDataset), ds); err != nil {
		return err
	}
	if job.Log != nil {
		job.Log.Info("dataset written", "name", ds.Name, "graphs", len(ds.Graphs), "splits", len(ds.Splits))
	}
	return nil
}

// Build returns the dataset described by d.
func Build(ctx context.Context, d schema.Dataset, env stages.Env) (*data.Dataset, error) {
	switch d.Kind {
	case "prox":
		return prox.Generate(ctx, prox.Config{
			H: d.H, Graphs: d.Graphs, Levels: d.Levels, Width: d.Width,
			Seed: d.Seed, Folds: d.Folds, Threads: env.Threads,
		})
	case "tu":
		f := &fetch.Fetcher{DataDir: env.DataDir, Mirror: env.Mirror}
		return tu.Fetch(ctx, f, d.Name)
	case "qm9":
		f := &fetch.Fetcher{DataDir: env.DataDir, Mirror: env.Mirror}
		return qm9.Fetch(ctx, f, qm9.Options{Source: d.Source, TrainSize: d.TrainSize, Limit: d.Limit})
	case "ogb":
		f := &fetch.Fetcher{DataDir: env.DataDir, Mirror: env.Mirror}
		return ogb.Fetch(ctx, f, d.Name)
	}
	return nil, fmt.Errorf("dataset kind %q is not supported (supported: prox, tu, qm9, ogb)", d.Kind)
}
