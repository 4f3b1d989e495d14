package spn

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/internal/testkit/synth"
	"github.com/spn-project/spn/models"
	"github.com/spn-project/spn/models/cuda"
	"github.com/spn-project/spn/models/cuda/engine"
	"github.com/spn-project/spn/models/internal/testkit/devicetest"
	"github.com/spn-project/spn/models/internal/testkit/enginetest"
	"github.com/spn-project/spn/models/internal/testkit/modeltest"
	"github.com/spn-project/spn/models/param"
	"github.com/spn-project/spn/models/rt"
	"github.com/spn-project/spn/schema/modelspec"
)

// deviceTol bounds the difference of the per-step losses on the CPU and
// on the device: |Δ| ≤ deviceTol·(1 + |CPU loss|). The device's products
// (cuBLAS), exp and log and its double sums of dα and dε round
// differently from the CPU's; over 20 Adam steps the losses stay within
// it (on the emulated device the largest difference is below 1e-6).
//
// On a GPU the tolerances are gpuTols': cuBLAS blocks its products and
// fuses their multiply-adds, so every product rounds differently from the
// CPU's, and Adam carries that into the parameters step by step.
const deviceTol = 1e-5

// deviceTols are the tolerances of the device tests on one device,
// relative to 1 + |CPU value|: of the per-step losses and outputs (step;
// devicetest.CompareSteps takes at least devicetest.GPUFirstTol and
// GPUTol on a GPU), of the parameters after 20 Adam steps (param) and of
// the predictions (predict).
type deviceTols struct{ step, param, predict float64 }

// tolsOn returns the tolerances on a GPU (gpu) or the emulated device.
func tolsOn(gpu bool) deviceTols {
	if gpu {
		return deviceTols{step: devicetest.GPUTol, param: 1e-3, predict: 1e-4}
	}
	return deviceTols{step: deviceTol, param: 1e-4, predict: deviceTol}
}

// TestStepOnDevice trains the same small SPN (k = 2, 2 layers, hidden 8,
// without and with dropout, whose masks both draw from the model's
// generator; and GIN; both also with the global readout) for 20 steps
// with Adam on the CPU and on the emulated device from the same initial
// parameters: the per-step losses and the outputs agree within deviceTol,
// a second device model, its launches' threads run last to first, gives
// the same bits step by step, and after the steps only the parameters are
// left in the engine's memory.
func TestStepOnDevice(t *testing.T) {
	e, reverse := enginetest.EmulatedReversible(t)
	stepOnDevice(t, e, reverse)
}

// TestGPUStepOnDevice is TestStepOnDevice on GPU 0 with a GPU's
// tolerances (devicetest.GPUFirstTol, GPUTol; it skips without one).
func TestGPUStepOnDevice(t *testing.T) { stepOnDevice(t, enginetest.GPU(t), nil) }

// smallConfig is the small model of the device tests: SPN (k = 2) or
// GIN, 2 layers, hidden 8, sum pooling, classifying 2 classes of graphs
// with 3 node labels.
func smallConfig(kind string, dropout float64) models.Config {
	k := 2
	if kind == "gin" {
		k = 1
	}
	return modeltest.Config(modelspec.Model{Kind: kind, K: k, Layers: 2, Hidden: 8, Dropout: dropout, Pool: models.PoolSum}, models.TaskClassification, 2, 3, 0)
}

func stepOnDevice(t *testing.T, e *engine.Engine, reverse func(on bool)) {
	b := devicetest.SmallBatch(t, 2)
	for _, c := range []struct {
		kind    string
		dropout float64
		global  bool
	}{{"spn", 0, false}, {"gin", 0, false}, {"spn", 0.5, false}, {"spn", 0, true}, {"gin", 0, true}} {
		kind := c.kind
		t.Run(fmt.Sprintf("%s dropout %v global %v", kind, c.dropout, c.global), func(t *testing.T) {
			cfg := smallConfig(kind, c.dropout)
			cfg.Model.GlobalReadout = c.global
			blocks0, _ := e.Live()
			dev := devicetest.CompareSteps(t, b, devicetest.Steps{New: devicetest.Build(e, New, cfg), N: 20, LR: 0.01, FirstTol: deviceTol, Tol: deviceTol, GPU: reverse == nil, Reverse: reverse})
			// Only the two device models' parameters stay in the engine's
			// memory (the batch and the masks are in each model's packed
			// buffer).
			if blocks, _ := e.Live(); blocks-blocks0 != 2*len(dev.Params()) {
				t.Errorf("%d device blocks after the steps, want the %d parameters of two models", blocks-blocks0, 2*len(dev.Params()))
			}
		})
	}
}

// TestDeviceAdam trains the small SPN for 20 steps with the parameters,
// gradients and Adam's moments on the emulated device (rt.DeviceAdam)
// and, from the same initial parameters, with param.Adam on the CPU: the
// per-step losses agree within deviceTol, the host gradients stay zero,
// and after Sync the parameters agree within 1e-4·(1 + |CPU value|)
// (except the biases that feed a batch norm: their exact gradient is 0,
// both hold rounding noise that Adam scales up, zeroGradParam).
func TestDeviceAdam(t *testing.T) { deviceAdam(t, enginetest.Emulated(t), false) }

// TestGPUDeviceAdam is TestDeviceAdam on GPU 0 with a GPU's tolerances
// (tolsOn; it skips without one).
func TestGPUDeviceAdam(t *testing.T) { deviceAdam(t, enginetest.GPU(t), true) }

func deviceAdam(t *testing.T, e *engine.Engine, gpu bool) {
	tol := tolsOn(gpu)
	b := devicetest.SmallBatch(t, 2)
	cfg := smallConfig("spn", 0)
	build := devicetest.Build(e, New, cfg)
	cpu, dev := build(t, false).(*Model), build(t, true).(*Model)
	dopt, err := dev.NewDeviceAdam(dev.Params(), 0.01, 1e-4)
	if err != nil {
		t.Fatal(err)
	}
	copt := param.NewAdam(cpu.Params(), 0.01, 1e-4)
	var loss devicetest.Diff // the losses' largest difference
	for step := 0; step < 20; step++ {
		cl, _, err := cpu.Step(b)
		if err != nil {
			t.Fatal(err)
		}
		dl, _, err := dev.Step(b)
		if err != nil {
			t.Fatalf("step %d on the device: %v", step, err)
		}
		var d devicetest.Diff
		d.Add(fmt.Sprintf("step %d loss", step), dl, cl)
		loss.Max(d)
		if d.Rel > tol.step {
			t.Errorf("step %d: loss %v on the device, %v on the CPU: over the tolerance %g", step, dl, cl, tol.step)
		}
		for _, p := range dev.Params() {
			for _, g := range p.G {
				if g != 0 {
					t.Fatalf("step %d: host gradient of %s written: the gradients should stay on the device", step, p.Name)
				}
			}
		}
		copt.Step()
		if err := dopt.Step(); err != nil {
			t.Fatal(err)
		}
	}
	if err := dopt.Sync(); err != nil {
		t.Fatal(err)
	}
	cp, dp := cpu.Params(), dev.Params()
	var params devicetest.Diff
	over := 0
	for i := range cp {
		if zeroGradParam.MatchString(cp[i].Name) {
			continue // gradient 0 up to rounding noise, which Adam scales up: no effect on the outputs
		}
		d, n := devicetest.CompareValues(cp[i].Name, dp[i].W, cp[i].W, tol.param)
		params.Max(d)
		over += n
	}
	t.Logf("largest difference from the CPU (relative to 1 + |value|): of the losses %v; of the parameters %v", loss, params)
	if over > 0 {
		t.Errorf("%d parameter values over the tolerance %g; the largest difference %v", over, tol.param, params)
	}
}

// TestPredictOnDevice trains the small SPN (dropout 0.5) and GIN for 10
// steps on the emulated device (DeviceAdam), predicting after each, and
// compares the device's evaluation-mode outputs (running statistics, no
// dropout) with those of a CPU model given the device's parameters and
// running statistics (SyncHost): they agree within deviceTol. An
// evaluation-mode Forward gives Predict's bits, and so does a second
// Predict (it changes no state).
func TestPredictOnDevice(t *testing.T) { predictOnDevice(t, enginetest.Emulated(t), false) }

// TestGPUPredictOnDevice is TestPredictOnDevice on GPU 0 with a GPU's
// tolerance (tolsOn; it skips without one).
func TestGPUPredictOnDevice(t *testing.T) { predictOnDevice(t, enginetest.GPU(t), true) }

func predictOnDevice(t *testing.T, e *engine.Engine, gpu bool) {
	tol := tolsOn(gpu).predict
	b := devicetest.SmallBatch(t, 2)
	for _, kind := range []string{"spn", "gin"} {
		t.Run(kind, func(t *testing.T) {
			cfg := smallConfig(kind, 0.5)
			build := devicetest.Build(e, New, cfg)
			dev := build(t, true).(*Model)
			dopt, err := dev.NewDeviceAdam(dev.Params(), 0.01, 0)
			if err != nil {
				t.Fatal(err)
			}
			worst := 0.0
			for step := 0; step <= 10; step++ {
				if step > 0 {
					if _, _, err := dev.Step(b); err != nil {
						t.Fatal(err)
					}
					if err := dopt.Step(); err != nil {
						t.Fatal(err)
					}
				}
				dout, err := dev.Predict(b)
				if err != nil {
					t.Fatalf("after step %d: Predict on the device: %v", step, err)
				}
				// A CPU model with the device's state.
				if err := dev.SyncHost(); err != nil {
					t.Fatal(err)
				}
				cpu := build(t, false).(*Model)
				for i, p := range cpu.Params() {
					copy(p.W, dev.Params()[i].W)
				}
				db := dev.Buffers()
				for name, v := range cpu.Buffers() {
					copy(v, db[name])
				}
				cout, err := cpu.Predict(b)
				if err != nil {
					t.Fatal(err)
				}
				worst = math.Max(worst, devicetest.Outputs(t, fmt.Sprintf("after step %d", step), dout, cout, tol))
				fout, err := dev.Forward(b, false)
				if err != nil {
					t.Fatal(err)
				}
				again, err := dev.Predict(b)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(fout, dout) || !slices.Equal(again, dout) {
					t.Fatalf("after step %d: Forward(false) and a second Predict on the device differ from the first Predict", step)
				}
			}
			t.Logf("%s: largest difference of the predictions from the CPU's %.3g (relative to 1 + |value|)", kind, worst)
		})
	}
}

// TestDeviceCalls counts the driver calls of a model whose parameters
// live on the device (DeviceAdam) on the emulated device. After two
// steps and an evaluation (which move the batch norms' running
// statistics to the device and fill the engine's pool of scratch
// memory), a training step (Step) makes one synchronous host→device copy
// (the batch, its hop sets and the dropout masks, packed) and two back
// (the loss and the outputs), an evaluation batch one copy each way,
// neither allocates or frees device memory, and every step launches the
// same kernels; a pipelined step (StepAsync and Adam, then resolving the
// step before: fit's loop), once two of them have allocated the
// page-locked buffers, makes the same launches and copies but
// asynchronous ones, no synchronous copy, two waits for events (the
// staging buffer's and the earlier step's results, which have run) and
// no allocation or free of device or page-locked memory; Adam launches
// once per group of parameters and Sync copies once; a step with the
// optimiser on the host also makes one copy per parameter each way.
func TestDeviceCalls(t *testing.T) {
	e := enginetest.Emulated(t)
	b := devicetest.SmallBatch(t, 2)
	cfg := smallConfig("spn", 0.5)
	build := devicetest.Build(e, New, cfg)
	newDev := func() *Model { return build(t, true).(*Model) }
	dev := newDev()
	dopt, err := dev.NewDeviceAdam(dev.Params(), 0.01, 0)
	if err != nil {
		t.Fatal(err)
	}
	count := func(what string, f func() error) cuda.Calls {
		t.Helper()
		before := e.Context().Calls()
		if err := f(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return e.Context().Calls().Sub(before)
	}
	step := func() error {
		if _, _, err := dev.Step(b); err != nil {
			return err
		}
		return dopt.Step()
	}
	predict := func() error { _, err := dev.Predict(b); return err }
	// Two steps: the second takes one chunk for the zeroed gradients as
	// large as the first step's many.
	for _, f := range []func() error{step, step, predict} {
		if err := f(); err != nil {
			t.Fatal(err)
		}
	}
	var first cuda.Calls
	for i := 0; i < 3; i++ {
		c := count("a training step", step)
		if c.ToDevice != 1 || c.ToHost != 2 {
			t.Errorf("a training step makes %d copies to the device and %d back, want 1 and 2", c.ToDevice, c.ToHost)
		}
		if c.Allocs != 0 || c.Frees != 0 {
			t.Errorf("a training step makes %d allocations and %d frees of device memory, want none (the engine's pool)", c.Allocs, c.Frees)
		}
		if i == 0 {
			first = c
			t.Logf("a training step: %d launches, %d products", c.Launches, c.GEMMs)
		} else if c != first {
			t.Errorf("training step %d makes the calls %+v, the first %+v", i+2, c, first)
		}
		if c := count("an evaluation batch", predict); c != (cuda.Calls{ToDevice: 1, ToHost: 1, Launches: c.Launches, GEMMs: c.GEMMs}) {
			t.Errorf("an evaluation batch makes %d copies to the device and %d back, %d allocations and %d frees, want 1, 1, 0 and 0", c.ToDevice, c.ToHost, c.Allocs, c.Frees)
		}
	}
	// Pipelined steps: each enqueued with its Adam step before the step
	// before it is resolved.
	var resolve func() (float64, []float32, error)
	pipelined := func() error {
		next, err := dev.StepAsync(b)
		if err != nil {
			return err
		}
		if err := dopt.Step(); err != nil {
			return err
		}
		if resolve != nil {
			if _, _, err := resolve(); err != nil {
				return err
			}
		}
		resolve = next
		return nil
	}
	for range 2 { // the staging and the results' page-locked buffers
		if err := pipelined(); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 3; i++ {
		c := count("a pipelined step", pipelined)
		want := cuda.Calls{ToDeviceAsync: 1, ToHostAsync: 2, Waits: 2, Launches: first.Launches, GEMMs: first.GEMMs}
		if c != want {
			t.Errorf("pipelined step %d makes the calls %+v, want %+v: no synchronous copy, no allocation", i+1, c, want)
		}
	}
	if _, _, err := resolve(); err != nil {
		t.Fatal(err)
	}
	// Adam updates the parameters' one array in a launch per group of
	// parameters with the same flags (at most 4: frozen or not, decayed
	// or not), and Sync brings all parameters back in one copy.
	if c := count("an Adam step", dopt.Step); c.Launches < 1 || c.Launches > 4 || c.ToHost != 0 || c.Allocs != 0 {
		t.Errorf("an Adam step of %d parameters makes %d launches, %d copies back and %d allocations, want 1 to 4, 0 and 0", len(dev.Params()), c.Launches, c.ToHost, c.Allocs)
	}
	if c := count("Sync", dopt.Sync); c.ToHost != 1 || c.Launches != 0 {
		t.Errorf("Sync makes %d copies back and %d launches, want 1 and 0", c.ToHost, c.Launches)
	}
	// The optimiser on the host: the parameters go to the device before
	// the step and their gradients come back after it.
	host := newDev()
	hstep := func() error { _, _, err := host.Step(b); return err }
	if err := hstep(); err != nil {
		t.Fatal(err)
	}
	np := len(host.Params())
	if c := count("a training step", hstep); c.ToDevice != 1+np || c.ToHost != 2+np {
		t.Errorf("a training step with the optimiser on the host makes %d copies to the device and %d back, want %d and %d", c.ToDevice, c.ToHost, 1+np, 2+np)
	}
}

// TestAdaptorOnDevice runs the models.Model adaptor (a training-mode
// Forward, then Backward with an output gradient) of the small SPN with
// dropout and of GIN for 10 Adam steps on the CPU and on the emulated
// device from the same initial parameters: the outputs agree within
// deviceTol and every parameter gradient within 1e-4·(1 + Σ|gradient|)
// of its parameter's (the biases that feed a batch norm aside, whose
// gradient is rounding noise on both).
func TestAdaptorOnDevice(t *testing.T) {
	e := enginetest.Emulated(t)
	b := devicetest.SmallBatch(t, 2)
	for _, kind := range []string{"spn", "gin"} {
		t.Run(kind, func(t *testing.T) {
			cfg := smallConfig(kind, 0.5)
			build := devicetest.Build(e, New, cfg)
			cpu, dev := build(t, false).(*Model), build(t, true).(*Model)
			copt, dopt := param.NewAdam(cpu.Params(), 0.01, 0), param.NewAdam(dev.Params(), 0.01, 0)
			for step := 0; step < 10; step++ {
				cout, err := cpu.Forward(b, true)
				if err != nil {
					t.Fatal(err)
				}
				dout, err := dev.Forward(b, true)
				if err != nil {
					t.Fatalf("step %d: a training-mode Forward on the device: %v", step, err)
				}
				devicetest.Outputs(t, fmt.Sprintf("step %d", step), dout, cout, deviceTol)
				dy := make([]float32, len(cout))
				for i := range dy {
					dy[i] = float32(i%5) - 2
				}
				cpu.Backward(dy)
				dev.Backward(dy)
				cp, dp := cpu.Params(), dev.Params()
				for i := range cp {
					if zeroGradParam.MatchString(cp[i].Name) {
						continue
					}
					scale := 0.0
					for _, g := range cp[i].G {
						scale += math.Abs(float64(g))
					}
					for j := range cp[i].G {
						if math.Abs(float64(dp[i].G[j]-cp[i].G[j])) > 1e-4*(1+scale) {
							t.Fatalf("step %d: gradient of %s[%d] = %v on the device, %v on the CPU", step, cp[i].Name, j, dp[i].G[j], cp[i].G[j])
						}
					}
				}
				copt.Step()
				dopt.Step()
			}
			// The next Forward reports no error of the last Backward.
			if _, err := dev.Forward(b, false); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestStepAsync trains the small SPN (dropout 0.5, whose masks draw from
// the model's generator) and GIN with DeviceAdam on the emulated device
// for 18 steps over batches of 5 to 30 graphs (three padded sizes, so
// that the graphs and the page-locked buffers of the results grow),
// twice from the same initial parameters: with Step, and with StepAsync,
// each step's Adam step enqueued before the step is resolved, the steps
// resolved one behind (fit's loop) or three behind (a buffer of results
// handed to its unresolved step before it is reused). Every step's loss
// and outputs, the parameters and the running statistics after the
// steps are the same bits, also with the launches' threads run last to
// first.
func TestStepAsync(t *testing.T) {
	e, reverse := enginetest.EmulatedReversible(t)
	ds, hops, err := synth.Layered(5, 160, 3, [2]int{3, 6}, [2]int{1, 3}, 2)
	if err != nil {
		t.Fatal(err)
	}
	train := ds.Splits[0].Train
	var batches []*data.Batch
	for lo, i := 0, 0; i < 18; i++ {
		n := []int{16, 5, 30, 9, 16, 12}[i%6]
		if lo+n > len(train) {
			lo = 0
		}
		b, err := data.NewBatch(ds, hops, train[lo:lo+n], 2)
		if err != nil {
			t.Fatal(err)
		}
		batches = append(batches, b)
		lo += n
	}
	type result struct {
		loss float64
		out  []float32
	}
	for _, c := range []struct {
		kind    string
		dropout float64
		behind  int
		reverse bool
	}{{"spn", 0.5, 1, false}, {"gin", 0, 1, false}, {"spn", 0.5, 3, false}, {"spn", 0.5, 1, true}} {
		t.Run(fmt.Sprintf("%s dropout %v resolved %d behind reverse %v", c.kind, c.dropout, c.behind, c.reverse), func(t *testing.T) {
			build := devicetest.Build(e, New, smallConfig(c.kind, c.dropout))
			train := func(async bool) (*Model, []result) {
				m := build(t, true).(*Model)
				opt, err := m.NewDeviceAdam(m.Params(), 0.01, 1e-4)
				if err != nil {
					t.Fatal(err)
				}
				var res []result
				var pending []func() (float64, []float32, error)
				resolve := func() {
					loss, out, err := pending[0]()
					if err != nil {
						t.Fatal(err)
					}
					pending = pending[1:]
					res = append(res, result{loss, out})
				}
				for i, b := range batches {
					if async {
						r, err := m.StepAsync(b)
						if err != nil {
							t.Fatalf("step %d: %v", i, err)
						}
						pending = append(pending, r)
					} else {
						loss, out, err := m.Step(b)
						if err != nil {
							t.Fatalf("step %d: %v", i, err)
						}
						res = append(res, result{loss, out})
					}
					if err := opt.Step(); err != nil {
						t.Fatal(err)
					}
					if len(pending) > c.behind {
						resolve()
					}
				}
				for len(pending) > 0 {
					resolve()
				}
				if err := m.SyncHost(); err != nil {
					t.Fatal(err)
				}
				return m, res
			}
			syncM, want := train(false)
			if c.reverse {
				reverse(true)
				defer reverse(false)
			}
			asyncM, got := train(true)
			for i := range want {
				if math.Float64bits(got[i].loss) != math.Float64bits(want[i].loss) || !slices.Equal(got[i].out, want[i].out) || len(got[i].out) != batches[i].NumGraphs*2 {
					t.Fatalf("step %d: loss %v and %d outputs pipelined, %v and %d with Step (or outputs differ)", i, got[i].loss, len(got[i].out), want[i].loss, len(want[i].out))
				}
			}
			for i, p := range syncM.Params() {
				if !slices.Equal(asyncM.Params()[i].W, p.W) {
					t.Errorf("parameter %s differs after the pipelined steps", p.Name)
				}
			}
			sb, ab := syncM.Buffers(), asyncM.Buffers()
			for name, v := range sb {
				if !slices.Equal(ab[name], v) {
					t.Errorf("buffer %s differs after the pipelined steps", name)
				}
			}
		})
	}
}

// TestDeviceGraphCache trains on the emulated device on batches of more
// node buckets (rt.NodeBucket) than a CPU model caches graphs
// (rt.MaxCachedGraphs): the device model keeps a compiled graph for every
// one (rt.MaxCachedDeviceGraphs), so that a second pass over the batches
// compiles nothing, and the graphs it keeps hold no device memory: after
// each step the engine holds the same tensors (the parameters, Adam's
// moments, the batch norms' statistics) however many graphs are cached.
func TestDeviceGraphCache(t *testing.T) {
	const k = 2
	ds, hops, err := synth.Layered(5, 400, 3, [2]int{3, 6}, [2]int{2, 4}, k)
	if err != nil {
		t.Fatal(err)
	}
	// The batches of the first 1, 2, … graphs, one a node bucket, until
	// rt.MaxCachedGraphs + 8 buckets.
	var batches []*data.Batch
	buckets := map[int]bool{}
	for n := 1; len(buckets) < rt.MaxCachedGraphs+8; n++ {
		if n > len(ds.Graphs) {
			t.Fatalf("%d graphs reach %d node buckets", len(ds.Graphs), len(buckets))
		}
		idx := make([]int, n)
		for i := range idx {
			idx[i] = i
		}
		b, err := data.NewBatch(ds, hops, idx, k)
		if err != nil {
			t.Fatal(err)
		}
		if key := rt.RoundUp(b.N, rt.NodeBucket); !buckets[key] {
			buckets[key] = true
			batches = append(batches, b)
		}
	}
	e := enginetest.Emulated(t)
	m := devicetest.Build(e, New, smallConfig("spn", 0.5))(t, true).(*Model)
	opt, err := m.NewDeviceAdam(m.Params(), 0.01, 0)
	if err != nil {
		t.Fatal(err)
	}
	var live int
	for pass := 0; pass < 2; pass++ {
		misses := m.CacheMisses
		for i, b := range batches {
			if _, _, err := m.Step(b); err != nil {
				t.Fatalf("pass %d batch %d: %v", pass, i, err)
			}
			if err := opt.Step(); err != nil {
				t.Fatal(err)
			}
			blocks, _ := e.Live()
			if pass == 0 && i == 0 {
				live = blocks
			} else if blocks != live {
				cached, _ := m.CachedGraphs()
				t.Fatalf("pass %d: after the step of batch %d (%d graphs cached) the engine holds %d tensors, after the first %d", pass, i, cached, blocks, live)
			}
		}
		want := len(batches)
		if pass == 1 {
			want = 0
		}
		if got := m.CacheMisses - misses; got != want {
			t.Errorf("pass %d over %d node buckets compiled %d graphs, want %d", pass, len(batches), got, want)
		}
	}
	if n, _ := m.CachedGraphs(); n != len(batches) {
		t.Errorf("the model caches %d graphs, want %d", n, len(batches))
	}
}

// TestBadBatch gives a model on the CPU and on the emulated device a batch
// whose hop set N_2 has an entry outside the batch's nodes: Step,
// StepAsync, Predict and the adaptor's training Forward refuse it naming
// the set and the entry, and the model then trains on a good batch as a
// model that never saw the bad one, bit for bit (the batch is checked
// before the dropout masks are drawn).
func TestBadBatch(t *testing.T) {
	good := devicetest.SmallBatch(t, 2)
	bad := *good
	bad.Hop = slices.Clone(good.Hop)
	bad.Hop[1].Idx = slices.Clone(good.Hop[1].Idx)
	bad.Hop[1].Idx[3] = int32(good.N)
	want := fmt.Sprintf("hop set N_2: entry %d outside [0,%d)", good.N, good.N)
	build := devicetest.Build(enginetest.Emulated(t), New, smallConfig("spn", 0.5))
	for _, device := range []bool{false, true} {
		m, fresh := build(t, device).(*Model), build(t, device).(*Model)
		for what, f := range map[string]func() error{
			"Step":      func() error { _, _, err := m.Step(&bad); return err },
			"StepAsync": func() error { _, err := m.StepAsync(&bad); return err },
			"Predict":   func() error { _, err := m.Predict(&bad); return err },
			"Forward":   func() error { _, err := m.Forward(&bad, true); return err },
		} {
			if err := f(); err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("device %v: %s of the bad batch: %v, want %q", device, what, err, want)
			}
		}
		for i := 0; i < 2; i++ {
			l1, o1, err1 := m.Step(good)
			l2, o2, err2 := fresh.Step(good)
			if err := errors.Join(err1, err2); err != nil {
				t.Fatal(err)
			}
			if l1 != l2 || !slices.Equal(o1, o2) {
				t.Errorf("device %v, step %d after the bad batch: loss %v, a fresh model's %v", device, i, l1, l2)
			}
		}
	}
}
