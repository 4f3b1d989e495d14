package gat

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

// TestOpOnDevice runs GAT's attention aggregation (2 heads) on the
// emulated device and on the CPU (optest.CheckDevice) over 300+ real
// nodes padded past a bucket, with graphs of 0 and 1 nodes: the output
// and the gradients of z and of the attention vectors within 1e-5
// relative and 1e-6 absolute (the C library's exp against Go's in the
// softmax; everything else in the CPU's order).
func TestOpOnDevice(t *testing.T) { opOnDevice(t, enginetest.Emulated(t)) }

// TestGPUOpOnDevice is TestOpOnDevice on GPU 0 (it skips without one).
func TestGPUOpOnDevice(t *testing.T) { opOnDevice(t, enginetest.GPU(t)) }

func opOnDevice(t *testing.T, e *engine.Engine) {
	const d, H = 8, 2
	gd := &graphData{}
	devicetest.CheckAdjOp(t, e, devicetest.AdjOp{
		Name: "gat",
		Data: gd,
		New: func(bd *rt.BatchData, N int) optest.Both {
			return newGATAttn("gat", rt.Env{Backend: kernels.CPU{Threads: 1}}, bd, gd, attnShape{Heads: H, N: N, D: d})
		},
		Missing: "gat: the neighbourhoods are not on the device",
		In: func(rng *rand.Rand, N int) [][]float32 {
			return [][]float32{modeltest.RandFloats(rng, N*d, 1), modeltest.RandFloats(rng, d, 0.7), modeltest.RandFloats(rng, d, 0.7)}
		},
		Abs: 1e-6, Rel: 1e-5,
	})
}

// TestStepOnDevice trains the same small GAT (2 layers, hidden 8, 2
// heads, the MLP and the linear variant, sum pooling) on a classification
// batch for 20 Adam steps at lr 3e-3 on the CPU and on the emulated
// device from the same initial parameters: the first step's loss and
// outputs agree within 2e-5·(1 + |CPU value|), the later steps' within
// 1e-3 (largest seen 4e-5 with the MLP, 5.6e-7 linear: Adam's first steps
// are lr·sign(g), so rounding noise, as in the biases that feed a batch
// norm, moves parameters by ±lr differently on each device; at lr 1e-2
// the MLP variant's logits drift 5e-3 apart by step 13), a second device
// model, its launches' threads run last to first, gives the same bits
// step by step, and the loss falls.
func TestStepOnDevice(t *testing.T) {
	e, reverse := enginetest.EmulatedReversible(t)
	stepOnDevice(t, e, reverse)
}

// TestGPUStepOnDevice is TestStepOnDevice on GPU 0 (it skips without one).
func TestGPUStepOnDevice(t *testing.T) { stepOnDevice(t, enginetest.GPU(t), nil) }

func stepOnDevice(t *testing.T, e *engine.Engine, reverse func(on bool)) {
	const lr = 3e-3
	b := devicetest.SmallBatch(t, 1)
	for _, linear := range []bool{false, true} {
		t.Run(fmt.Sprintf("linear %v", linear), func(t *testing.T) {
			cfg := modeltest.Config(modelspec.Model{Kind: Name, K: 1, Layers: 2, Hidden: 8, Pool: models.PoolSum}, models.TaskClassification, 2, 3, 0)
			cfg.Model.Linear, cfg.Model.Heads = linear, 2
			if err := (Kind{}).CheckDevice(cfg); err != nil {
				t.Fatal(err)
			}
			devicetest.CompareSteps(t, b, devicetest.Steps{New: devicetest.Build(e, New, cfg), N: 20, LR: lr, FirstTol: 2e-5, Tol: 1e-3, GPU: reverse == nil, Reverse: reverse})
		})
	}
}
