package trained

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spn-project/spn/schema"
	"github.com/spn-project/spn/stages"
	"github.com/spn-project/spn/stages/cache"
	"github.com/spn-project/spn/stages/plan"
)

type testKind string

func (k testKind) Name() string                         { return string(k) }
func (testKind) Version() string                        { return "1" }
func (testKind) Run(context.Context, *stages.Job) error { return nil }

// setup plans one holdout experiment with two grid points (k = 1 and k =
// 2), 2 splits and 2 runs, and opens an empty cache.
func setup(t *testing.T) (*schema.Spec, *plan.Plan, *cache.Cache) {
	t.Helper()
	pt := func(k int) schema.Point {
		return schema.Point{
			Values:   []schema.GridValue{{Path: "model.k", Value: k}},
			Model:    schema.Model{Kind: "spn", K: k, Layers: 2, Hidden: 8, Pool: "sum"},
			Training: schema.Training{Optimizer: "adam", LR: 0.01, BatchSize: 16, Epochs: 3, Selection: "best_val_metric"},
		}
	}
	spec := &schema.Spec{Name: "t", Device: "cpu", Mode: "smoke", Experiments: []schema.Experiment{{
		Name: "prox_spn",
		Dataset: schema.Dataset{Kind: "prox", H: 3, Graphs: 40, Levels: [2]int{2, 3}, Width: [2]int{2, 3},
			Seed: 7, Folds: 2, KMax: 2},
		Protocol: schema.Protocol{Kind: "holdout", Splits: 2, Runs: 2, SelectOn: "val_metric", Metric: "accuracy"},
		Seeds:    []int64{1},
		Points:   []schema.Point{pt(1), pt(2)},
	}}}
	var ks []stages.Kind
	for _, n := range []string{stages.KindGenerate, stages.KindPrecompute, stages.KindTrain,
		stages.KindSelect, stages.KindEvaluate, stages.KindTabulate} {
		ks = append(ks, testKind(n))
	}
	p, err := plan.Build(spec, stages.NewRegistry(ks...))
	if err != nil {
		t.Fatal(err)
	}
	c, err := cache.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return spec, p, c
}

// commit stores node n in c as a finished stage holding one file.
func commit(t *testing.T, c *cache.Cache, n *plan.Node) {
	t.Helper()
	tmp, err := c.NewTemp(n.Key)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tmp, "model.bin"), []byte("weights"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := c.Commit(tmp, &cache.Record{Key: n.Key, Kind: n.Kind, Version: n.Version, Name: n.Name}); err != nil {
		t.Fatal(err)
	}
}

// trainAt is the train stage of point, split and run in plan order.
func trainAt(t *testing.T, p *plan.Plan, point, split, run int) *plan.Node {
	t.Helper()
	for _, n := range p.Evaluate["prox_spn"].Deps {
		tp, ok := n.Params.(stages.TrainParams)
		if ok && tp.Split == split && tp.Run == run && tp.Point != nil && tp.Point.Model.K == point+1 {
			return n
		}
	}
	t.Fatalf("no train stage for point %d split %d run %d", point, split, run)
	return nil
}

func TestModelDir(t *testing.T) {
	spec, p, c := setup(t)
	want := trainAt(t, p, 1, 1, 0)

	// Not trained yet: says so, with the stage's short key; not a flag error.
	_, _, err := ModelDir(spec, p, c, Query{Experiment: "prox_spn", Split: 1, Run: 0, Point: 1})
	var fe FlagError
	if err == nil || !strings.Contains(err.Error(), "not trained yet") || !strings.Contains(err.Error(), want.ShortKey()) || errors.As(err, &fe) {
		t.Fatalf("untrained: %v", err)
	}

	commit(t, c, want)
	dir, e, err := ModelDir(spec, p, c, Query{Experiment: "prox_spn", Split: 1, Run: 0, Point: 1})
	if err != nil || dir != c.StageDir(stages.KindTrain, want.Key) || e.Name != "prox_spn" {
		t.Fatalf("trained: %q %q %v, want %q", dir, e.Name, err, c.StageDir(stages.KindTrain, want.Key))
	}

	// A damaged model is refused, naming the stage.
	if err := os.WriteFile(filepath.Join(dir, "model.bin"), []byte("changed"), 0o644); err != nil {
		t.Fatal(err)
	}
	c.Forget() // as a new process finds it
	if _, _, err := ModelDir(spec, p, c, Query{Experiment: "prox_spn", Split: 1, Run: 0, Point: 1}); err == nil || !strings.Contains(err.Error(), "damaged") || !strings.Contains(err.Error(), want.Name) {
		t.Fatalf("damaged: %v", err)
	}

	// Wrong flags are flag errors that name what exists.
	for _, tc := range []struct {
		q    Query
		want string
	}{
		{Query{Experiment: "nope", Point: -1}, `no experiment "nope" in the spec (have [prox_spn])`},
		{Query{Experiment: "prox_spn", Split: 2, Point: 0}, "split"},
		{Query{Experiment: "prox_spn", Run: 5, Point: 0}, "run"},
		{Query{Experiment: "prox_spn", Point: 2}, "grid points 0..1; asked for 2"},
	} {
		_, _, err := ModelDir(spec, p, c, tc.q)
		if err == nil || !errors.As(err, &fe) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want a flag error with %q", tc.q, err, tc.want)
		}
	}

	// Two points and no evaluated winner: the winner's error, which is
	// not a flag error.
	if _, _, err := ModelDir(spec, p, c, Query{Experiment: "prox_spn", Point: -1}); err == nil || errors.As(err, &fe) {
		t.Fatalf("winner without an evaluate stage: %v", err)
	}
}
