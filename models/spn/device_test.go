package spn

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/models"
	"github.com/spn-project/spn/models/cuda/engine"
	"github.com/spn-project/spn/models/cuda/engine/enginetest"
	"github.com/spn-project/spn/models/internal/modeltest"
	"github.com/spn-project/spn/models/kernels"
	"github.com/spn-project/spn/models/param"
	"github.com/spn-project/spn/models/synth"
)

// deviceTol bounds the difference of the per-step losses on the CPU and
// on the device: |Δ| ≤ deviceTol·(1 + |CPU loss|). The device's products
// (cuBLAS), exp and log and its double sums of dα and dε round
// differently from the CPU's; over 20 Adam steps the losses stay within
// it (on the emulated device the largest difference is below 1e-6).
const deviceTol = 1e-5

// TestStepOnDevice trains the same small SPN (k = 2, 2 layers, hidden 8,
// without and with dropout, whose masks both draw from the model's
// generator; and GIN) for 20 steps with Adam on the CPU and on the
// emulated device from the same initial parameters: the per-step losses
// and the outputs agree within deviceTol, a second device model gives the
// same bits step by step, and after the steps only the parameters (and
// the dropout masks' tensors) are left on the device.
func TestStepOnDevice(t *testing.T) { stepOnDevice(t, enginetest.Emulated(t)) }

// TestGPUStepOnDevice is TestStepOnDevice on GPU 0 (it skips without one).
func TestGPUStepOnDevice(t *testing.T) { stepOnDevice(t, enginetest.GPU(t)) }

// smallBatch is the training graphs of 12 small layered graphs, hop sets
// up to 2: the batch the device steps train on.
func smallBatch(t *testing.T) *data.Batch {
	t.Helper()
	ds, hops, err := synth.Layered(9, 12, 3, [2]int{3, 6}, [2]int{1, 3}, 2)
	if err != nil {
		t.Fatal(err)
	}
	b, err := data.NewBatch(ds, hops, ds.Splits[0].Train, 2)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func stepOnDevice(t *testing.T, e *engine.Engine) {
	b := smallBatch(t)
	for _, c := range []struct {
		kind    string
		dropout float64
	}{{"spn", 0}, {"gin", 0}, {"spn", 0.5}} {
		kind := c.kind
		t.Run(fmt.Sprintf("%s dropout %v", kind, c.dropout), func(t *testing.T) {
			k := 2
			if kind == "gin" {
				k = 1
			}
			cfg := modeltest.Config(kind, k, 2, 8, c.dropout, models.PoolSum, models.TaskClassification, 2, 3, 0)
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
			blocks0, _ := e.Live()
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
				if d > deviceTol {
					t.Fatalf("step %d: loss %v on the device, %v on the CPU", step, dl, cl)
				}
				if len(dout) != len(cout) {
					t.Fatalf("step %d: %d outputs on the device, %d on the CPU", step, len(dout), len(cout))
				}
				for i := range cout {
					if math.Abs(float64(dout[i]-cout[i])) > deviceTol*(1+math.Abs(float64(cout[i]))) {
						t.Fatalf("step %d: output %d = %v on the device, %v on the CPU", step, i, dout[i], cout[i])
					}
				}
				// The same step on the device again gives the same bits.
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
			// Only the two device models' parameters (and dropout masks, one
			// per readout) stay on the device.
			keep := len(dev.Params())
			if c.dropout > 0 {
				keep += cfg.Model.Layers + 1
			}
			if blocks, _ := e.Live(); blocks-blocks0 != 2*keep {
				t.Errorf("%d device blocks after the steps, want the %d parameters and masks of two models", blocks-blocks0, 2*keep)
			}
			t.Logf("%s: loss %.4f → %.4f on the device over 20 steps, largest difference from the CPU %.3g (relative to 1 + |loss|)", kind, first, last, worst)
			if !(last < first) {
				t.Errorf("the device's loss did not fall: %v → %v", first, last)
			}
			if _, err := dev.Predict(b); err == nil {
				t.Error("Predict on the device path: no error")
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
func TestDeviceAdam(t *testing.T) { deviceAdam(t, enginetest.Emulated(t)) }

// TestGPUDeviceAdam is TestDeviceAdam on GPU 0 (it skips without one).
func TestGPUDeviceAdam(t *testing.T) { deviceAdam(t, enginetest.GPU(t)) }

func deviceAdam(t *testing.T, e *engine.Engine) {
	b := smallBatch(t)
	cfg := modeltest.Config("spn", 2, 2, 8, 0, models.PoolSum, models.TaskClassification, 2, 3, 0)
	be := kernels.CPU{Threads: 1}
	cpu, err := New(cfg, 7, be)
	if err != nil {
		t.Fatal(err)
	}
	dev, err := New(cfg, 7, be)
	if err != nil {
		t.Fatal(err)
	}
	if err := dev.UseDevice(e); err != nil {
		t.Fatal(err)
	}
	dopt, err := dev.NewDeviceAdam(dev.Params(), 0.01, 1e-4)
	if err != nil {
		t.Fatal(err)
	}
	copt := param.NewAdam(cpu.Params(), 0.01, 1e-4)
	for step := 0; step < 20; step++ {
		cl, _, err := cpu.Step(b)
		if err != nil {
			t.Fatal(err)
		}
		dl, _, err := dev.Step(b)
		if err != nil {
			t.Fatalf("step %d on the device: %v", step, err)
		}
		if math.Abs(dl-cl) > deviceTol*(1+math.Abs(cl)) {
			t.Fatalf("step %d: loss %v on the device, %v on the CPU", step, dl, cl)
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
	for i := range cp {
		if zeroGradParam.MatchString(cp[i].Name) {
			continue // gradient 0 up to rounding noise, which Adam scales up: no effect on the outputs
		}
		for j := range cp[i].W {
			if math.Abs(float64(dp[i].W[j]-cp[i].W[j])) > 1e-4*(1+math.Abs(float64(cp[i].W[j]))) {
				t.Fatalf("%s[%d] = %v on the device, %v on the CPU", cp[i].Name, j, dp[i].W[j], cp[i].W[j])
			}
		}
	}
}
