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
	"slices"
	"sort"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/data/jsonl"
	"github.com/spn-project/spn/data/ogb"
	"github.com/spn-project/spn/models"
	"github.com/spn-project/spn/models/kernels"
	"github.com/spn-project/spn/models/predict"
	"github.com/spn-project/spn/schema"
	"github.com/spn-project/spn/stages"
	"github.com/spn-project/spn/stages/cache"
	"github.com/spn-project/spn/stages/plan"
	"github.com/spn-project/spn/stages/protocol"
	"github.com/spn-project/spn/stages/train"
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
	dir, exp, err := modelDir(spec, p, c, *expName, *split, *run, *point)
	if fe := (flagError{}); errors.As(err, &fe) {
		return usageErr("predict", err)
	} else if err != nil {
		return runtimeErr("predict", err)
	}
	threads := runtime.GOMAXPROCS(0)
	m, err := models.LoadCheckpoint(filepath.Join(dir, stages.FileModel), modelRegistry(en.reg), kernels.CPU{Threads: threads})
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
	if err := checkPredictInput(ds, m.Config()); err != nil {
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

// checkPredictInput checks what predict.Graphs does not read: every graph
// has a node, and the labels given ("y" or "target") fit the model.
func checkPredictInput(ds *data.Dataset, cfg models.Config) error {
	for i := range ds.Graphs {
		g := &ds.Graphs[i]
		if g.N == 0 {
			return &predict.GraphError{Graph: i, Err: errors.New(`"nodes": 0: a graph without nodes has no prediction`)}
		}
		if ds.NumClasses > 0 { // the lines carry "y"
			if cfg.Task != models.TaskClassification {
				return &predict.GraphError{Graph: i, Err: fmt.Errorf(`"y" given, but the model predicts %s targets ("target")`, cfg.Task)}
			}
			if g.Y >= cfg.Out {
				return &predict.GraphError{Graph: i, Err: fmt.Errorf(`"y": %d is outside the model's classes 0..%d`, g.Y, cfg.Out-1)}
			}
		}
		if g.Target != nil {
			if cfg.Task == models.TaskClassification {
				return &predict.GraphError{Graph: i, Err: fmt.Errorf(`"target" given, but the model predicts a class ("y" in 0..%d)`, cfg.Out-1)}
			}
			if len(g.Target) != cfg.Out {
				return &predict.GraphError{Graph: i, Err: fmt.Errorf(`"target" has %d values, the model predicts %d`, len(g.Target), cfg.Out)}
			}
		}
	}
	return nil
}

// modelRegistry returns the model constructors of the engine's train kind,
// so predict rebuilds models exactly as training built them.
func modelRegistry(reg *stages.Registry) models.Registry {
	if k, ok := reg.Get(stages.KindTrain); ok {
		if tk, ok := k.(train.Kind); ok {
			return tk.Registry()
		}
	}
	return train.Kind{}.Registry()
}

// modelDir finds the cached train stage of experiment name for split and
// run, at the position its protocol gives (holdout and fixed: of grid point
// point, or the evaluated winner, or the only point; errica: the fold's
// final run), and returns its directory with the experiment.
func modelDir(spec *schema.Spec, p *plan.Plan, c *cache.Cache, name string, split, run, point int) (string, schema.Experiment, error) {
	i := slices.IndexFunc(spec.Experiments, func(e schema.Experiment) bool { return e.Name == name })
	ev := p.Evaluate[name]
	if i < 0 || ev == nil {
		names := make([]string, 0, len(p.Evaluate))
		for n := range p.Evaluate {
			names = append(names, n)
		}
		sort.Strings(names)
		return "", schema.Experiment{}, flagError{fmt.Errorf("--experiment: no experiment %q in the spec (have %v)", name, names)}
	}
	e := spec.Experiments[i]
	proto, err := protocol.Get(e.Protocol.Kind)
	if err != nil {
		return "", schema.Experiment{}, fmt.Errorf("experiment %s: %w", name, err)
	}
	var winnerErr error
	idx, err := proto.Model(e.Protocol, len(e.Points), point, split, run, func() (int, error) {
		w, err := winner(c, ev, len(e.Points))
		winnerErr = err
		return w, err
	})
	if err != nil {
		err = fmt.Errorf("experiment %s (protocol %s): %w", name, e.Protocol.Kind, err)
		if winnerErr == nil {
			err = flagError{err} // --split, --run or --point out of range
		}
		return "", schema.Experiment{}, err
	}
	if idx >= len(ev.Deps) || ev.Deps[idx].Kind != stages.KindTrain {
		return "", schema.Experiment{}, fmt.Errorf("experiment %s: the plan has no train stage at position %d", name, idx)
	}
	t := ev.Deps[idx]
	tp, ok := t.Params.(stages.TrainParams)
	if !ok || tp.Split != split || tp.Run != run {
		return "", schema.Experiment{}, fmt.Errorf("experiment %s: plan order changed: stage %q is not split %d run %d", name, t.Name, split, run)
	}
	done, err := c.Has(t.Kind, t.Key)
	if err != nil {
		return "", schema.Experiment{}, err
	}
	if d := c.Damaged(t.Kind, t.Key); d != nil {
		return "", schema.Experiment{}, fmt.Errorf("the cached model of %s is damaged, so it is not used: %v; run the spec again to retrain it", t.Name, d)
	}
	if !done {
		return "", schema.Experiment{}, fmt.Errorf("%s is not trained yet (key %s): run the spec first", t.Name, t.ShortKey())
	}
	return c.StageDir(t.Kind, t.Key), e, nil
}

// flagError is an error caused by a flag's value: exit status 2.
type flagError struct{ error }

func (e flagError) Unwrap() error { return e.error }

// winner returns the holdout winner recorded by a finished evaluate stage,
// or 0 when the experiment has a single point.
func winner(c *cache.Cache, ev *plan.Node, points int) (int, error) {
	if points == 1 {
		return 0, nil
	}
	done, err := c.Has(ev.Kind, ev.Key)
	if err != nil {
		return 0, err
	}
	if d := c.Damaged(ev.Kind, ev.Key); d != nil {
		return 0, fmt.Errorf("the cached evaluation %s is damaged, so it is not used: %v; run the spec again or pass --point", ev.Name, d)
	}
	if !done {
		return 0, fmt.Errorf("%d grid points and no finished evaluation to pick the winner: pass --point or run the spec", points)
	}
	path := filepath.Join(c.StageDir(ev.Kind, ev.Key), stages.FileResult)
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("reading evaluation: %w", err)
	}
	var r stages.EvalResult
	if err := json.Unmarshal(b, &r); err != nil {
		return 0, fmt.Errorf("reading %s: %w", path, err)
	}
	if r.Winner < 0 || r.Winner >= points {
		return 0, fmt.Errorf("%s: winner %d outside the %d grid points", path, r.Winner, points)
	}
	return r.Winner, nil
}
