// Package generate implements the "generate" stage kind: it materialises a
// dataset (h-Proximity generated from its seed, a TU dataset, QM9 or an OGB
// MoleculeNet set fetched and parsed, a user's file) into the stage
// directory as stages.FileDataset.
package generate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/data/fetch"
	"github.com/spn-project/spn/data/graphfile"
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
	ds, src, err := BuildWithSources(ctx, p.Dataset, job.Env)
	if err != nil {
		return err
	}
	if err := data.WriteDatasetFile(filepath.Join(job.Dir, stages.FileDataset), ds); err != nil {
		return err
	}
	b, err := json.MarshalIndent(src, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding %s: %w", stages.FileSources, err)
	}
	if err := os.WriteFile(filepath.Join(job.Dir, stages.FileSources), append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", stages.FileSources, err)
	}
	if job.Log != nil {
		job.Log.Info("dataset written", "name", ds.Name, "graphs", len(ds.Graphs), "splits", len(ds.Splits))
	}
	return nil
}

// Build returns the dataset described by d.
func Build(ctx context.Context, d schema.Dataset, env stages.Env) (*data.Dataset, error) {
	ds, _, err := BuildWithSources(ctx, d, env)
	return ds, err
}

// BuildWithSources is Build that also returns the record of the files the
// dataset was read from (each checked against its built-in content
// figures, which env.AcceptDataMismatch may override).
func BuildWithSources(ctx context.Context, d schema.Dataset, env stages.Env) (*data.Dataset, stages.DataSources, error) {
	src := stages.DataSources{SPNVersion: env.SPNVersion, AcceptMismatch: env.AcceptDataMismatch, Files: []fetch.Source{}}
	f := &fetch.Fetcher{DataDir: env.DataDir, Mirror: env.Mirror, AcceptMismatch: env.AcceptDataMismatch}
	var ds *data.Dataset
	var err error
	switch d.Kind {
	case "prox":
		ds, err = prox.Generate(ctx, prox.Config{
			H: d.H, Graphs: d.Graphs, Levels: d.Levels, Width: d.Width,
			Seed: d.Seed, Folds: d.Folds, Negatives: d.Negatives, Balanced: d.Balanced,
			ColourBlind: d.ColourBlind, Threads: env.Threads,
		})
	case "tu":
		ds, err = tu.Fetch(ctx, f, d.Name)
	case "qm9":
		ds, err = qm9.Fetch(ctx, f, qm9.Options{Source: d.Source, TrainSize: d.TrainSize, Limit: d.Limit})
	case "ogb":
		if ds, err = ogb.Fetch(ctx, f, d.Name); err == nil {
			ds, err = ogb.Keep(ds, d.Features)
		}
	case "file":
		ds, err = readFile(d)
	default:
		err = fmt.Errorf("dataset kind %q is not supported (supported: prox, tu, qm9, ogb, file)", d.Kind)
	}
	if err != nil {
		return nil, src, err
	}
	src.Files = append(src.Files, f.Sources()...)
	return ds, src, nil
}

// readFile reads a file dataset (kind "file") from d.File, the path the
// spec resolved, which must still hold the content d.SHA256 names (the
// content the stage key was made from): fitted to d.Task, cut to d.Limit,
// and dealt into d.Folds folds from d.Seed when its lines carry no split.
func readFile(d schema.Dataset) (*data.Dataset, error) {
	var src *graphfile.Source
	var err error
	switch {
	case d.File == "":
		return nil, errors.New("file dataset without a resolved file (the spec was not loaded by spn vet, plan or run)")
	case d.Path != "":
		src, err = graphfile.ReadPath(d.File, d.File)
	default:
		src, err = graphfile.ReadStored(d.File, d.Name)
	}
	if err != nil {
		return nil, err
	}
	if src.SHA256 != d.SHA256 {
		return nil, fmt.Errorf("%s changed since the plan was made (SHA-256 %s, planned %s): plan again", d.File, src.SHA256, d.SHA256)
	}
	return src.Prepare(graphfile.Options{Task: d.Task, Limit: d.Limit, Folds: d.Folds, Seed: d.Seed})
}
