package espn

import (
	"fmt"
	"testing"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/internal/testkit/synth"
	"github.com/spn-project/spn/models"
	"github.com/spn-project/spn/models/cuda/engine"
	"github.com/spn-project/spn/models/internal/testkit/devicetest"
	"github.com/spn-project/spn/models/internal/testkit/enginetest"
	"github.com/spn-project/spn/schema/modelspec"
)

// firstTol bounds the difference of the first step's loss and outputs on
// the CPU and on the device, |Δ| ≤ firstTol·(1 + |CPU value|): cuBLAS's
// products, the C library's exp and log1p in the loss and the double
// sums of dα and dε round differently from the CPU's. stepTol bounds it
// over 20 Adam steps: Adam's first steps are lr·sign(g), so a gradient
// entry that is rounding noise on both devices (the biases that feed a
// batch norm) moves by ±lr on each, and the models drift apart.
const (
	firstTol = 2e-5
	stepTol  = 1e-3
)

// TestStepOnDevice trains the same small E-SPN (2 layers, hidden 8; k = 3
// with mean pooling, without and with the global readout, k = 1 with sum
// pooling, k = 2 with dropout 0.5 and with max pooling) on the two binary
// tasks of synth.EdgeFeatures (categorical node and edge features, a
// quarter of the labels missing) for 20 Adam steps on the CPU and on the
// emulated device from the same initial parameters: the first step's loss
// and outputs agree within firstTol, the later steps' within stepTol, a
// second device model, its launches' threads run last to first, gives the
// same bits step by step, and the loss falls.
func TestStepOnDevice(t *testing.T) {
	e, reverse := enginetest.EmulatedReversible(t)
	stepOnDevice(t, e, reverse)
}

// TestGPUStepOnDevice is TestStepOnDevice on GPU 0 (it skips without one).
func TestGPUStepOnDevice(t *testing.T) { stepOnDevice(t, enginetest.GPU(t), nil) }

func stepOnDevice(t *testing.T, e *engine.Engine, reverse func(on bool)) {
	ds, hops, err := synth.EdgeFeatures(11, 40, 3)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		k       int
		pool    string
		dropout float64
		global  bool
	}{{3, models.PoolMean, 0, false}, {1, models.PoolSum, 0, false}, {2, models.PoolMean, 0.5, false}, {2, models.PoolMax, 0, false}, {3, models.PoolMean, 0, true}} {
		t.Run(fmt.Sprintf("k=%d pool %s dropout %v global %v", c.k, c.pool, c.dropout, c.global), func(t *testing.T) {
			b, err := data.NewBatch(ds, hops, ds.Splits[0].Train, c.k)
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := models.ConfigFor(modelspec.Model{Kind: Name, K: c.k, Layers: 2, Hidden: 8, Pool: c.pool, Dropout: c.dropout, GlobalReadout: c.global}, ds)
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Task != models.TaskBinary || len(cfg.NodeCatVocab) == 0 || len(cfg.EdgeFeatVocab) == 0 {
				t.Fatalf("task %s, node vocabularies %v, edge vocabularies %v: want binary tasks over both kinds of features", cfg.Task, cfg.NodeCatVocab, cfg.EdgeFeatVocab)
			}
			if err := (Kind{}).CheckDevice(cfg); err != nil {
				t.Fatal(err)
			}
			devicetest.CompareSteps(t, b, devicetest.Steps{New: devicetest.Build(e, New, cfg), N: 20, LR: 0.01, FirstTol: firstTol, Tol: stepTol, GPU: reverse == nil, Reverse: reverse})
		})
	}
}
