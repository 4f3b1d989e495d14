package espn

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/models"
	"github.com/spn-project/spn/models/cuda/engine"
	"github.com/spn-project/spn/models/cuda/engine/enginetest"
	"github.com/spn-project/spn/models/kernels"
	"github.com/spn-project/spn/models/param"
	"github.com/spn-project/spn/models/synth"
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
// with mean pooling, without and with the global readout, k = 1 with
// sum pooling, k = 2 with dropout 0.5 and with max pooling) on
// the two binary tasks of synth.EdgeFeatures (categorical node and edge
// features, a quarter of the labels missing) for 20 Adam steps on the
// CPU and on the emulated device from the same initial parameters: the
// first step's loss and outputs agree within firstTol, the later steps'
// within stepTol, a second device model gives the same bits step by
// step, and the loss falls.
func TestStepOnDevice(t *testing.T) { stepOnDevice(t, enginetest.Emulated(t)) }

// TestGPUStepOnDevice is TestStepOnDevice on GPU 0 (it skips without one).
func TestGPUStepOnDevice(t *testing.T) { stepOnDevice(t, enginetest.GPU(t)) }

func stepOnDevice(t *testing.T, e *engine.Engine) {
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
			be := kernels.CPU{Threads: 1}
			cpu, err := New(cfg, 7, be)
			if err != nil {
				t.Fatal(err)
			}
			newDev := func() (*Model, *param.Adam) {
				m, err := New(cfg, 7, be)
				if err != nil {
					t.Fatal(err)
				}
				if err := m.UseDevice(e); err != nil {
					t.Fatal(err)
				}
				return m, param.NewAdam(m.Params(), 0.01, 0)
			}
			dev, dopt := newDev()
			again, aopt := newDev()
			copt := param.NewAdam(cpu.Params(), 0.01, 0)
			var worst, first, last float64
			for step := 0; step < 20; step++ {
				cl, cout, err := cpu.Step(b)
				if err != nil {
					t.Fatal(err)
				}
				dl, dout, err := dev.Step(b)
				if err != nil {
					t.Fatalf("step %d on the device: %v", step, err)
				}
				tol := stepTol
				if step == 0 {
					tol = firstTol
					first = dl
				}
				last = dl
				d := math.Abs(dl-cl) / (1 + math.Abs(cl))
				worst = math.Max(worst, d)
				if d > tol {
					t.Fatalf("step %d: loss %v on the device, %v on the CPU", step, dl, cl)
				}
				if len(dout) != len(cout) {
					t.Fatalf("step %d: %d outputs on the device, %d on the CPU", step, len(dout), len(cout))
				}
				for i := range cout {
					od := math.Abs(float64(dout[i]-cout[i])) / (1 + math.Abs(float64(cout[i])))
					worst = math.Max(worst, od)
					if od > tol {
						t.Fatalf("step %d: output %d = %v on the device, %v on the CPU", step, i, dout[i], cout[i])
					}
				}
				al, aout, err := again.Step(b)
				if err != nil {
					t.Fatal(err)
				}
				if math.Float64bits(al) != math.Float64bits(dl) || !slices.Equal(aout, dout) {
					t.Fatalf("step %d: a second device model gives loss %v, the first %v", step, al, dl)
				}
				copt.Step()
				dopt.Step()
				aopt.Step()
			}
			t.Logf("loss %.4f → %.4f on the device over 20 steps, largest difference from the CPU %.3g (relative to 1 + |value|)", first, last, worst)
			if !(last < first) {
				t.Errorf("the device's loss did not fall: %v → %v", first, last)
			}
		})
	}
}
