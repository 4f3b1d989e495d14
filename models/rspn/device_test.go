package rspn

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
// products, the C library's exp in the gate and the double sums of dα
// and dε round differently from the CPU's (largest seen 1e-5, R-SPN
// k = 1 with sum pooling). stepTol bounds it over 20 Adam steps: Adam's
// first steps are lr·sign(g), so a gradient entry that is rounding noise
// on both devices (the biases that feed a batch norm; an entry near 0)
// moves by ±lr on each, and the models drift apart (largest seen 2.4e-4,
// k = 1 with mean pooling, 1.9e-4 with the gated readout; below 2e-6
// for k = 3 with mean pooling).
const (
	firstTol = 2e-5
	stepTol  = 1e-3
)

// deviceData returns 30 synth.Relational graphs (3 relations, node
// labels, a regression target; hop sets up to 3) without their
// categorical edge features, and without their categorical node features
// unless atom (QM9's inputs are node attributes and bond types only).
func deviceData(t *testing.T, atom bool) (*data.Dataset, *data.Hops) {
	t.Helper()
	ds, hops, err := synth.Relational(9, 30, 3)
	if err != nil {
		t.Fatal(err)
	}
	ds.EdgeFeatVocab = nil
	if !atom {
		ds.NodeCatVocab = nil
	}
	for j := range ds.Graphs {
		ds.Graphs[j].EdgeFeat = nil
		if !atom {
			ds.Graphs[j].NodeCat = nil
		}
	}
	return ds, hops
}

// binaryData is deviceData as two binary tasks with missing labels (the
// target above 0; above its mean over the graphs), graph j's first label
// missing when j%4 = 1 and its second when j%5 = 2.
func binaryData(t *testing.T) (*data.Dataset, *data.Hops) {
	t.Helper()
	ds, hops := deviceData(t, false)
	var mean float64
	for _, g := range ds.Graphs {
		mean += g.Target[0] / float64(len(ds.Graphs))
	}
	b := func(c bool) float64 {
		if c {
			return 1
		}
		return 0
	}
	ds.Task, ds.NumTargets = data.TaskBinary, 2
	for j := range ds.Graphs {
		g := &ds.Graphs[j]
		y := []float64{b(g.Target[0] > 0), b(g.Target[0] > mean)}
		if j%4 == 1 {
			y[0] = math.NaN()
		}
		if j%5 == 2 {
			y[1] = math.NaN()
		}
		g.Target = y
	}
	return ds, hops
}

// TestStepOnDevice trains the same small R-SPN (3 relations, 2 layers,
// hidden 8; k = 3 with mean pooling and with the gated readout, k = 1
// with sum and with mean pooling) on a regression batch of synth.Relational graphs for
// 20 Adam steps, and with k = 3 and mean pooling on two binary tasks with
// missing labels (binaryData) and with the AtomEncoder over the graphs'
// categorical node features, on the CPU and on the emulated device from the same
// initial parameters: the first step's loss and outputs agree within
// firstTol, the later steps' within stepTol, a second device model gives the same bits step by step, and
// the loss falls.
func TestStepOnDevice(t *testing.T) { stepOnDevice(t, enginetest.Emulated(t)) }

// TestGPUStepOnDevice is TestStepOnDevice on GPU 0 (it skips without one).
func TestGPUStepOnDevice(t *testing.T) { stepOnDevice(t, enginetest.GPU(t)) }

func stepOnDevice(t *testing.T, e *engine.Engine) {
	regDS, regHops := deviceData(t, false)
	atomDS, atomHops := deviceData(t, true)
	binDS, binHops := binaryData(t)
	for _, c := range []struct {
		k            int
		pool         string
		gated        bool
		binary, atom bool
	}{{3, models.PoolMean, false, false, false}, {3, models.PoolSum, true, false, false}, {1, models.PoolSum, false, false, false}, {1, models.PoolMean, false, false, false},
		{3, models.PoolMean, false, true, false}, {3, models.PoolMean, false, false, true}} {
		t.Run(fmt.Sprintf("k=%d pool %s gated %v binary %v atom %v", c.k, c.pool, c.gated, c.binary, c.atom), func(t *testing.T) {
			ds, hops := regDS, regHops
			switch {
			case c.binary:
				ds, hops = binDS, binHops
			case c.atom:
				ds, hops = atomDS, atomHops
			}
			b, err := data.NewBatch(ds, hops, ds.Splits[0].Train, c.k)
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := models.ConfigFor(modelspec.Model{Kind: Name, K: c.k, Layers: 2, Hidden: 8, Pool: c.pool, GatedReadout: c.gated}, ds)
			if err != nil {
				t.Fatal(err)
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
				d := math.Abs(dl-cl) / (1 + math.Abs(cl))
				worst = math.Max(worst, d)
				if step == 0 {
					first = dl
				}
				last = dl
				tol := stepTol
				if step == 0 {
					tol = firstTol
				}
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
