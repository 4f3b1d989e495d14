package spn

import (
	"fmt"
	"math"
	"testing"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/models/cuda/engine"
	"github.com/spn-project/spn/models/internal/testkit/enginetest"
	"github.com/spn-project/spn/models/kernels"
	"github.com/spn-project/spn/models/param"
)

// symSteps is the number of training steps of the transpose tests.
const symSteps = 6

// TestHopTransposeShortcut trains SPN on PROTEINS (k = 5, the benchmark's
// model, dropout included) for a few Adam steps twice from one seed: with
// the batches as built, whose hop sets are marked symmetric and serve as
// their own transposes (nbop.Data.SetHop1), and with the marks cleared,
// which makes every transpose computed (kernels.Transpose). Losses,
// outputs, gradients and parameters are the same bits step by step.
func TestHopTransposeShortcut(t *testing.T) { hopTransposeShortcut(t, nil) }

// TestHopTransposeShortcutOnDevice is TestHopTransposeShortcut on the
// emulated device (the transposes packed for the device's backward pass,
// DeviceAdam).
func TestHopTransposeShortcutOnDevice(t *testing.T) {
	hopTransposeShortcut(t, enginetest.Emulated(t))
}

// TestGPUHopTransposeShortcut is TestHopTransposeShortcutOnDevice on GPU 0
// (it skips without one).
func TestGPUHopTransposeShortcut(t *testing.T) { hopTransposeShortcut(t, enginetest.GPU(t)) }

func hopTransposeShortcut(t *testing.T, e *engine.Engine) {
	batches, cfg := proteinsBatches(t, 32)
	batches = batches[:symSteps]
	forced := make([]*data.Batch, len(batches))
	for i, b := range batches {
		for l, s := range b.HopSymmetric {
			if !s {
				t.Fatalf("batch %d: N_%d not marked symmetric", i, l+1)
			}
		}
		c := *b
		c.HopSymmetric = nil
		forced[i] = &c
	}
	type run struct {
		m    *Model
		step func() error
		sync func() error
	}
	newRun := func() run {
		m, err := New(cfg, 1, kernels.CPU{Threads: 2})
		if err != nil {
			t.Fatal(err)
		}
		if e == nil {
			opt := param.NewAdam(m.Params(), 1e-3, 0)
			return run{m, func() error { opt.Step(); return nil }, func() error { return nil }}
		}
		if err := m.UseDevice(e); err != nil {
			t.Fatal(err)
		}
		opt, err := m.NewDeviceAdam(m.Params(), 1e-3, 0)
		if err != nil {
			t.Fatal(err)
		}
		return run{m, opt.Step, opt.Sync}
	}
	short, full := newRun(), newRun()
	for i := range batches {
		ls, outS, err := short.m.Step(batches[i])
		if err != nil {
			t.Fatal(err)
		}
		if !sharesArrays(short.m.gd.Hop1T, short.m.gd.Hop1) {
			t.Fatalf("step %d: the marked first hop set is not its own transpose", i)
		}
		lf, outF, err := full.m.Step(forced[i])
		if err != nil {
			t.Fatal(err)
		}
		if sharesArrays(full.m.gd.Hop1T, full.m.gd.Hop1) {
			t.Fatalf("step %d: the unmarked first hop set was not transposed", i)
		}
		if math.Float64bits(ls) != math.Float64bits(lf) {
			t.Fatalf("step %d: loss %v with the shortcut, %v with transposes", i, ls, lf)
		}
		if err := sameBits(outS, outF); err != nil {
			t.Fatalf("step %d: outputs: %v", i, err)
		}
		ps, pf := short.m.Params(), full.m.Params()
		for j := range ps {
			if err := sameBits(ps[j].G, pf[j].G); err != nil {
				t.Fatalf("step %d: gradient of %s: %v", i, ps[j].Name, err)
			}
		}
		if err := short.step(); err != nil {
			t.Fatal(err)
		}
		if err := full.step(); err != nil {
			t.Fatal(err)
		}
	}
	if err := short.sync(); err != nil {
		t.Fatal(err)
	}
	if err := full.sync(); err != nil {
		t.Fatal(err)
	}
	ps, pf := short.m.Params(), full.m.Params()
	for j := range ps {
		if err := sameBits(ps[j].W, pf[j].W); err != nil {
			t.Fatalf("parameter %s after %d steps: %v", ps[j].Name, len(batches), err)
		}
	}
}

// sharesArrays reports whether a and b hold the same backing arrays.
func sharesArrays(a, b data.CSR) bool {
	return len(a.Ptr) > 0 && len(a.Idx) > 0 && len(b.Ptr) == len(a.Ptr) && len(b.Idx) == len(a.Idx) &&
		&a.Ptr[0] == &b.Ptr[0] && &a.Idx[0] == &b.Idx[0]
}

// sameBits returns an error naming the first element where a and b differ
// in their bits.
func sameBits(a, b []float32) error {
	if len(a) != len(b) {
		return fmt.Errorf("%d values, %d", len(a), len(b))
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return fmt.Errorf("element %d: %v, %v", i, a[i], b[i])
		}
	}
	return nil
}
