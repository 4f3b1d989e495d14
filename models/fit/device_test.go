package fit

import (
	"fmt"
	"testing"

	"github.com/spn-project/spn/models"
	"github.com/spn-project/spn/models/cuda/engine"
	"github.com/spn-project/spn/models/internal/testkit/enginetest"
	"github.com/spn-project/spn/models/spn"
	"github.com/spn-project/spn/schema/modelspec"
)

// deviceFitTol bounds |device − CPU| of every epoch's losses, relative
// to 1 + |CPU value|; the accuracies must count the same graphs correct
// (on a GPU: fitTols.on). The steps agree within models/spn's
// deviceTol, and the differences grow over the epochs; for one, the biases that feed a batch norm have an exact gradient
// of 0 and hold rounding noise that Adam scales up to steps of the order
// of the learning rate, differently on each device; in training mode the
// batch norm cancels them, in evaluation mode the running mean trails
// them. With sum pooling, whose outputs are large, the validation and
// test losses of three epochs differ by up to 0.4% on the emulated
// device (mean pooling: 2e-5).
const deviceFitTol = 1e-2

// TestTrainOnDevice trains SPN (k = 2, dropout, a step schedule and
// weight decay) and GIN for three epochs on the emulated device (steps,
// Adam and evaluation) with a CPU host model for the checkpoint, and the
// same models on the CPU (compareTrainOnDevice): every epoch's losses
// agree within deviceFitTol and its accuracies count the same graphs, the selected epoch's parameters (the biases
// that feed a batch norm aside) within paramTol, the training loss
// falls, a second device run gives the same records and checkpoint
// bytes, the model is copied to the host once per newly selected epoch
// and never otherwise, and the checkpoint holds the
// selected epoch's parameters and batch-norm statistics: reloaded on the
// device it scores the record's validation loss and accuracy bit for
// bit, and on the CPU within 1e-5·(1 + |value|).
func TestTrainOnDevice(t *testing.T) { trainOnDevice(t, enginetest.Emulated(t), false) }

// TestGPUTrainOnDevice is TestTrainOnDevice on GPU 0, with the GPU's
// tolerances (fitTols.on; it skips without one).
func TestGPUTrainOnDevice(t *testing.T) { trainOnDevice(t, enginetest.GPU(t), true) }

func trainOnDevice(t *testing.T, e *engine.Engine, gpu bool) {
	ds, hops := layered(t, 60, 2)
	tr := modelspec.Training{Optimizer: "adam", LR: 0.01, WeightDecay: 1e-4, StepEvery: 2, StepGamma: 0.5,
		BatchSize: 16, Epochs: 3, Selection: SelectBestValLoss}
	reg := models.NewRegistry(spn.Kind{}, spn.Kind{GIN: true})
	for _, m := range []modelspec.Model{
		{Kind: "spn", K: 2, Layers: 2, Hidden: 8, Pool: "sum", Dropout: 0.5},
		{Kind: "spn", K: 2, Layers: 2, Hidden: 8, Pool: "sum"},
		{Kind: "spn", K: 2, Layers: 2, Hidden: 8, Pool: "mean", Dropout: 0.5},
		{Kind: "gin", K: 1, Layers: 2, Hidden: 8, Pool: "sum", Eps: 0.1, LearnEps: true},
		{Kind: "gin", K: 1, Layers: 2, Hidden: 8, Pool: "mean", Eps: 0.1, LearnEps: true},
	} {
		t.Run(fmt.Sprintf("%s pool %s dropout %v", m.Kind, m.Pool, m.Dropout), func(t *testing.T) {
			compareTrainOnDevice(t, e, reg, m, ds, hops, sets(ds), tr, "accuracy", fitTols{train: deviceFitTol, param: paramTol, eval: deviceFitTol}.on(gpu))
		})
	}
}
