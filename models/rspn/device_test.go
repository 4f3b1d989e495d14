package rspn

import (
	"fmt"
	"math"
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
// with sum and with mean pooling) on a regression batch of
// synth.Relational graphs for 20 Adam steps, and with k = 3 and mean
// pooling on two binary tasks with missing labels (binaryData) and with
// the AtomEncoder over the graphs' categorical node features, on the CPU
// and on the emulated device from the same initial parameters: the first
// step's loss and outputs agree within firstTol, the later steps' within
// stepTol, a second device model (its launches' threads last to first)
// gives the same bits step by step, and the loss falls. The binary case
// runs 11 steps: at its 13th the CPU's own outputs move by 4e-3 when one
// weight of the initial parameters moves by one ulp (a ReLU's kink is
// crossed: the run takes one of two branches), so past it the
// comparison would say which branch each side took, not how near the
// device's math is to the CPU's.
func TestStepOnDevice(t *testing.T) {
	e, reverse := enginetest.EmulatedReversible(t)
	stepOnDevice(t, e, reverse)
}

// TestGPUStepOnDevice is TestStepOnDevice on GPU 0 (it skips without one).
func TestGPUStepOnDevice(t *testing.T) { stepOnDevice(t, enginetest.GPU(t), nil) }

func stepOnDevice(t *testing.T, e *engine.Engine, reverse func(on bool)) {
	regDS, regHops := deviceData(t, false)
	atomDS, atomHops := deviceData(t, true)
	binDS, binHops := binaryData(t)
	for _, c := range []struct {
		k            int
		pool         string
		gated        bool
		binary, atom bool
		steps        int
	}{{3, models.PoolMean, false, false, false, 20}, {3, models.PoolSum, true, false, false, 20}, {1, models.PoolSum, false, false, false, 20}, {1, models.PoolMean, false, false, false, 20},
		{3, models.PoolMean, false, true, false, 11}, {3, models.PoolMean, false, false, true, 20}} {
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
			devicetest.CompareSteps(t, b, devicetest.Steps{New: devicetest.Build(e, New, cfg), N: c.steps, LR: 0.01, FirstTol: firstTol, Tol: stepTol, GPU: reverse == nil, Reverse: reverse})
		})
	}
}
