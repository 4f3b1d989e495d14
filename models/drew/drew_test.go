package drew

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/internal/testkit/synth"
	"github.com/spn-project/spn/models"
	"github.com/spn-project/spn/models/cuda/engine"
	"github.com/spn-project/spn/models/internal/testkit/devicetest"
	"github.com/spn-project/spn/models/internal/testkit/enginetest"
	"github.com/spn-project/spn/models/internal/testkit/modeltest"
	"github.com/spn-project/spn/models/internal/testkit/optest"
	"github.com/spn-project/spn/models/kernels"
	"github.com/spn-project/spn/models/metric"
	"github.com/spn-project/spn/models/param"
	"github.com/spn-project/spn/models/rt"
	"github.com/spn-project/spn/schema/modelspec"
)

// mixCases are the weighted sum over 3 terms of 37 real rows padded to
// 48: learned α (an input) and equal weights.
func mixCases(rng *rand.Rand) []struct {
	o  mix
	in [][]float32
} {
	const n, N, d, m = 37, 48, 5, 3
	var cs []struct {
		o  mix
		in [][]float32
	}
	for _, equal := range []bool{false, true} {
		o := mix{id: "mix", be: rt.Env{Backend: kernels.CPU{}}, bd: &rt.BatchData{N: n}, m: m, equal: equal, N: N, d: d}
		var in [][]float32
		if !equal {
			in = append(in, []float32{0.2, 0.5, 0.3})
		}
		for range m {
			x := modeltest.RandFloats(rng, N*d, 1)
			clear(x[n*d:])
			in = append(in, x)
		}
		cs = append(cs, struct {
			o  mix
			in [][]float32
		}{o, in})
	}
	return cs
}

// TestMixGradient checks the weighted sum's gradients (α's and the
// terms') against central differences of its forward pass, and its
// padding rows zero.
func TestMixGradient(t *testing.T) {
	for _, c := range mixCases(rand.New(rand.NewPCG(3, 4))) {
		optest.CheckGrad(t, optest.Case{Name: fmt.Sprintf("mix equal=%v", c.o.equal), Op: c.o, In: c.in, ZeroFrom: 37 * 5})
	}
}

// TestMixOnDevice: the weighted sum's output and term gradients on the
// emulated device are the CPU's; dα (products summed in double on the
// device, per chunk in float32 on the CPU) within HopCombine's tolerance
// for its dα.
func TestMixOnDevice(t *testing.T) {
	e := enginetest.Emulated(t)
	for _, c := range mixCases(rand.New(rand.NewPCG(5, 6))) {
		optest.CheckDevice(t, e, fmt.Sprintf("mix equal=%v", c.o.equal), c.o, c.in, optest.Tol{Abs: 1e-4, Rel: 1e-5})
	}
}

// TestSourceAndHops: the hop lists and delayed sources of the official
// code (get_k_neighbourhoods, x[t − max(k − ν, 0)]).
func TestSourceAndHops(t *testing.T) {
	m := modelspec.Model{Layers: 5}
	var hops []int
	for l := range 5 {
		hops = append(hops, Hops(m, l))
	}
	if !slices.Equal(hops, []int{1, 2, 3, 4, 5}) {
		t.Errorf("hops per layer %v, want 1..5", hops)
	}
	m.K = 3
	if got := Hops(m, 4); got != 3 {
		t.Errorf("k = 3: layer 4 reads %d hops, want 3", got)
	}
	for _, c := range []struct {
		delay      modelspec.Delay
		t, k, want int
	}{{1, 4, 1, 4}, {1, 4, 3, 2}, {1, 4, 5, 0}, {2, 4, 2, 4}, {2, 4, 5, 1}, {modelspec.DelayNone, 4, 5, 4}} {
		if got := Source(c.delay, c.t, c.k); got != c.want {
			t.Errorf("ν = %v, layer %d, hop %d: reads x_%d, want x_%d", c.delay, c.t, c.k, got, c.want)
		}
	}
}

// deviceCases are the DRew variants the device and determinism tests
// run: gin, gine and gcn, ν = 1, 2 and ∞, equal and learned weights, 3
// layers (hops up to 3).
var deviceCases = []struct {
	conv, weights string
	delay         modelspec.Delay
	k             int
	dropout       float64
}{
	{modelspec.ConvGIN, modelspec.WeightsEqual, 1, 0, 0},
	{modelspec.ConvGIN, modelspec.WeightsLearned, 2, 0, 0.5},
	{modelspec.ConvGINE, modelspec.WeightsLearned, modelspec.DelayNone, 0, 0},
	{modelspec.ConvGINE, modelspec.WeightsEqual, 1, 2, 0},
	{modelspec.ConvGCN, modelspec.WeightsLearned, 1, 0, 0},
	{modelspec.ConvGCN, modelspec.WeightsEqual, modelspec.DelayNone, 2, 0.5},
}

func caseConfig(t *testing.T, ds *data.Dataset, conv, weights string, delay modelspec.Delay, k int, dropout float64) models.Config {
	t.Helper()
	cfg, err := models.ConfigFor(modelspec.Model{Kind: Name, Layers: 3, Hidden: 8, Pool: models.PoolMean, Dropout: dropout,
		Conv: conv, Weights: weights, Delay: delay, K: k}, ds)
	if err != nil {
		t.Fatal(err)
	}
	if errs := (Kind{}).Check(cfg.Model, models.ConfigInfo(cfg)); len(errs) > 0 {
		t.Fatal(errs)
	}
	return cfg
}

// TestStepOnDevice trains the same small DRew (3 layers, hidden 8) of
// every deviceCases variant on synth.EdgeFeatures' binary tasks for 20
// Adam steps on the CPU and on the emulated device from the same
// parameters: the first step's loss and outputs agree within 2e-5, the
// later ones within 1e-3 (the tolerances of E-SPN's device test), a
// second device model with its launches' threads run last to first
// gives the same bits, and the loss falls.
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
	for _, c := range deviceCases {
		t.Run(fmt.Sprintf("%s %s ν=%v k=%d", c.conv, c.weights, c.delay, c.k), func(t *testing.T) {
			b, err := data.NewBatch(ds, hops, ds.Splits[0].Train, 3)
			if err != nil {
				t.Fatal(err)
			}
			cfg := caseConfig(t, ds, c.conv, c.weights, c.delay, c.k, c.dropout)
			devicetest.CompareSteps(t, b, devicetest.Steps{New: devicetest.Build(e, New, cfg), N: 20, LR: 0.01, FirstTol: 2e-5, Tol: 1e-3, Reverse: reverse})
		})
	}
}

// TestSameBytesTwice: two DRew models of every deviceCases variant built
// from the same seed and trained the same 5 steps hold the same
// parameter bits and give the same outputs, and a model trained from
// another seed differs.
func TestSameBytesTwice(t *testing.T) {
	ds, hops, err := synth.EdgeFeatures(11, 40, 3)
	if err != nil {
		t.Fatal(err)
	}
	b, err := data.NewBatch(ds, hops, ds.Splits[0].Train, 3)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range deviceCases {
		cfg := caseConfig(t, ds, c.conv, c.weights, c.delay, c.k, c.dropout)
		run := func(seed uint64) []byte {
			m, err := New(cfg, seed, kernels.CPU{Threads: 2})
			if err != nil {
				t.Fatal(err)
			}
			adam := param.NewAdam(m.Params(), 0.01, 0)
			var buf bytes.Buffer
			for range 5 {
				if _, _, err := m.Step(b); err != nil {
					t.Fatal(err)
				}
				adam.Step()
			}
			out, err := m.Predict(b)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range m.Params() {
				fmt.Fprint(&buf, p.Name, p.W)
			}
			fmt.Fprint(&buf, out)
			return buf.Bytes()
		}
		a, again, other := run(7), run(7), run(8)
		if !bytes.Equal(a, again) {
			t.Errorf("%+v: two runs from the same seed differ", c)
		}
		if bytes.Equal(a, other) {
			t.Errorf("%+v: runs from seeds 7 and 8 are the same", c)
		}
	}
}

// TestDRewLearnsEdgeFeatures: DRew-GINE (ν = 1, 3 layers) classifies
// synth.EdgeFeatures' two binary tasks well above chance (mean test
// ROC-AUC ≥ 0.75).
func TestDRewLearnsEdgeFeatures(t *testing.T) {
	task := modeltest.NewTypedTask(t, synth.EdgeFeatures, 600, 3)
	cfg := modeltest.TypedConfig(Name, 0, models.PoolSum, task.DS)
	cfg.Model.Conv, cfg.Model.Weights, cfg.Model.Delay, cfg.Model.Layers = modelspec.ConvGINE, modelspec.WeightsLearned, 1, 3
	m, err := New(cfg, 7, kernels.CPU{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	out, b := modeltest.FitTyped(t, m, task, 20, 3e-3)
	auc, err := metric.MeanROCAUC(out, b.Target, 2)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("drew gine: mean test ROC-AUC %.3f", auc)
	if auc < 0.75 {
		t.Errorf("drew mean test ROC-AUC %.3f, want ≥ 0.75", auc)
	}
}
