package op_test

import (
	"math"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/spn-project/spn/internal/testkit/kerntest"
	"github.com/spn-project/spn/models/cuda"
	"github.com/spn-project/spn/models/cuda/engine"
	"github.com/spn-project/spn/models/internal/testkit/enginetest"
	"github.com/spn-project/spn/models/internal/testkit/optest"
	"github.com/spn-project/spn/models/kernels"
	"github.com/spn-project/spn/models/op"
)

// Two primitives written for both devices, as the project's ops are
// meant to be: one type, its signature once, an Op (CPU) and a DeviceOp
// (kernels of models/cuda/kern) side by side.

// biasReLU is y = ReLU(x + b) over n×d, b broadcast over the rows.
type biasReLU struct{ n, d int }

func (o biasReLU) Sig() op.Sig {
	return op.Sig{ID: "test.bias_relu", In: [][]int{{o.n, o.d}, {o.d}}, Out: []int{o.n, o.d}}
}

func (o biasReLU) Forward(in [][]float32, out []float32) error {
	for i := range out {
		out[i] = max(in[0][i]+in[1][i%o.d], 0)
	}
	return nil
}

func (o biasReLU) Backward(in [][]float32, out, dOut []float32, dIn [][]float32) error {
	kernels.ReLUMask(kernels.CPU{}, dIn[0], out, dOut, o.n, o.d)
	kernels.CPU{Threads: 1}.MatMulAT([]float32{}, dIn[1], []float32{}, dIn[0], kernels.MatMulShape{N: o.n, In: 0, Out: o.d})
	return nil
}

func launch(e *engine.Engine, name string, n int, args ...any) error {
	return e.Launch(name, n, args...)
}

func (o biasReLU) DeviceForward(e *engine.Engine, in []*cuda.Buffer, out *cuda.Buffer) error {
	return launch(e, "spn_bias_relu", o.n*o.d, out, in[0], in[1], o.n, o.d, 1)
}

func (o biasReLU) DeviceBackward(e *engine.Engine, in []*cuda.Buffer, out, dOut *cuda.Buffer, dIn []*cuda.Buffer) error {
	if err := launch(e, "spn_relu_mask", o.n*o.d, dIn[0], out, dOut, o.n*o.d); err != nil {
		return err
	}
	return e.ColSums(dIn[1], dIn[0], o.n, o.d)
}

// crossEntropy is the mean softmax cross-entropy of logits (g×c) with
// classes y (yb on the device).
type crossEntropy struct {
	g, c int
	y    []int32
	yb   *cuda.Buffer
}

func (o crossEntropy) Sig() op.Sig {
	return op.Sig{ID: "test.cross_entropy", In: [][]int{{o.g, o.c}}}
}

func (o crossEntropy) Forward(in [][]float32, out []float32) error {
	out[0] = float32(kernels.CrossEntropy(nil, 1, in[0], o.y, o.g, o.c))
	return nil
}

func (o crossEntropy) Backward(in [][]float32, _, dOut []float32, dIn [][]float32) error {
	kernels.CrossEntropy(dIn[0], float64(dOut[0]), in[0], o.y, o.g, o.c)
	return nil
}

func (o crossEntropy) DeviceForward(e *engine.Engine, in []*cuda.Buffer, out *cuda.Buffer) error {
	part, err := cuda.Alloc[float64](e.Context(), o.g)
	if err != nil {
		return err
	}
	defer part.Free()
	if err := launch(e, "spn_cross_entropy", o.g, part, nil, in[0], o.yb, nil, o.g, o.c); err != nil {
		return err
	}
	return launch(e, "spn_mean_loss", 1, out, part, o.g)
}

func (o crossEntropy) DeviceBackward(e *engine.Engine, in []*cuda.Buffer, _, dOut *cuda.Buffer, dIn []*cuda.Buffer) error {
	part, err := cuda.Alloc[float64](e.Context(), o.g)
	if err != nil {
		return err
	}
	defer part.Free()
	return launch(e, "spn_cross_entropy", o.g, part, dIn[0], in[0], o.yb, dOut, o.g, o.c)
}

// run builds logits = biasReLU(x, b) + x (x has two consumers), the loss
// and the gradients of x and b, runs it on a TapeMachine and returns the
// logits, the loss and the gradients on the host. With e it runs on e's
// device through ApplyDevice, else on the CPU through Apply.
func run(t *testing.T, e *engine.Engine, x, b []float32, ce crossEntropy) (logits []float32, loss float32, dx, db []float32) {
	t.Helper()
	n, d := ce.g, ce.c
	gr := G.NewGraph()
	val := func(v []float32, sh ...int) tensor.Tensor {
		if e == nil {
			return tensor.New(tensor.WithShape(sh...), tensor.WithBacking(append([]float32(nil), v...)))
		}
		dv, err := e.FromHost(v, sh...)
		if err != nil {
			t.Fatal(err)
		}
		return dv
	}
	apply := func(o interface {
		op.Op
		op.DeviceOp
	}, in ...*G.Node) *G.Node {
		var y *G.Node
		var err error
		if e == nil {
			y, err = op.Apply(nil, o, in...)
		} else {
			y, err = op.ApplyDevice(e, o, in...)
		}
		if err != nil {
			t.Fatal(err)
		}
		return y
	}
	xn := G.NewMatrix(gr, G.Float32, G.WithShape(n, d), G.WithName("x"), G.WithValue(val(x, n, d)))
	bn := G.NewVector(gr, G.Float32, G.WithShape(d), G.WithName("b"), G.WithValue(val(b, d)))
	h := apply(biasReLU{n, d}, xn, bn)
	ln := G.Must(G.Add(h, xn))
	cost := apply(ce, ln)
	grads, err := G.Grad(cost, xn, bn)
	if err != nil {
		t.Fatal(err)
	}
	var lv G.Value
	if e == nil {
		G.Read(cost, &lv)
	}
	var opts []G.VMOpt
	if e != nil {
		opts = append(opts, G.WithEngine(e))
	}
	vm := G.NewTapeMachine(gr, opts...)
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		t.Fatal(err)
	}
	host := func(n *G.Node) []float32 {
		v, ok := n.Value().(tensor.Tensor)
		if !ok {
			t.Fatalf("%v holds %T", n, n.Value())
		}
		if e == nil {
			return append([]float32(nil), v.Data().([]float32)...)
		}
		if v.Engine() != e {
			t.Fatalf("%v: a tensor of engine %T, want the device engine", n, v.Engine())
		}
		h, err := e.ToHost(v)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	if e != nil { // the loss stays on the device: a tensor of one value
		return host(ln), host(cost)[0], host(grads[0]), host(grads[1])
	}
	return host(ln), lv.Data().(float32), host(grads[0]), host(grads[1])
}

// TestApplyDevice runs the same graph of two-device primitives on the CPU
// (Apply) and on the emulated device (ApplyDevice): the logits agree to
// the bit, the loss and the gradients within the tolerance of exp and log
// (C library against Go's: relative 1e-5, absolute 1e-7), and the device
// run leaves only its inputs after the engine's Reset.
func TestApplyDevice(t *testing.T) { applyDevice(t, enginetest.Emulated(t)) }

// TestGPUApplyDevice is TestApplyDevice on GPU 0 (it skips without one).
func TestGPUApplyDevice(t *testing.T) { applyDevice(t, enginetest.GPU(t)) }

func applyDevice(t *testing.T, e *engine.Engine) {
	const n, d = 300, 4 // more than one chunk of rows in the column sums
	x, b := make([]float32, n*d), make([]float32, d)
	for i := range x {
		x[i] = float32(math.Sin(float64(i) * 0.7))
	}
	for i := range b {
		b[i] = float32(i)*0.25 - 0.4
	}
	y := make([]int32, n)
	for i := range y {
		y[i] = int32(i*7) % d
	}
	yb, err := cuda.NewBuffer(e.Context(), y)
	if err != nil {
		t.Fatal(err)
	}
	defer yb.Free()
	ce := crossEntropy{g: n, c: d, y: y, yb: yb}
	cl, closs, cdx, cdb := run(t, nil, x, b, ce)
	gl, gloss, gdx, gdb := run(t, e, x, b, ce)
	kerntest.EqualBits(t, "logits", gl, cl)
	if math.Abs(float64(gloss-closs)) > 1e-6*math.Abs(float64(closs)) {
		t.Errorf("loss %v on the device, %v on the CPU", gloss, closs)
	}
	kerntest.Near(t, "gradient of x", gdx, cdx, 1e-7, 1e-5)
	kerntest.Near(t, "gradient of b", gdb, cdb, 1e-7, 1e-5)
	if err := e.Reset(); err != nil {
		t.Fatal(err)
	}
	if blocks, _ := e.Live(); blocks != 2 {
		t.Errorf("%d device blocks after Reset, want the 2 inputs", blocks)
	}
}

// TestCheckDevice runs Dot (the probe of every device gradient check)
// and biasReLU through optest.CheckDevice on the emulated device: Dot
// within 1e-6 (the device adds double partials per chunk of rows, the
// CPU one double sum; its gradient s·1 is exact on both), biasReLU's
// output and gradients to the bit.
func TestCheckDevice(t *testing.T) {
	e := enginetest.Emulated(t)
	const n, d = 300, 4
	x, s := make([]float32, n*d), make([]float32, n*d)
	for i := range x {
		x[i] = float32(math.Sin(float64(i) * 0.3))
		s[i] = float32(math.Cos(float64(i) * 0.11))
	}
	t.Run("Dot", func(t *testing.T) {
		optest.CheckDevice(t, e, "dot", op.Dot{ID: "dot", Shape: []int{n, d}}, [][]float32{x, s}, optest.Tol{Abs: 1e-6, Rel: 1e-6})
	})
	t.Run("biasReLU", func(t *testing.T) {
		optest.CheckDevice(t, e, "bias_relu", biasReLU{n, d}, [][]float32{x, s[:d]}, optest.Tol{})
	})
}
