package baseline

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/spn-project/spn/models"
	"github.com/spn-project/spn/models/cuda/engine"
	"github.com/spn-project/spn/models/internal/testkit/devicetest"
	"github.com/spn-project/spn/models/internal/testkit/enginetest"
	"github.com/spn-project/spn/models/internal/testkit/modeltest"
	"github.com/spn-project/spn/models/kernels"
	"github.com/spn-project/spn/models/param"
)

// deviceGradTol bounds |device − CPU| of the first step's outputs and
// gradients, relative to 1 + |CPU value|: the products are cuBLAS's (on
// the emulated device a plain column-major loop) against gonum's, in
// other orders.
const deviceGradTol = 1e-5

// deviceStepTol bounds |device − CPU| of the losses and outputs of the
// 20 Adam steps, relative to 1 + |CPU value|.
const deviceStepTol = 1e-4

// TestStepOnDevice trains the baseline in both forms (the fingerprint of
// node labels; DeepMultisets over labels and attributes, its sum pooling
// a product with the pooling matrix) on the emulated device and on the
// CPU from the same initial parameters, through Forward, the
// cross-entropy on the host and Backward as models/fit does: the first
// step's outputs and every gradient (downloaded: no device optimiser)
// agree within deviceGradTol; then 20 Adam steps with a DeviceAdam agree
// with param.Adam on the CPU within deviceStepTol, a second device model
// (its launches' threads run last to first, Adam's included) gives the
// same bits step by step, and the loss falls.
func TestStepOnDevice(t *testing.T) {
	e, reverse := enginetest.EmulatedReversible(t)
	stepOnDevice(t, e, reverse)
}

// TestGPUStepOnDevice is TestStepOnDevice on GPU 0 (it skips without one).
func TestGPUStepOnDevice(t *testing.T) { stepOnDevice(t, enginetest.GPU(t), nil) }

// stepOnDevice is TestStepOnDevice on e; reverse, when not nil, runs the
// second device model's launches' threads last to first (on) or first
// to last.
func stepOnDevice(t *testing.T, e *engine.Engine, reverse func(on bool)) {
	e.PoisonScratch = true
	for _, attrs := range []int{0, 5} {
		ds := modeltest.AgnDataset(t, 4, 40, 14, 4, attrs)
		cfg := modeltest.AgnConfig(ds, 16)
		idx := make([]int, len(ds.Graphs))
		for i := range idx {
			idx[i] = i
		}
		b := modeltest.AgnBatch(t, ds, idx)
		form := AgnosticForm(cfg)
		t.Run(fmt.Sprintf("%s %d nodes", form, b.N), func(t *testing.T) {
			if err := (Kind{}).CheckDevice(cfg); err != nil {
				t.Fatal(err)
			}
			builder := devicetest.Builder(e, New, cfg)
			build := func(device bool) *Model { return builder(t, device) }
			step := func(m *Model) (float64, []float32) {
				t.Helper()
				out, err := m.Forward(b, true)
				if err != nil {
					t.Fatal(err)
				}
				loss, g, _ := modeltest.CE(out, b.Y, cfg.Out)
				m.Backward(g)
				return loss, out
			}
			near := func(what string, got, want []float32, tol float64) float64 {
				t.Helper()
				return devicetest.Outputs(t, what, got, want, tol)
			}

			// One step, the gradients downloaded.
			cpu, dev := build(false), build(true)
			_, cout := step(cpu)
			_, dout := step(dev)
			worst := near("outputs", dout, cout, deviceGradTol)
			for i, p := range cpu.Params() {
				worst = math.Max(worst, near("gradient of "+p.Name, dev.Params()[i].G, p.G, deviceGradTol))
			}
			t.Logf("first step: largest difference from the CPU %.3g", worst)

			// 20 Adam steps, the device's on the device.
			cpu = build(false)
			copt := param.NewAdam(cpu.Params(), 0.01, 1e-4)
			newDev := func() (*Model, interface{ Step() error }) {
				m := build(true)
				a, err := m.NewDeviceAdam(m.Params(), 0.01, 1e-4)
				if err != nil {
					t.Fatal(err)
				}
				return m, a
			}
			dev, dopt := newDev()
			again, aopt := newDev()
			reversed := func(f func()) { // f with the threads last to first
				if reverse != nil {
					reverse(true)
					defer reverse(false)
				}
				f()
			}
			var first, last float64
			worst = 0
			for s := 0; s < 20; s++ {
				cl, cout := step(cpu)
				dl, dout := step(dev)
				var al float64
				var aout []float32
				reversed(func() { al, aout = step(again) })
				if d := math.Abs(dl-cl) / (1 + math.Abs(cl)); d > deviceStepTol {
					t.Fatalf("step %d: loss %v on the device, %v on the CPU", s, dl, cl)
				} else {
					worst = math.Max(worst, d)
				}
				worst = math.Max(worst, near(fmt.Sprintf("step %d outputs", s), dout, cout, deviceStepTol))
				if math.Float64bits(al) != math.Float64bits(dl) || !slices.Equal(aout, dout) {
					t.Fatalf("step %d: a second device model gives loss %v, the first %v", s, al, dl)
				}
				if s == 0 {
					first = dl
				}
				last = dl
				copt.Step()
				if err := dopt.Step(); err != nil {
					t.Fatal(err)
				}
				reversed(func() {
					if err := aopt.Step(); err != nil {
						t.Fatal(err)
					}
				})
			}
			// The parameters come back to the host as the CPU's.
			if err := dev.SyncHost(); err != nil {
				t.Fatal(err)
			}
			for i, p := range cpu.Params() {
				worst = math.Max(worst, near("parameter "+p.Name, dev.Params()[i].W, p.W, deviceStepTol))
			}
			t.Logf("loss %.4f → %.4f on the device over 20 steps, largest difference from the CPU %.3g (relative to 1 + |value|)", first, last, worst)
			if !(last < first) {
				t.Errorf("the device's loss did not fall: %v → %v", first, last)
			}
			if blocks, _ := e.Live(); blocks == 0 {
				t.Error("no device memory held by the device models")
			}
		})
	}
}

// TestUseDeviceAfterCPU: a model that has built graphs on the CPU does
// not move to the device, and the device kinds include the baseline.
func TestUseDeviceAfterCPU(t *testing.T) {
	e := enginetest.Emulated(t)
	ds := modeltest.AgnDataset(t, 1, 4, 5, 3, 0)
	m, err := New(modeltest.AgnConfig(ds, 8), 1, kernels.CPU{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Forward(modeltest.AgnBatch(t, ds, []int{0, 1}), false); err != nil {
		t.Fatal(err)
	}
	if err := m.UseDevice(e); err == nil {
		t.Error("UseDevice after a CPU graph: no error")
	}
	if err := models.NewRegistry(Kind{}).CheckDevice(modeltest.AgnConfig(ds, 8), "cuda:0"); err != nil {
		t.Error(err)
	}
}
