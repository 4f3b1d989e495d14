package fit

import (
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/internal/testkit/synth"
	"github.com/spn-project/spn/models"
	"github.com/spn-project/spn/models/curve"
	"github.com/spn-project/spn/models/internal/testkit/refkind"
	"github.com/spn-project/spn/models/kernels"
	"github.com/spn-project/spn/schema/modelspec"
)

func layered(t testing.TB, n, h int) (*data.Dataset, *data.Hops) {
	t.Helper()
	ds, hops, err := synth.Layered(3, n, h, [2]int{4, 7}, [2]int{2, 4}, 5)
	if err != nil {
		t.Fatal(err)
	}
	return ds, hops
}

func newModel(t testing.TB, ds *data.Dataset, m modelspec.Model, seed uint64) models.Model {
	t.Helper()
	cfg, err := models.ConfigFor(m, ds)
	if err != nil {
		t.Fatal(err)
	}
	mod, err := refkind.HandWritten().New(cfg, seed, kernels.CPU{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	return mod
}

func training(epochs int) modelspec.Training {
	return modelspec.Training{Optimizer: "adam", LR: 0.01, BatchSize: 16, Epochs: epochs, Selection: SelectBestValLoss}
}

func sets(ds *data.Dataset) Sets {
	s := ds.Splits[0]
	return Sets{Train: s.Train, Val: s.Val, Test: s.Test}
}

// TestModelsLearn trains each model kind on a small task it can solve and
// requires a test accuracy well above chance (0.5). SPN k=3 sees the
// red–blue distance ≤ 2 in one layer; GIN needs its 3 layers for it.
func TestModelsLearn(t *testing.T) {
	ds, hops := layered(t, 300, 2)
	for _, m := range []modelspec.Model{
		{Kind: "spn", K: 3, Layers: 2, Hidden: 16, Pool: "sum"},
		{Kind: "gin", K: 1, Layers: 3, Hidden: 16, Pool: "sum"},
	} {
		t.Run(m.Kind, func(t *testing.T) {
			mod := newModel(t, ds, m, 1)
			res, err := Train(context.Background(), mod, ds, hops, sets(ds), Options{Training: training(25), Metric: "accuracy", Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			best := res.Epochs[res.Best]
			if best.TestScore < 0.75 {
				t.Fatalf("%s: test accuracy %.3f at epoch %d, want ≥ 0.75", m.Kind, best.TestScore, best.Epoch)
			}
			t.Logf("%s: best epoch %d val %.3f test %.3f", m.Kind, best.Epoch, best.ValScore, best.TestScore)
		})
	}
}

// TestDeterministic checks that two runs with the same seeds give identical
// records (apart from timings) and checkpoints.
func TestDeterministic(t *testing.T) {
	ds, hops := layered(t, 80, 2)
	m := modelspec.Model{Kind: "spn", K: 2, Layers: 2, Hidden: 8, Pool: "mean", Dropout: 0.5}
	var js []string
	var cks []string
	for range 2 {
		res, err := Train(context.Background(), newModel(t, ds, m, 7), ds, hops, sets(ds), Options{Training: training(3), Metric: "accuracy", Seed: 5, Stream: 2})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.EpochSeconds) != len(res.Epochs) {
			t.Fatalf("%d epoch times for %d epochs", len(res.EpochSeconds), len(res.Epochs))
		}
		b, _ := json.Marshal(res.Epochs)
		js = append(js, string(b))
		cks = append(cks, string(res.Checkpoint))
	}
	if js[0] != js[1] || cks[0] != cks[1] {
		t.Fatal("two runs with the same seeds differ")
	}
}

func TestSelection(t *testing.T) {
	recs := []struct{ loss, score float64 }{{0.9, 0.5}, {0.5, 0.6}, {0.5, 0.8}, {0.7, 0.8}}
	pick := func(sel, metric string) int {
		best := -1
		var es []curve.EpochRecord
		for i, r := range recs {
			es = append(es, curve.EpochRecord{ValLoss: r.loss, ValScore: r.score})
			if best < 0 || better(sel, metric, es[i], es[best]) {
				best = i
			}
		}
		return best
	}
	tests := []struct {
		sel, metric string
		want        int
	}{
		{SelectBestValLoss, "accuracy", 1}, // tie at 0.5: earliest epoch
		{SelectBestValMetric, "accuracy", 2},
		{SelectBestValMetric, "mae", 0},
		{SelectEarlyStopping, "accuracy", 1},
	}
	for _, tc := range tests {
		if got := pick(tc.sel, tc.metric); got != tc.want {
			t.Errorf("%s/%s picks epoch index %d, want %d", tc.sel, tc.metric, got, tc.want)
		}
	}
}

func TestEarlyStoppingStops(t *testing.T) {
	ds, hops := layered(t, 60, 2)
	tr := training(30)
	tr.Selection, tr.Patience, tr.LR = SelectEarlyStopping, 2, 1e-6 // a tiny lr: no progress after a few epochs
	res, err := Train(context.Background(), newModel(t, ds, modelspec.Model{Kind: "gin", Layers: 1, Hidden: 4, Pool: "sum"}, 1), ds, hops, sets(ds), Options{Training: tr, Metric: "accuracy"})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(res.Epochs); n >= 30 || n < 3 || n-1-res.Best != 2 {
		t.Fatalf("ran %d epochs with best %d, want a stop exactly 2 epochs after the best", n, res.Best)
	}
}

func TestLearningRate(t *testing.T) {
	tr := modelspec.Training{LR: 0.1, StepEvery: 2, StepGamma: 0.5}
	want := []float64{0.1, 0.1, 0.05, 0.05, 0.025}
	for e, w := range want {
		if got := LearningRate(tr, e+1); got != w {
			t.Errorf("epoch %d: lr %v, want %v", e+1, got, w)
		}
	}
	if got := LearningRate(modelspec.Training{LR: 0.3}, 9); got != 0.3 {
		t.Errorf("constant schedule gives %v", got)
	}
}

func TestDivergenceFails(t *testing.T) {
	ds, hops := layered(t, 40, 2)
	tr := training(5)
	tr.LR = 1e30
	_, err := Train(context.Background(), newModel(t, ds, modelspec.Model{Kind: "spn", K: 2, Layers: 2, Hidden: 8, Pool: "sum"}, 1), ds, hops, sets(ds), Options{Training: tr, Metric: "accuracy"})
	if err == nil || !strings.Contains(err.Error(), "diverged") || !strings.Contains(err.Error(), "epoch") {
		t.Fatalf("err = %v, want a divergence error naming the epoch", err)
	}
}

func TestOptionErrors(t *testing.T) {
	ds, hops := layered(t, 20, 2)
	mod := newModel(t, ds, modelspec.Model{Kind: "gin", Layers: 1, Hidden: 4, Pool: "sum"}, 1)
	tests := []struct {
		edit func(*modelspec.Training)
		want string
	}{
		{func(tr *modelspec.Training) { tr.Optimizer = "sgd" }, `optimizer "sgd" is not supported`},
		{func(tr *modelspec.Training) { tr.Epochs = 0 }, "training.epochs = 0"},
		{func(tr *modelspec.Training) { tr.Selection = "last" }, `selection "last" is unknown`},
		{func(tr *modelspec.Training) { tr.Selection = SelectEarlyStopping }, "patience = 0"},
	}
	for _, tc := range tests {
		tr := training(1)
		tc.edit(&tr)
		_, err := Train(context.Background(), mod, ds, hops, sets(ds), Options{Training: tr, Metric: "accuracy"})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("err = %v, want containing %q", err, tc.want)
		}
	}
}

// TestRegressionLearns fits the node count / 10 of layered graphs (sum
// pooling can express it) and requires a test MAE below half that of
// predicting the training mean.
func TestRegressionLearns(t *testing.T) {
	ds, hops := layered(t, 200, 2)
	ds.NumClasses, ds.NumTargets = 0, 1
	for i := range ds.Graphs {
		ds.Graphs[i].Target = []float64{float64(ds.Graphs[i].N) / 10}
	}
	s := sets(ds)
	var mean float64
	for _, i := range s.Train {
		mean += ds.Graphs[i].Target[0]
	}
	mean /= float64(len(s.Train))
	var base float64
	for _, i := range s.Test {
		base += math.Abs(ds.Graphs[i].Target[0] - mean)
	}
	base /= float64(len(s.Test))
	mod := newModel(t, ds, modelspec.Model{Kind: "spn", K: 2, Layers: 2, Hidden: 16, Pool: "sum"}, 1)
	res, err := Train(context.Background(), mod, ds, hops, s, Options{Training: training(30), Metric: "mae", Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	best := res.Epochs[res.Best]
	if best.TestScore > base/2 {
		t.Fatalf("test MAE %.3f, baseline %.3f: want below half the baseline", best.TestScore, base)
	}
}

// TestBinaryLoss: the multi-task loss is BCE with logits over the labelled
// entries only.
func TestBinaryLoss(t *testing.T) {
	cfg := models.Config{Task: models.TaskBinary, Out: 2}
	b := &data.Batch{NumGraphs: 2, Target: []float64{1, math.NaN(), 0, 1}}
	loss, grad, err := Loss(cfg, []float32{0, 42, 0, 0}, b)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(loss-math.Ln2) > 1e-12 || grad[1] != 0 || math.Abs(float64(grad[0])+0.5/3) > 1e-7 {
		t.Fatalf("loss %v, grad %v; want ln 2 and (σ(0)−1)/3 = −1/6 at [0], 0 at the missing label", loss, grad)
	}
	if _, _, err := Loss(cfg, []float32{0, 0}, b); err == nil || !strings.Contains(err.Error(), "4 binary labels for 2 outputs") {
		t.Fatalf("mismatch: %v", err)
	}
}
