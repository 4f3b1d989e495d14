package fit

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"testing"

	"github.com/spn-project/spn/models/curve"
	"github.com/spn-project/spn/schema/modelspec"
)

// TestPlateauMatchesTorch replays testdata/plateau_torch.json, the
// learning rates of PyTorch's ReduceLROnPlateau after each step on fixed
// value sequences (scripts/golden/torch_plateau.py: LRGB's
// configuration, PyTorch's defaults, max mode, cooldown, patience 0,
// min_lr clamping, the eps rule, negative values in max mode, NaN), and
// requires Plateau's rates to be the same float64 values.
func TestPlateauMatchesTorch(t *testing.T) {
	b, err := os.ReadFile("testdata/plateau_torch.json")
	if err != nil {
		t.Fatal(err)
	}
	var golden struct {
		Torch string
		Cases []struct {
			Name, Mode            string
			LR, Factor, Threshold float64
			MinLR                 float64 `json:"min_lr"`
			Patience, Cooldown    int
			Values                []*float64
			LRs                   []float64
		}
	}
	if err := json.Unmarshal(b, &golden); err != nil {
		t.Fatal(err)
	}
	if len(golden.Cases) < 9 {
		t.Fatalf("%d cases in the golden, want 9", len(golden.Cases))
	}
	for _, c := range golden.Cases {
		if len(c.Values) == 0 || len(c.Values) != len(c.LRs) {
			t.Fatalf("%s: %d values, %d rates", c.Name, len(c.Values), len(c.LRs))
		}
		p := NewPlateau(c.LR, modelspec.Plateau{Factor: c.Factor, Patience: c.Patience,
			Threshold: c.Threshold, MinLR: c.MinLR, Cooldown: c.Cooldown}, c.Mode == "max")
		for i, v := range c.Values {
			x := math.NaN()
			if v != nil {
				x = *v
			}
			p.Step(x)
			if p.LR() != c.LRs[i] {
				t.Fatalf("%s: after step %d (value %v) lr %v, PyTorch %s %v", c.Name, i+1, x, p.LR(), golden.Torch, c.LRs[i])
			}
		}
	}
}

// TestTrainUsesPlateau trains with a plateau schedule on each monitor and
// requires every epoch's learning rate to be the one a Plateau fed the
// previous epochs' validation values gives (the loop steps the schedule
// after each epoch's validation, in the mode of the monitor), with at
// least one reduction, and refuses a plateau beside a step schedule.
func TestTrainUsesPlateau(t *testing.T) {
	ds, hops := layered(t, 60, 2)
	m := modelspec.Model{Kind: "spn", K: 2, Layers: 2, Hidden: 8, Pool: "mean"}
	for _, monitor := range []string{modelspec.MonitorValLoss, modelspec.MonitorValMetric} {
		tr := training(6)
		// A threshold of 0.5: an epoch improves only by halving the
		// loss (or raising the accuracy by half), so rates fall.
		tr.Plateau = &modelspec.Plateau{Monitor: monitor, Factor: 0.5, Patience: 1, Threshold: 0.5, MinLR: 1e-3}
		res, err := Train(context.Background(), newModel(t, ds, m, 3), ds, hops, sets(ds), Options{Training: tr, Metric: "accuracy", Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		replay := NewPlateau(tr.LR, *tr.Plateau, monitor == modelspec.MonitorValMetric)
		for _, rec := range res.Epochs {
			if rec.LR != replay.LR() {
				t.Fatalf("%s: epoch %d trained at lr %v, the schedule gives %v", monitor, rec.Epoch, rec.LR, replay.LR())
			}
			v := rec.ValLoss
			if monitor == modelspec.MonitorValMetric {
				v = rec.ValScore
			}
			replay.Step(v)
		}
		if last := res.Epochs[len(res.Epochs)-1].LR; last >= tr.LR {
			t.Errorf("%s: lr never reduced (last epoch at %v)", monitor, last)
		}
	}
	tr := training(2)
	tr.StepEvery = 10
	tr.Plateau = &modelspec.Plateau{Monitor: modelspec.MonitorValLoss, Factor: 0.5, Patience: 1}
	if _, err := Train(context.Background(), newModel(t, ds, m, 3), ds, hops, sets(ds), Options{Training: tr, Metric: "accuracy", Seed: 1}); err == nil {
		t.Error("plateau and step_every together: trained, want an error")
	}
}

// TestPlateauMonitor checks which value the loop gives the schedule and
// in which mode: the validation loss (min), or the validation metric,
// max for accuracy and min for mae. Each sequence improves every epoch
// in the monitored value and its mode, and worsens in the other value,
// so the rate must stay at lr (patience 0 reduces at any bad epoch).
func TestPlateauMonitor(t *testing.T) {
	for _, tc := range []struct {
		monitor, metric string
		loss, score     []float64
	}{
		{modelspec.MonitorValLoss, "accuracy", []float64{1, 0.9, 0.8, 0.7}, []float64{0.8, 0.7, 0.6, 0.5}},
		{modelspec.MonitorValMetric, "accuracy", []float64{1, 1.1, 1.2, 1.3}, []float64{0.5, 0.6, 0.7, 0.8}},
		{modelspec.MonitorValMetric, "mae", []float64{1, 1.1, 1.2, 1.3}, []float64{0.8, 0.7, 0.6, 0.5}},
	} {
		tr := training(4)
		tr.Plateau = &modelspec.Plateau{Monitor: tc.monitor, Factor: 0.5, Patience: 0, Threshold: 1e-4}
		tn := &trainer{o: Options{Training: tr, Metric: tc.metric}, plateau: PlateauFor(tr, tc.metric)}
		for i := range tc.loss {
			tn.stepPlateau(curve.EpochRecord{ValLoss: tc.loss[i], ValScore: tc.score[i]})
			if lr := tn.plateau.LR(); lr != tr.LR {
				t.Fatalf("%s on %s: lr %v after epoch %d of improvement, want %v", tc.monitor, tc.metric, lr, i+1, tr.LR)
			}
		}
	}
	if p := PlateauFor(training(1), "accuracy"); p != nil {
		t.Error("PlateauFor without training.plateau: a schedule, want nil")
	}
}
