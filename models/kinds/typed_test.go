package kinds

import (
	"bytes"
	"context"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/internal/testkit/synth"
	"github.com/spn-project/spn/models"
	"github.com/spn-project/spn/models/drew"
	"github.com/spn-project/spn/models/espn"
	"github.com/spn-project/spn/models/internal/testkit/modeltest"
	"github.com/spn-project/spn/models/kernels"
	"github.com/spn-project/spn/models/predict"
	"github.com/spn-project/spn/models/rspn"
	"github.com/spn-project/spn/schema/modelspec"
)

// TestGlobalReadout: with global_readout the layers of every SPN kind get
// a d×d map whose gradient is not zero, without it they have none, and
// switching it on leaves every other parameter's initialisation alone.
func TestGlobalReadout(t *testing.T) {
	task := modeltest.NewTypedTask(t, synth.Relational, 40, 2)
	for _, kind := range []string{"spn", "gin", rspn.Name, espn.Name} {
		var initial map[string][]float32
		for _, on := range []bool{false, true} {
			cfg := modeltest.TypedConfig(kind, 2, models.PoolMean, task.DS)
			if kind == "gin" {
				cfg.Model.K = 1
			}
			cfg.Model.GlobalReadout = on
			m, err := All().New(cfg, 1, kernels.CPU{})
			if err != nil {
				t.Fatal(err)
			}
			if initial == nil {
				initial = map[string][]float32{}
				for _, p := range m.Params() {
					initial[p.Name] = append([]float32(nil), p.W...)
				}
			} else {
				for _, p := range m.Params() {
					if w, ok := initial[p.Name]; ok && !slices.Equal(w, p.W) {
						t.Errorf("%s: global_readout changes the initialisation of %s", kind, p.Name)
					}
				}
			}
			b, err := data.NewBatch(task.DS, task.Hops, task.Train[:8], 2)
			if err != nil {
				t.Fatal(err)
			}
			if _, _, err := m.(models.Stepper).Step(b); err != nil {
				t.Fatal(err)
			}
			var found int
			for _, p := range m.Params() {
				if !strings.Contains(p.Name, "global_readout") {
					continue
				}
				found++
				var norm float64
				for _, g := range p.G {
					norm += float64(g) * float64(g)
				}
				if norm == 0 {
					t.Errorf("%s: %s has a zero gradient", kind, p.Name)
				}
			}
			if want := map[bool]int{false: 0, true: 2}[on]; found != want {
				t.Errorf("%s global_readout=%v: %d readout maps, want %d", kind, on, found, want)
			}
		}
	}
}

// drewConfig is a 3-layer DRew over task's dataset (conv gine over edge
// features, else gin; learned weights) with delay ν.
func drewConfig(ds *data.Dataset, delay modelspec.Delay) models.Config {
	cfg := modeltest.TypedConfig(drew.Name, 0, models.PoolMean, ds)
	cfg.Model.Layers, cfg.Model.Delay, cfg.Model.Weights, cfg.Model.Conv = 3, delay, modelspec.WeightsLearned, modelspec.ConvGIN
	if len(ds.EdgeFeatVocab) > 0 {
		cfg.Model.Conv = modelspec.ConvGINE
	}
	return cfg
}

// TestTypedPredict: spn predict's path (hop sets computed on the fly, the
// dataset's vocabularies from the model's configuration) gives the
// model's own outputs, as σ(logit) per task for a binary task, for
// R-SPN and DRew-GIN (ν = 2) over typed edges and E-SPN and DRew-GINE
// (ν = 1) over edge features, each trained for an epoch first.
func TestTypedPredict(t *testing.T) {
	for _, gen := range []func(uint64, int, int) (*data.Dataset, *data.Hops, error){synth.Relational, synth.EdgeFeatures} {
		task := modeltest.NewTypedTask(t, gen, 30, 3)
		for _, kind := range []string{rspn.Name, drew.Name} {
			if task.DS.Task == data.TaskBinary && kind == rspn.Name {
				kind = espn.Name
			}
			typedPredict(t, task, kind)
		}
	}
}

// typedPredict is TestTypedPredict for one kind over task.
func typedPredict(t *testing.T, task modeltest.TypedTask, kind string) {
	cfg := modeltest.TypedConfig(kind, 2, models.PoolMean, task.DS)
	if kind == drew.Name {
		cfg = drewConfig(task.DS, modelspec.Delay(1+len(task.DS.EdgeFeatVocab)%2))
	}
	m, err := newModel(cfg, 1, kernels.CPU{})
	if err != nil {
		t.Fatal(err)
	}
	modeltest.FitTyped(t, m, task, 1, 1e-2)
	b, err := data.NewBatch(task.DS, task.Hops, task.Test, m.Hops())
	if err != nil {
		t.Fatal(err)
	}
	want, err := m.Predict(b)
	if err != nil {
		t.Fatal(err)
	}
	var graphs []data.Graph
	for _, j := range task.Test {
		graphs = append(graphs, task.DS.Graphs[j])
	}
	preds, err := predict.Graphs(context.Background(), m, graphs, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	c := task.DS.NumTargets
	binary := task.DS.Task == data.TaskBinary
	for i, p := range preds {
		vals := p.Values
		if binary {
			vals = p.TaskProbabilities
		}
		if len(vals) != c {
			t.Fatalf("%s graph %d: %d values, want %d", kind, i, len(vals), c)
		}
		for j, v := range vals {
			w := float64(want[i*c+j])
			if binary {
				w = 1 / (1 + math.Exp(-w))
			}
			if math.Abs(v-w) > 1e-6 {
				t.Fatalf("%s graph %d value %d: predict %v, model %v", kind, i, j, v, w)
			}
		}
	}
}

// BenchmarkTypedStep is one training step of SPN, R-SPN and E-SPN (k = 3,
// hidden 64, 4 layers) on a batch of 32 typed graphs of 8..14 nodes.
func BenchmarkTypedStep(b *testing.B) {
	for _, kind := range []string{"spn", rspn.Name, espn.Name} {
		b.Run(kind, func(b *testing.B) {
			ds, hops, err := synth.Relational(1, 32, 3)
			if err != nil {
				b.Fatal(err)
			}
			idx := make([]int, 32)
			for i := range idx {
				idx[i] = i
			}
			batch, err := data.NewBatch(ds, hops, idx, 3)
			if err != nil {
				b.Fatal(err)
			}
			cfg, err := models.ConfigFor(modelspec.Model{Kind: kind, K: 3, Layers: 4, Hidden: 64, Pool: models.PoolMean}, ds)
			if err != nil {
				b.Fatal(err)
			}
			m, err := All().New(cfg, 1, kernels.CPU{Threads: 1})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := m.(models.Stepper).Step(batch); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestTypedCheckpoint: a trained R-SPN (with global readout, and with
// the gated readout too), E-SPN (with global readout) and DRew (ν = ∞
// and ν = 2, whose delay the checkpoint writes "none" or 2) come back
// from a checkpoint through the registry with the same configuration and
// outputs.
func TestTypedCheckpoint(t *testing.T) {
	for i, kind := range []string{rspn.Name, espn.Name, rspn.Name, drew.Name, drew.Name} {
		task := modeltest.NewTypedTask(t, synth.Relational, 40, 3)
		cfg := modeltest.TypedConfig(kind, 2, models.PoolMean, task.DS)
		cfg.Model.GlobalReadout = true
		switch i {
		case 2:
			cfg.Model.GatedReadout, cfg.Model.Dropout = true, 0
		case 3, 4:
			cfg = drewConfig(task.DS, modelspec.Delay(2*(i-3)))
		}
		m, err := newModel(cfg, 3, kernels.CPU{})
		if err != nil {
			t.Fatal(err)
		}
		modeltest.FitTyped(t, m, task, 1, 1e-2)
		b, err := data.NewBatch(task.DS, task.Hops, task.Test, m.Hops())
		if err != nil {
			t.Fatal(err)
		}
		want, err := m.Predict(b)
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := models.WriteCheckpoint(&buf, m); err != nil {
			t.Fatal(err)
		}
		back, err := models.ReadCheckpoint(&buf, All(), kernels.CPU{})
		if err != nil {
			t.Fatal(err)
		}
		got, err := back.(gorgonia).Predict(b)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("%s: outputs after the checkpoint differ", kind)
		}
		if back.Config().Model != cfg.Model {
			t.Fatalf("%s: model %+v after the checkpoint, was %+v", kind, back.Config().Model, cfg.Model)
		}
	}
}
