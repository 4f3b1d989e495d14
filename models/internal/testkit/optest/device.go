package optest

import (
	"fmt"
	"math/rand/v2"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/spn-project/spn/internal/testkit/kerntest"
	"github.com/spn-project/spn/models/cuda/engine"
	"github.com/spn-project/spn/models/op"
)

// Both is a primitive with its math on both devices.
type Both interface {
	op.Op
	op.DeviceOp
}

// Tol is the tolerance of CheckDevice: a device value may differ from the
// CPU's by Abs + Rel·|CPU value| (kerntest.Near); the zero Tol asks for
// the same bits.
type Tol struct {
	Abs, Rel float64
}

// CheckDevice runs o over the inputs in on the CPU (its Forward, and
// Gradients through op.Apply) and on e's device (op.ApplyDevice on a
// TapeMachine with e's engine, new scratch tensors filled with NaN), and
// requires the outputs and the gradients of L = ⟨o(in), r⟩ (r a fixed
// random probe; L = o(in) for a scalar op) to agree within tol.
func CheckDevice(t testing.TB, e *engine.Engine, name string, o Both, in [][]float32, tol Tol) {
	t.Helper()
	abs, rel := tol.Abs, tol.Rel
	sig := o.Sig()
	r := make([]float32, op.Size(sig.Out))
	rng := rand.New(rand.NewPCG(7, 11))
	for i := range r {
		r[i] = float32(rng.NormFloat64())
	}
	cy := forward(t, Case{Name: name, Op: o, In: in})
	cg := Gradients(t, name, o, in, r)
	dy, dg := deviceGradients(t, e, name, o, in, r)
	near := func(what string, got, want []float32) {
		t.Helper()
		if abs == 0 && rel == 0 {
			kerntest.EqualBits(t, what, got, want)
			return
		}
		kerntest.Near(t, what, got, want, abs, rel)
	}
	near(name+": output", dy, cy)
	for i := range cg {
		if (cg[i] == nil) != (dg[i] == nil) {
			t.Fatalf("%s: gradient of input %d: on the CPU %v, on the device %v", name, i, cg[i] != nil, dg[i] != nil)
		}
		if cg[i] != nil {
			near(fmt.Sprintf("%s: gradient of input %d", name, i), dg[i], cg[i])
		}
	}
}

// deviceGradients is Gradients on e's device: the output of o and the
// gradients of L with respect to each differentiated input, on the host.
func deviceGradients(t testing.TB, e *engine.Engine, name string, o Both, in [][]float32, r []float32) ([]float32, [][]float32) {
	t.Helper()
	poison := e.PoisonScratch
	e.PoisonScratch = true
	defer func() { e.PoisonScratch = poison }()
	sig := o.Sig()
	g := G.NewGraph()
	var leaves, wrt G.Nodes
	var idx []int
	for i, v := range in {
		s := sig.In[i]
		var n *G.Node
		if len(s) == 0 {
			n = G.NewScalar(g, G.Float32, G.WithName(fmt.Sprintf("in%d", i)), G.WithValue(v[0]))
		} else {
			dv, err := e.FromHost(v, s...)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			n = G.NewTensor(g, G.Float32, len(s), G.WithShape(s...), G.WithName(fmt.Sprintf("in%d", i)), G.WithValue(dv))
		}
		leaves = append(leaves, n)
		if sig.Diff == nil || sig.Diff[i] {
			wrt, idx = append(wrt, n), append(idx, i)
		}
	}
	y, err := op.ApplyDevice(e, o, leaves...)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	cost := y
	if len(sig.Out) > 0 {
		rv, err := e.FromHost(r, sig.Out...)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		rn := G.NewTensor(g, G.Float32, len(sig.Out), G.WithShape(sig.Out...), G.WithName("probe"), G.WithValue(rv))
		if cost, err = op.ApplyDevice(e, op.Dot{ID: "optest.probe", Shape: sig.Out}, y, rn); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	grads, err := G.Grad(cost, wrt...)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	vm := G.NewTapeMachine(g, G.WithEngine(e))
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	host := func(v G.Value) []float32 {
		t.Helper()
		dt, ok := v.(tensor.Tensor)
		if !ok {
			if f, ok := v.Data().(float32); ok {
				return []float32{f}
			}
			t.Fatalf("%s: value %T, want a device tensor", name, v)
		}
		h, err := e.ToHost(dt)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return h
	}
	out := host(y.Value())
	gs := make([][]float32, len(in))
	for k, gn := range grads {
		gs[idx[k]] = host(gn.Value())
	}
	return out, gs
}
