// Package devicetest holds the checks of device math that the model
// kinds' tests share: training steps on the CPU and on a device
// (CompareSteps), and the op of a kind that reads the adjacency
// (CheckAdjOp). It is imported by tests only.
package devicetest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/internal/testkit/cudatest"
	"github.com/spn-project/spn/internal/testkit/synth"
	"github.com/spn-project/spn/models"
	"github.com/spn-project/spn/models/cuda"
	"github.com/spn-project/spn/models/cuda/engine"
	"github.com/spn-project/spn/models/internal/testkit/enginetest"
	"github.com/spn-project/spn/models/internal/testkit/modeltest"
	"github.com/spn-project/spn/models/internal/testkit/optest"
	"github.com/spn-project/spn/models/kernels"
	"github.com/spn-project/spn/models/param"
	"github.com/spn-project/spn/models/rt"
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
	build := Builder(e, newModel, cfg)
	return func(t *testing.T, device bool) Model { return build(t, device) }
}

// Builder is Build for any model that moves to a device (a model without
// Step, as the baseline, too), returning the model's own type.
func Builder[M interface{ UseDevice(*engine.Engine) error }](e *engine.Engine, newModel func(models.Config, uint64, kernels.Backend) (M, error), cfg models.Config) func(t *testing.T, device bool) M {
	return func(t *testing.T, device bool) M {
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

// GPUFirstTol and GPUTol are the least tolerances of CompareSteps on a
// GPU (Steps.GPU), for the first step and the later ones, relative to
// 1 + |CPU value|: stated apart from the emulated device's, whose products
// are an in-order float loop close to the CPU's. cuBLAS blocks its
// products and fuses their multiply-adds (--fmad=false covers NVRTC's
// kernels, not cuBLAS), so each product rounds differently from the
// CPU's by a few units in the last place; Adam's steps, which scale
// every gradient to the order of the learning rate, carry that into the
// parameters, and the differences grow over the steps.
const (
	GPUFirstTol = 1e-4
	GPUTol      = 1e-3
)

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
	// steps'. On a GPU (GPU true) the bounds are at least GPUFirstTol and
	// GPUTol.
	FirstTol, Tol float64
	// GPU says that the models are on a real GPU, not the emulated device.
	GPU bool
	// Reverse, when not nil, makes the device run each launch's threads
	// last to first (on) or first to last (enginetest.EmulatedReversible):
	// the second device model then trains in reverse order.
	Reverse func(on bool)
}

// tols returns the first step's and the later steps' tolerances of s.
func (s Steps) tols() (first, later float64) {
	if s.GPU {
		return max(s.FirstTol, GPUFirstTol), max(s.Tol, GPUTol)
	}
	return s.FirstTol, s.Tol
}

// Diff is the largest difference of values on the device from the
// CPU's, relative to 1 + |CPU value|, and where it is.
type Diff struct {
	Rel      float64 // |dev − cpu| / (1 + |cpu|); +Inf where either is NaN
	At       string  // where, e.g. "step 3 output 17"
	Dev, CPU float64
}

// Add keeps the difference of dev from cpu at at when it is larger than
// d's (the first of equal ones); a NaN on either side is +Inf, larger
// than any.
func (d *Diff) Add(at string, dev, cpu float64) {
	rel := math.Abs(dev-cpu) / (1 + math.Abs(cpu))
	if math.IsNaN(rel) {
		rel = math.Inf(1)
	}
	if d.At == "" || rel > d.Rel {
		*d = Diff{Rel: rel, At: at, Dev: dev, CPU: cpu}
	}
}

// Max keeps the larger of d and e.
func (d *Diff) Max(e Diff) {
	if e.At != "" && (d.At == "" || e.Rel > d.Rel) {
		*d = e
	}
}

func (d Diff) String() string {
	if d.At == "" {
		return "no values"
	}
	return fmt.Sprintf("%.3g at %s (%.8g on the device, %.8g on the CPU)", d.Rel, d.At, d.Dev, d.CPU)
}

// CompareValues returns the largest difference of dev from cpu (values
// at at, each named "at value i") and how many of them are over tol.
func CompareValues(at string, dev, cpu []float32, tol float64) (worst Diff, over int) {
	for i := range cpu {
		var one Diff
		one.Add(fmt.Sprintf("%s value %d", at, i), float64(dev[i]), float64(cpu[i]))
		if one.Rel > tol {
			over++
		}
		worst.Max(one)
	}
	return worst, over
}

// CompareSteps trains a CPU model and two device models built by s.New
// on b for s.N Adam steps and requires: each step's loss and outputs on
// the device within the first step's or the later steps' tolerance
// (Steps.FirstTol, Steps.Tol; on a GPU at least GPUFirstTol and GPUTol)
// of the CPU's, relative to 1 + |CPU value|; the second device model the
// same bits as the first, step by step (with s.Reverse, its launches'
// threads run last to first: no kernel's result depends on the order of
// its threads, as on a GPU, where they run at once); and the device's
// loss to fall from the first step to the last. A step over its
// tolerance does not stop the steps: every step's largest difference,
// and where it is, is logged before the test fails. It returns the first
// device model.
func CompareSteps(t *testing.T, b *data.Batch, s Steps) Model {
	DefaultGEMM(t)
	t.Helper()
	cpu := s.New(t, false)
	dev := s.New(t, true)
	again := s.New(t, true)
	copt := param.NewAdam(cpu.Params(), s.LR, 0)
	dopt := param.NewAdam(dev.Params(), s.LR, 0)
	aopt := param.NewAdam(again.Params(), s.LR, 0)
	firstTol, laterTol := s.tols()
	var worst Diff
	var first, last float64
	var steps []string // each step's largest difference
	failed := -1       // the first step over its tolerance
	for step := 0; step < s.N; step++ {
		cl, cout, err := cpu.Step(b)
		if err != nil {
			t.Fatal(err)
		}
		dl, dout, err := dev.Step(b)
		if err != nil {
			t.Fatalf("step %d on the device: %v", step, err)
		}
		tol := laterTol
		if step == 0 {
			tol = firstTol
			first = dl
		}
		last = dl
		if len(dout) != len(cout) {
			t.Fatalf("step %d: %d outputs on the device, %d on the CPU", step, len(dout), len(cout))
		}
		var d Diff
		d.Add(fmt.Sprintf("step %d loss", step), dl, cl)
		od, over := CompareValues(fmt.Sprintf("step %d output", step), dout, cout, tol)
		d.Max(od)
		if d.Rel > tol {
			over++ // the loss's or an output's
			if failed < 0 {
				failed = step
			}
		}
		steps = append(steps, fmt.Sprintf("step %d: %v; tolerance %g, %d value(s) over it", step, d, tol, over))
		worst.Max(d)
		if s.Reverse != nil {
			s.Reverse(true)
		}
		al, aout, err := again.Step(b)
		if s.Reverse != nil {
			s.Reverse(false)
		}
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
	if failed >= 0 {
		t.Logf("the largest difference from the CPU (relative to 1 + |value|) of each step:\n%s", strings.Join(steps, "\n"))
		t.Errorf("from step %d on the device is over its tolerance (first step %g, later %g); the largest difference %v", failed, firstTol, laterTol, worst)
	}
	t.Logf("loss %.4f → %.4f on the device over %d steps, largest difference from the CPU %v (relative to 1 + |value|)", first, last, s.N, worst)
	if !(last < first) {
		t.Errorf("the device's loss did not fall: %v → %v", first, last)
	}
	return dev
}

// Outputs fails t unless dev, values on the device (outputs, gradients,
// parameters), and cpu, the same on the CPU, have the same length and
// every |dev − cpu| ≤ tol·(1 + |cpu|) (a NaN fails); at prefixes the
// failure, which names the largest difference, where it is, and how many
// values are over tol. It returns the largest |dev − cpu| / (1 + |cpu|).
func Outputs(t testing.TB, at string, dev, cpu []float32, tol float64) float64 {
	t.Helper()
	if len(dev) != len(cpu) {
		t.Fatalf("%s: %d values on the device, %d on the CPU", at, len(dev), len(cpu))
	}
	worst, over := CompareValues(at, dev, cpu, tol)
	if over > 0 {
		t.Fatalf("%s: %d of %d values over the tolerance %g; the largest difference %v", at, over, len(cpu), tol, worst)
	}
	return worst.Rel
}

// SmallBatch returns the training graphs of 12 small layered graphs
// (synth.Layered), hop sets up to k: the batch the device step tests
// train on.
func SmallBatch(t *testing.T, k int) *data.Batch {
	t.Helper()
	ds, hops, err := synth.Layered(9, 12, 3, [2]int{3, 6}, [2]int{1, 3}, k)
	if err != nil {
		t.Fatal(err)
	}
	b, err := data.NewBatch(ds, hops, ds.Splits[0].Train, k)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// AdjOp is the device op of a kind whose layers read the adjacency only
// (rt.AdjNet: gcn, gat) and its test.
type AdjOp struct {
	// Name names the op in failures.
	Name string
	// Data is the kind's per-batch data, New the op over it and the
	// batch's data bd in tensors of N rows.
	Data rt.AdjData
	New  func(bd *rt.BatchData, N int) optest.Both
	// Missing is the error of DeviceForward while Data is not on the
	// device.
	Missing string
	// In returns the op's inputs for N rows, drawn from rng.
	In func(rng *rand.Rand, N int) [][]float32
	// Abs and Rel bound the device's outputs and gradients against the
	// CPU's (optest.CheckDevice; 0, 0 asks for the same bits).
	Abs, Rel float64
}

// CheckAdjOp runs c's op on a batch of 300+ real nodes with graphs of 0
// and 1 nodes (modeltest.AttnBatch), padded past a bucket: DeviceForward
// fails with c.Missing before c.Data is on the device; with c.Data set
// from the batch, packed and uploaded, the op's outputs and gradients on
// e's device agree with the CPU's within c.Abs and c.Rel
// (optest.CheckDevice).
func CheckAdjOp(t *testing.T, e *engine.Engine, c AdjOp) {
	t.Helper()
	_, b := modeltest.AttnBatch(t, 9, []int{40, 0, 7, 1, 130, 60, 80}, 3)
	N := rt.RoundUp(b.N, rt.NodeBucket) + rt.NodeBucket
	bd := rt.NewBatchData(b, []data.CSR{b.Adj})
	if err := c.Data.Set(b); err != nil {
		t.Fatal(err)
	}
	o := c.New(bd, N)
	if err := o.DeviceForward(e, nil, nil); err == nil || err.Error() != c.Missing {
		t.Errorf("%s without its data on the device: %v, want %q", c.Name, err, c.Missing)
	}
	var pk cuda.Pack
	release, err := c.Data.Pack(&pk)
	if err != nil {
		t.Fatal(err)
	}
	buf, err := pk.Upload(e.Context(), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer buf.Free()
	defer release()
	rng := rand.New(rand.NewPCG(2, 3))
	optest.CheckDevice(t, e, c.Name, o, c.In(rng, N), optest.Tol{Abs: c.Abs, Rel: c.Rel})
}

// DefaultGEMM skips t unless the CPU's products are the default build's
// (kernels.DefaultGEMM): the tolerances of a comparison with the device
// over many steps are stated against those, and the OpenBLAS build's other
// rounding grows past them over the steps. The per-op device checks
// (optest.CheckDevice) run in every build.
func DefaultGEMM(t *testing.T) {
	t.Helper()
	if !kernels.DefaultGEMM {
		t.Skipf("the CPU's products are %s: the device comparison's tolerances are stated against the default build's", kernels.GEMM)
	}
}

// HostModel is a DeviceModel with an optimiser on the device.
type HostModel interface {
	DeviceModel
	NewDeviceAdam(params []*param.Param, lr, weightDecay float64) (*rt.DeviceAdam, error)
}

// NoExecDevice moves m to a new emulated device with Adam there (learning
// rate 1e-3), and makes the device's launches and products do nothing
// from then on (cudatest.LibOpener.SetNoExec, undone when b ends): what
// a step then costs is the host's side of a device step, for the
// BenchmarkDeviceStepHost benchmarks. It returns the engine and the
// optimiser.
func NoExecDevice(b *testing.B, m HostModel) (*engine.Engine, *rt.DeviceAdam) {
	b.Helper()
	lib := cudatest.Emulator(b)
	r, err := cuda.Probe(lib)
	if err != nil {
		b.Fatal(err)
	}
	e := enginetest.Open(b, r)
	if err := m.UseDevice(e); err != nil {
		b.Fatal(err)
	}
	opt, err := m.NewDeviceAdam(m.Params(), 1e-3, 0)
	if err != nil {
		b.Fatal(err)
	}
	lib.SetNoExec(b, true)
	b.Cleanup(func() { lib.SetNoExec(b, false) })
	return e, opt
}

// ReportSteps reports a host-step benchmark's figures for steps steps
// that made the device calls c: µs/step (over b's elapsed time),
// launches/step (kernels and cuBLAS products) and allocs/step (device
// allocations and frees).
func ReportSteps(b *testing.B, c cuda.Calls, steps float64) {
	b.ReportMetric(b.Elapsed().Seconds()*1e6/steps, "µs/step")
	b.ReportMetric(float64(c.Launches+c.GEMMs)/steps, "launches/step")
	b.ReportMetric(float64(c.Allocs+c.Frees)/steps, "allocs/step")
}
