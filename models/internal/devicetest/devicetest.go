// Package devicetest holds the comparison of training steps on the CPU
// and on a device that the model kinds' tests share. It is imported by
// tests only.
package devicetest

import (
	"math"
	"slices"
	"testing"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/models"
	"github.com/spn-project/spn/models/cuda/engine"
	"github.com/spn-project/spn/models/kernels"
	"github.com/spn-project/spn/models/param"
)

// Model is a model that takes training steps: Step runs the forward and
// backward pass of a batch and adds the gradients into Params.
type Model interface {
	Step(b *data.Batch) (loss float64, out []float32, err error)
	Params() []*param.Param
}

// DeviceModel is a Model that can move to a device.
type DeviceModel interface {
	Model
	UseDevice(e *engine.Engine) error
}

// Build returns a Steps.New that builds each model with newModel from
// cfg and seed 7 on one CPU thread, and moves the device models to e.
func Build[M DeviceModel](e *engine.Engine, newModel func(models.Config, uint64, kernels.Backend) (M, error), cfg models.Config) func(t *testing.T, device bool) Model {
	return func(t *testing.T, device bool) Model {
		t.Helper()
		m, err := newModel(cfg, 7, kernels.CPU{Threads: 1})
		if err != nil {
			t.Fatal(err)
		}
		if device {
			if err := m.UseDevice(e); err != nil {
				t.Fatal(err)
			}
		}
		return m
	}
}

// Steps configures CompareSteps.
type Steps struct {
	// New returns a new model with the same initial parameters on each
	// call, on the device when device is true (it fails t itself).
	New func(t *testing.T, device bool) Model
	// N is the number of Adam steps and LR their learning rate (no weight
	// decay).
	N  int
	LR float64
	// FirstTol bounds the first step's loss and outputs on the device and
	// on the CPU, |Δ| ≤ FirstTol·(1 + |CPU value|), and Tol the later
	// steps'.
	FirstTol, Tol float64
}

// CompareSteps trains a CPU model and two device models built by s.New
// on b for s.N Adam steps and requires: each step's loss and outputs on
// the device within s.FirstTol (the first step) or s.Tol (the later
// ones) of the CPU's, relative to 1 + |CPU value|; the second device
// model the same bits as the first, step by step; and the device's loss
// to fall from the first step to the last. It returns the first device
// model.
func CompareSteps(t *testing.T, b *data.Batch, s Steps) Model {
	t.Helper()
	cpu := s.New(t, false)
	dev := s.New(t, true)
	again := s.New(t, true)
	copt := param.NewAdam(cpu.Params(), s.LR, 0)
	dopt := param.NewAdam(dev.Params(), s.LR, 0)
	aopt := param.NewAdam(again.Params(), s.LR, 0)
	var worst, first, last float64
	for step := 0; step < s.N; step++ {
		cl, cout, err := cpu.Step(b)
		if err != nil {
			t.Fatal(err)
		}
		dl, dout, err := dev.Step(b)
		if err != nil {
			t.Fatalf("step %d on the device: %v", step, err)
		}
		tol := s.Tol
		if step == 0 {
			tol = s.FirstTol
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
	t.Logf("loss %.4f → %.4f on the device over %d steps, largest difference from the CPU %.3g (relative to 1 + |value|)", first, last, s.N, worst)
	if !(last < first) {
		t.Errorf("the device's loss did not fall: %v → %v", first, last)
	}
	return dev
}
