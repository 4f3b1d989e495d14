package rspn

import (
	"fmt"
	"testing"

	"github.com/spn-project/spn/internal/testkit/synth"
	"github.com/spn-project/spn/models"
	"github.com/spn-project/spn/models/internal/testkit/modeltest"
	"github.com/spn-project/spn/models/kernels"
)

// TestRSPNLearnsRelations regresses, per graph, the mean over nodes u of
// the number of label-1 neighbours along relation r_1 minus those along
// r_2: a target only relation-aware messages can compute. R-SPN's test MAE
// must fall well below that of predicting the training mean.
func TestRSPNLearnsRelations(t *testing.T) {
	task := modeltest.NewTypedTask(t, synth.Relational, 600, 2)
	m, err := New(modeltest.TypedConfig(Name, 2, models.PoolMean, task.DS), 7, kernels.CPU{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	out, b := modeltest.FitTyped(t, m, task, 20, 1e-2)
	mae, baseMAE := modeltest.MAEAgainstMean(task, out, b)
	t.Logf("rspn: test MAE %.4f, predicting the training mean %.4f", mae, baseMAE)
	if mae > 0.5*baseMAE {
		t.Errorf("rspn test MAE %.4f, want ≤ half of the mean predictor's %.4f", mae, baseMAE)
	}
}

// TestRSPNLearnsQM9 trains R-SPN (k = 3, 6 epochs, lr 1e-3) on the first
// 1000 molecules of QM9's validation file (the mirror's; 800 for
// training), regressing U0 (z-scored; an extensive property) over the 4
// bond types, with the layer readout (mean pooling) and with the gated
// readout; each test MAE must fall well below that of predicting the
// training mean.
func TestRSPNLearnsQM9(t *testing.T) {
	for _, gated := range []bool{false, true} {
		t.Run(fmt.Sprintf("gated=%v", gated), func(t *testing.T) { learnQM9(t, gated) })
	}
}

func learnQM9(t *testing.T, gated bool) {
	if testing.Short() {
		t.Skip("trains on QM9")
	}
	ds := modeltest.QM9U0(t, 1000)
	task := modeltest.TypedTask{DS: ds, Hops: modeltest.HopsOf(t, ds, 3)}
	for j := range ds.Graphs {
		if j%5 == 0 {
			task.Test = append(task.Test, j)
		} else {
			task.Train = append(task.Train, j)
		}
	}
	cfg := modeltest.TypedConfig(Name, 3, models.PoolMean, ds)
	if gated {
		cfg.Model.GatedReadout = true
		cfg.Model.Dropout = 0
	}
	m, err := New(cfg, 7, kernels.CPU{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	out, b := modeltest.FitTyped(t, m, task, 6, 1e-3)
	mae, baseMAE := modeltest.MAEAgainstMean(task, out, b)
	t.Logf("rspn (gated readout %v) on QM9 U0 (800 train molecules): test MAE %.4f, predicting the training mean %.4f", gated, mae, baseMAE)
	if mae > 0.5*baseMAE {
		t.Errorf("rspn test MAE %.4f, want ≤ half of the mean predictor's %.4f", mae, baseMAE)
	}
}
