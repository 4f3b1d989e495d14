package fit

import (
	"testing"

	"github.com/spn-project/spn/data/tu"
	"github.com/spn-project/spn/internal/testkit/mirrortest"
	"github.com/spn-project/spn/models"
	"github.com/spn-project/spn/models/baseline"
	"github.com/spn-project/spn/models/cuda/engine"
	"github.com/spn-project/spn/models/internal/testkit/enginetest"
	"github.com/spn-project/spn/schema/modelspec"
)

// baselineFitTol bounds |device − CPU| of every epoch's losses and
// accuracies relative to 1 + |CPU value|. The baseline has no batch norm
// and no dropout; its device steps differ from the CPU's by the order of
// cuBLAS's products only. Largest seen on the emulated device over three
// epochs: 0 (NCI1: the same bits), 1.7e-7 (ENZYMES).
const baselineFitTol = 1e-4

// TestTrainBaselineOnDevice trains the baseline for three epochs (Adam,
// lr 1e-3, batch 32, best validation loss) on samples of the mirror's
// NCI1 (the fingerprint form over node labels) and ENZYMES
// (DeepMultisets over labels and 18 attributes): 240 training, 60
// validation and 60 test graphs of Errica et al.'s first split, evenly
// spaced, on the emulated device (steps, Adam and evaluation) with a CPU
// host model for the checkpoint, and on the CPU (compareTrainOnDevice
// with baselineFitTol for every value): every epoch's record and the
// selected epoch's parameters agree within baselineFitTol, the training
// loss falls, the selected epoch is the same, a second device run gives
// the same records and checkpoint bytes, the model is copied to the host
// once per newly selected epoch, and the checkpoint reloaded on the
// device scores the selected epoch's validation loss and accuracy bit
// for bit (on the CPU within 1e-5·(1 + |value|)).
func TestTrainBaselineOnDevice(t *testing.T) { trainBaselineOnDevice(t, enginetest.Emulated(t), false) }

// TestGPUTrainBaselineOnDevice is TestTrainBaselineOnDevice on GPU 0, with
// the GPU's tolerances (fitTols.on; it skips without one).
func TestGPUTrainBaselineOnDevice(t *testing.T) { trainBaselineOnDevice(t, enginetest.GPU(t), true) }

func trainBaselineOnDevice(t *testing.T, e *engine.Engine, gpu bool) {
	reg := models.NewRegistry(baseline.Kind{})
	tr := modelspec.Training{Optimizer: "adam", LR: 1e-3, BatchSize: 32, Epochs: 3, Selection: SelectBestValLoss}
	for _, c := range []struct {
		name, form string
	}{{"NCI1", baseline.FormFingerprint}, {"ENZYMES", baseline.FormDeepMultisets}} {
		t.Run(c.name, func(t *testing.T) {
			ds, err := tu.Load(mirrortest.TUZip(t, c.name), mirrortest.Splits(t, c.name))
			if err != nil {
				t.Fatal(err)
			}
			s := ds.Splits[0]
			sets := Sets{Train: spaced(s.Train, 240), Val: spaced(s.Val, 60), Test: spaced(s.Test, 60)}
			m := modelspec.Model{Kind: baseline.Name, Hidden: 32}
			cfg, err := models.ConfigFor(m, ds)
			if err != nil {
				t.Fatal(err)
			}
			if f := baseline.AgnosticForm(cfg); f != c.form {
				t.Fatalf("%s: form %s, want %s", c.name, f, c.form)
			}
			compareTrainOnDevice(t, e, reg, m, ds, nil, sets, tr, "accuracy", fitTols{train: baselineFitTol, param: baselineFitTol, eval: baselineFitTol}.on(gpu))
		})
	}
}
