package fit

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/data/ogb"
	"github.com/spn-project/spn/internal/testkit/mirrortest"
	"github.com/spn-project/spn/models"
	"github.com/spn-project/spn/models/cuda/engine"
	"github.com/spn-project/spn/models/espn"
	"github.com/spn-project/spn/models/internal/testkit/enginetest"
	"github.com/spn-project/spn/models/internal/testkit/modeltest"
	"github.com/spn-project/spn/schema/modelspec"
)

// baceSample returns the mirror's OGB bace (9 categorical atom and 3
// bond features, one binary task), hop sets up to 3, and 240 training,
// 60 validation and 60 test molecules of its scaffold split, evenly
// spaced over each set (the scaffold order groups the classes).
func baceSample(t *testing.T) (*data.Dataset, *data.Hops, Sets) {
	t.Helper()
	ds, err := ogb.Load(filepath.Join(mirrortest.Dir(t), "ogb", "bace.zip"), "bace")
	if err != nil {
		t.Fatal(err)
	}
	s := ds.Splits[0]
	return ds, modeltest.HopsOf(t, ds, 3), Sets{Train: spaced(s.Train, 480), Val: spaced(s.Val, 60), Test: spaced(s.Test, 60)}
}

// spaced returns n of ids (n ≤ len(ids)), evenly spaced.
func spaced(ids []int, n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = ids[i*len(ids)/n]
	}
	return out
}

// binaryTols bound the E-SPN runs on bace (relative to 1 + |CPU value|).
// They drift apart further than R-SPN on QM9: Adam's normalised steps
// turn the rounding differences of small gradients into steps of the
// order of lr, and here that reaches the AtomEncoder's rows of rare
// categories and the encoder bias (which every node shares) besides the
// biases that feed a batch norm. Largest seen on the emulated device over
// three epochs: training values 1.3e-4, parameters 4.9e-4 (enc.atom),
// validation and test losses and ROC-AUCs 4.7e-3; the selected epoch's
// validation ROC-AUC 0.659 on both devices (0.661 with dropout).
var binaryTols = fitTols{train: 1e-3, param: 5e-3, eval: 5e-2}

// TestTrainBinaryOnDevice trains E-SPN (k = 3, 2 layers, hidden 32, mean
// pooling, the AtomEncoder and a BondEncoder per layer) on a bace sample
// (baceSample) for three epochs at lr 1e-3, batch 32, selecting by
// validation ROC-AUC, on the emulated device and on the CPU
// (compareTrainOnDevice with binaryTols), without and with dropout 0.5.
func TestTrainBinaryOnDevice(t *testing.T) { trainBinaryOnDevice(t, enginetest.Emulated(t), false) }

// TestGPUTrainBinaryOnDevice is TestTrainBinaryOnDevice on GPU 0, with the
// GPU's tolerances (fitTols.on; it skips without one).
func TestGPUTrainBinaryOnDevice(t *testing.T) { trainBinaryOnDevice(t, enginetest.GPU(t), true) }

func trainBinaryOnDevice(t *testing.T, e *engine.Engine, gpu bool) {
	ds, hops, sets := baceSample(t)
	tr := modelspec.Training{Optimizer: "adam", LR: 1e-3, BatchSize: 32, Epochs: 3, Selection: SelectBestValMetric}
	reg := models.NewRegistry(espn.Kind{})
	for _, m := range []modelspec.Model{
		{Kind: "espn", K: 3, Layers: 2, Hidden: 32, Pool: "mean"},
		{Kind: "espn", K: 3, Layers: 2, Hidden: 32, Pool: "mean", Dropout: 0.5},
	} {
		t.Run(fmt.Sprintf("%s k=%d pool %s dropout %v", m.Kind, m.K, m.Pool, m.Dropout), func(t *testing.T) {
			compareTrainOnDevice(t, e, reg, m, ds, hops, sets, tr, "rocauc", binaryTols.on(gpu))
		})
	}
}
