package espn

import (
	"path/filepath"
	"testing"

	"github.com/spn-project/spn/data/ogb"
	"github.com/spn-project/spn/internal/testkit/mirrortest"
	"github.com/spn-project/spn/internal/testkit/synth"
	"github.com/spn-project/spn/models"
	"github.com/spn-project/spn/models/internal/testkit/modeltest"
	"github.com/spn-project/spn/models/kernels"
	"github.com/spn-project/spn/models/metric"
)

// TestESPNLearnsEdgeFeatures classifies two binary tasks over edge
// features (a quarter of the labels missing): task 1, more edges with
// feature 0 = 2 than = 0; task 2, an edge with feature 1 = 1 between two
// nodes whose categorical feature 1 is 2. E-SPN's mean test ROC-AUC must
// be well above chance (0.5).
func TestESPNLearnsEdgeFeatures(t *testing.T) {
	task := modeltest.NewTypedTask(t, synth.EdgeFeatures, 600, 2)
	m, err := New(modeltest.TypedConfig(Name, 2, models.PoolSum, task.DS), 7, kernels.CPU{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	out, b := modeltest.FitTyped(t, m, task, 30, 3e-3)
	auc, err := metric.MeanROCAUC(out, b.Target, 2)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("espn: mean test ROC-AUC %.3f", auc)
	// 0.855 in the default (gonum) build, 0.839 with -tags openblas: the
	// bar must hold for both GEMM builds' bits.
	if auc < 0.8 {
		t.Errorf("espn mean test ROC-AUC %.3f, want ≥ 0.8", auc)
	}
}

// TestESPNLearnsBACE trains E-SPN (k = 3) briefly on OGB's bace (the
// mirror's zip; 1513 molecules, scaffold split, 9 atom and 3 bond
// features); its validation ROC-AUC must be well above chance (0.5).
func TestESPNLearnsBACE(t *testing.T) {
	if testing.Short() {
		t.Skip("trains on bace")
	}
	ds, err := ogb.Load(filepath.Join(mirrortest.Dir(t), "ogb", "bace.zip"), "bace")
	if err != nil {
		t.Fatal(err)
	}
	s := ds.Splits[0]
	task := modeltest.TypedTask{DS: ds, Hops: modeltest.HopsOf(t, ds, 3), Train: s.Train, Test: s.Val}
	m, err := New(modeltest.TypedConfig(Name, 3, models.PoolMean, ds), 7, kernels.CPU{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	out, b := modeltest.FitTyped(t, m, task, 8, 3e-3)
	auc, err := metric.MeanROCAUC(out, b.Target, ds.NumTargets)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("espn on bace (%d train molecules, 8 epochs): validation ROC-AUC %.3f", len(s.Train), auc)
	// 0.678 in the default (gonum) build, 0.649 with -tags openblas; more
	// epochs do not raise it reliably (15 epochs: 0.506 / 0.591), so the bar
	// is "clearly above chance" for both builds, not a tuned score.
	if auc < 0.6 {
		t.Errorf("espn validation ROC-AUC %.3f on bace, want ≥ 0.6", auc)
	}
}
