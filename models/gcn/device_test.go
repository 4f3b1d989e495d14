package gcn

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/spn-project/spn/models"
	"github.com/spn-project/spn/models/cuda/engine"
	"github.com/spn-project/spn/models/internal/testkit/devicetest"
	"github.com/spn-project/spn/models/internal/testkit/enginetest"
	"github.com/spn-project/spn/models/internal/testkit/modeltest"
	"github.com/spn-project/spn/models/internal/testkit/optest"
	"github.com/spn-project/spn/models/kernels"
	"github.com/spn-project/spn/models/rt"
	"github.com/spn-project/spn/schema/modelspec"
)

// TestOpOnDevice runs the GCN propagation on the emulated device and on
// the CPU (optest.CheckDevice) over 300+ real nodes padded past a bucket:
// the output and the gradient the same bits (the entries of a row added
// in the CPU's order).
func TestOpOnDevice(t *testing.T) { opOnDevice(t, enginetest.Emulated(t)) }

// TestGPUOpOnDevice is TestOpOnDevice on GPU 0 (it skips without one).
func TestGPUOpOnDevice(t *testing.T) { opOnDevice(t, enginetest.GPU(t)) }

func opOnDevice(t *testing.T, e *engine.Engine) {
	const d = 8
	gd := &graphData{}
	devicetest.CheckAdjOp(t, e, devicetest.AdjOp{
		Name: "gcn",
		Data: gd,
		New: func(_ *rt.BatchData, N int) optest.Both {
			return newGCNAgg("gcn", rt.Env{Backend: kernels.CPU{Threads: 1}}, gd, N, d)
		},
		Missing: "gcn: the GCN weights are not on the device",
		In:      func(rng *rand.Rand, N int) [][]float32 { return [][]float32{modeltest.RandFloats(rng, N*d, 1)} },
	})
}

// TestStepOnDevice trains the same small GCN (2 layers, hidden 8, the MLP
// and the linear variant, sum pooling) on a classification batch for 20
// Adam steps on the CPU and on the emulated device from the same initial
// parameters: the first step's loss and outputs agree within 2e-5·(1 +
// |CPU value|), the later steps' within 1e-3 (Adam's first steps are
// lr·sign(g): the rounding noise of the biases that feed a batch norm
// moves them by ±lr differently on each device), a second device model,
// its launches' threads run last to first, gives the same bits step by
// step, and the loss falls.
func TestStepOnDevice(t *testing.T) {
	e, reverse := enginetest.EmulatedReversible(t)
	stepOnDevice(t, e, reverse)
}

// TestGPUStepOnDevice is TestStepOnDevice on GPU 0 (it skips without one).
func TestGPUStepOnDevice(t *testing.T) { stepOnDevice(t, enginetest.GPU(t), nil) }

func stepOnDevice(t *testing.T, e *engine.Engine, reverse func(on bool)) {
	b := devicetest.SmallBatch(t, 1)
	for _, linear := range []bool{false, true} {
		t.Run(fmt.Sprintf("linear %v", linear), func(t *testing.T) {
			cfg := modeltest.Config(modelspec.Model{Kind: Name, K: 1, Layers: 2, Hidden: 8, Pool: models.PoolSum}, models.TaskClassification, 2, 3, 0)
			cfg.Model.Linear = linear
			if err := (Kind{}).CheckDevice(cfg); err != nil {
				t.Fatal(err)
			}
			devicetest.CompareSteps(t, b, devicetest.Steps{New: devicetest.Build(e, New, cfg), N: 20, LR: 0.01, FirstTol: 2e-5, Tol: 1e-3, GPU: reverse == nil, Reverse: reverse})
		})
	}
}
