package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"

	"github.com/spn-project/spn/data/jsonl"
	"github.com/spn-project/spn/data/ogb"
	"github.com/spn-project/spn/models"
	"github.com/spn-project/spn/models/kernels"
	"github.com/spn-project/spn/models/predict"
	"github.com/spn-project/spn/stages"
	"github.com/spn-project/spn/stages/cache"
	"github.com/spn-project/spn/stages/device"
	"github.com/spn-project/spn/stages/trained"
)

func cmdPredict(a *app, args []string) error { return a.predict(realEngine(), args) }

// predictLine is one output line of spn predict.
type predictLine struct {
	Graph int `json:"graph"`
	predict.Prediction
}

// predict runs a trained model of an experiment on graphs read as JSONL
// (the format of spn data export) and prints one JSON line per graph.
func (a *app) predict(en *engine, args []string) error {
	fs := a.newFlagSet("predict", "predict SPEC --experiment NAME --input graphs.jsonl [--split S --run R --point P] [flags]")
	o := a.envFlags(fs)
	planDeviceFlag(fs, &o.device)
	expName := fs.String("experiment", "", "experiment `name` whose trained model predicts")
	input := fs.String("input", "", "graphs as JSONL `file` (- for stdin)")
	split := fs.Int("split", 0, "`split` (fold) whose model predicts")
	run := fs.Int("run", 0, "`run` whose model predicts")
	point := fs.Int("point", -1, "grid `point` (holdout; default: the evaluated winner, or the only point)")
	maxHop := fs.Int64("max-hop-entries", 1<<28, "most hop-set entries (N_1..N_k, and N_∞ for a model that reads it, together; 4 bytes each) one input `graph` may have")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return usageErr("predict", err)
	}
	if len(pos) != 1 {
		return usageErr("predict", fmt.Errorf("want one spec FILE, got %d arguments", len(pos)))
	}
	if *expName == "" || *input == "" {
		return usageErr("predict", fmt.Errorf("--experiment and --input are required"))
	}
	if err := o.resolve(a); err != nil {
		return usageErr("predict", err)
	}
	spec, p, _, err := a.buildPlan(en, "predict", pos[0], o)
	if err != nil {
		return err
	}
	c := &cache.Cache{Root: o.cache}
	dir, exp, err := trained.ModelDir(spec, p, c, trained.Query{Experiment: *expName, Split: *split, Run: *run, Point: *point})
	if fe := (trained.FlagError{}); errors.As(err, &fe) {
		return usageErr("predict", err)
	} else if err != nil {
		return runtimeErr("predict", err)
	}
	threads := runtime.GOMAXPROCS(0)
	m, err := models.LoadCheckpoint(filepath.Join(dir, stages.FileModel), device.TrainModels(en.reg), kernels.CPU{Threads: threads})
	if err != nil {
		return runtimeErr("predict", err)
	}
	var r io.Reader = os.Stdin
	name := "stdin"
	if *input != "-" {
		f, err := os.Open(*input)
		if err != nil {
			return usageErrf("predict", "--input: %w", err)
		}
		defer f.Close()
		r, name = f, *input
	}
	// The input is the user's: every error about it names the file and
	// the line ("FILE:LINE: ...") and is a validation error (exit 2).
	var lines []int
	inputErr := func(err error) error {
		var le *jsonl.LineError
		var ge *predict.GraphError
		switch {
		case errors.As(err, &le):
			return usageErr("predict", le)
		case errors.As(err, &ge) && ge.Graph >= 0 && ge.Graph < len(lines):
			return usageErrf("predict", "%s:%d: graph %d: %w", name, lines[ge.Graph], ge.Graph, ge.Err)
		}
		return usageErr("predict", err)
	}
	ds, lines, err := jsonl.ReadUnlabelled(r, name)
	if err != nil {
		return inputErr(err)
	}
	// A model trained on OGB's simple feature set reads the first two
	// atom and bond features of molecules given with all of them.
	if exp.Dataset.Kind == "ogb" {
		if ds, err = ogb.Keep(ds, exp.Dataset.Features); err != nil {
			return runtimeErr("predict", err)
		}
	}
	if err := predict.CheckInput(ds, m.Config()); err != nil {
		return inputErr(err)
	}
	if *maxHop < 1 {
		return usageErrf("predict", "--max-hop-entries must be positive, got %d", *maxHop)
	}
	preds, err := predict.Graphs(context.Background(), m, ds.Graphs, threads, *maxHop)
	if err != nil {
		var ge *predict.GraphError
		if errors.As(err, &ge) {
			return inputErr(err)
		}
		return runtimeErrf("predict", "%s: %w", name, err)
	}
	enc := json.NewEncoder(a.stdout)
	for i, pr := range preds {
		if err := enc.Encode(predictLine{Graph: i, Prediction: pr}); err != nil {
			return runtimeErr("predict", err)
		}
	}
	return nil
}
