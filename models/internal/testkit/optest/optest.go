// Package optest checks an op.Op's backward pass against central finite
// differences of its forward pass, both called directly and through
// Gorgonia (op.Apply and gorgonia.Grad), so that every op's gradient test
// is one table row.
package optest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/spn-project/spn/models/op"
)

// Case is one op under a gradient check.
type Case struct {
	Name string
	Op   op.Op
	// In are the input values (op.Sig().In shapes); they are restored
	// after every perturbation.
	In [][]float32
	// H is the central-difference step (default 1e-2), Tol the tolerance
	// (default 2e-2): |analytic − numeric| ≤ Tol·(1 + |numeric|).
	H, Tol float64
	// ZeroFrom > 0 requires the output values from that index on (padding
	// rows) to be zero.
	ZeroFrom int
}

// forward runs c.Op's forward pass on c.In.
func forward(t testing.TB, c Case) []float32 {
	t.Helper()
	y := make([]float32, op.Size(c.Op.Sig().Out))
	if err := c.Op.Forward(c.In, y); err != nil {
		t.Fatalf("%s: forward: %v", c.Name, err)
	}
	return y
}

// CheckGrad compares the gradient of L = Σ r·op(in) (r a fixed random
// probe; L = op(in) for a scalar op) from the op's Backward, called
// directly and through Gorgonia, with central differences of its Forward.
func CheckGrad(t testing.TB, c Case) {
	t.Helper()
	if c.H == 0 {
		c.H = 1e-2
	}
	if c.Tol == 0 {
		c.Tol = 2e-2
	}
	sig := c.Op.Sig()
	y := forward(t, c)
	if c.ZeroFrom > 0 {
		for i, v := range y[c.ZeroFrom:] {
			if v != 0 {
				t.Fatalf("%s: padding output [%d] = %v, want 0", c.Name, c.ZeroFrom+i, v)
			}
		}
	}
	rng := rand.New(rand.NewPCG(7, 7))
	r := make([]float32, len(y))
	for i := range r {
		r[i] = float32(rng.NormFloat64())
	}
	if len(sig.Out) == 0 {
		r[0] = 1
	}
	loss := func() float64 {
		var s float64
		for i, v := range forward(t, c) {
			s += float64(v) * float64(r[i])
		}
		return s
	}
	direct := make([][]float32, len(c.In))
	for i, s := range sig.In {
		if sig.Diff == nil || sig.Diff[i] {
			direct[i] = make([]float32, op.Size(s))
		}
	}
	if err := c.Op.Backward(c.In, y, r, direct); err != nil {
		t.Fatalf("%s: backward: %v", c.Name, err)
	}
	viaG := throughGorgonia(t, c, r)
	for i, in := range c.In {
		if direct[i] == nil {
			continue
		}
		for j := range in {
			if direct[i][j] != viaG[i][j] {
				t.Fatalf("%s: d input%d[%d]: %v directly, %v through Gorgonia", c.Name, i, j, direct[i][j], viaG[i][j])
			}
		}
		for j := range in {
			old := in[j]
			in[j] = old + float32(c.H)
			lp := loss()
			in[j] = old - float32(c.H)
			lm := loss()
			in[j] = old
			num := (lp - lm) / (2 * c.H)
			if d := math.Abs(float64(direct[i][j]) - num); !(d <= c.Tol*(1+math.Abs(num))) { // NaN fails
				t.Errorf("%s: d input%d[%d] analytic %.6g numeric %.6g", c.Name, i, j, direct[i][j], num)
				break
			}
		}
	}
}

// throughGorgonia returns the input gradients of ⟨op(in), r⟩ computed by
// gorgonia.Grad over op.Apply (nil for inputs not differentiated).
func throughGorgonia(t testing.TB, c Case, r []float32) [][]float32 {
	t.Helper()
	return Gradients(t, c.Name, c.Op, c.In, r)
}

// Gradients returns the gradients of L = ⟨o(in), r⟩ (L = o(in) for a
// scalar op) with respect to each input, computed by gorgonia.Grad over
// o's SymDiff (op.Apply) and run on a TapeMachine; nil for the inputs o
// does not differentiate. name labels failures.
func Gradients(t testing.TB, name string, o op.Op, in [][]float32, r []float32) [][]float32 {
	t.Helper()
	c := Case{Name: name, Op: o, In: in}
	sig := c.Op.Sig()
	g := G.NewGraph()
	var leaves, wrt G.Nodes
	var idx []int
	for i, v := range c.In {
		s := sig.In[i]
		var n *G.Node
		if len(s) == 0 {
			n = G.NewScalar(g, G.Float32, G.WithName(fmt.Sprintf("in%d", i)), G.WithValue(v[0]))
		} else {
			val := tensor.New(tensor.WithShape(s...), tensor.WithBacking(append([]float32(nil), v...)))
			n = G.NewTensor(g, G.Float32, len(s), G.WithShape(s...), G.WithName(fmt.Sprintf("in%d", i)), G.WithValue(val))
		}
		leaves = append(leaves, n)
		if sig.Diff == nil || sig.Diff[i] {
			wrt, idx = append(wrt, n), append(idx, i)
		}
	}
	y, err := op.Apply(nanBufs{}, c.Op, leaves...)
	if err != nil {
		t.Fatalf("%s: %v", c.Name, err)
	}
	cost := y
	if len(sig.Out) > 0 {
		rv := tensor.New(tensor.WithShape(sig.Out...), tensor.WithBacking(append([]float32(nil), r...)))
		rn := G.NewTensor(g, G.Float32, len(sig.Out), G.WithShape(sig.Out...), G.WithName("probe"), G.WithValue(rv))
		if cost, err = op.Apply(nil, op.Dot{ID: "optest.probe", Shape: sig.Out}, y, rn); err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
	}
	grads, err := G.Grad(cost, wrt...)
	if err != nil {
		t.Fatalf("%s: %v", c.Name, err)
	}
	vals := make([]G.Value, len(grads))
	for i, gn := range grads {
		G.Read(gn, &vals[i])
	}
	vm := G.NewTapeMachine(g)
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		t.Fatalf("%s: %v", c.Name, err)
	}
	out := make([][]float32, len(c.In))
	for k, v := range vals {
		d, err := op.Floats(c.Name, []G.Value{v}, 0, -1)
		if err != nil {
			t.Fatal(err)
		}
		out[idx[k]] = append([]float32(nil), d...)
	}
	return out
}

// nanBufs hands out buffers filled with NaN, as an arena hands out buffers
// with stale contents: an op that leaves a value of its output (or, with
// Sig.Sets, of its first input gradient) unset shows as a NaN gradient.
type nanBufs struct{}

// Buf implements op.Buffers.
func (nanBufs) Buf(n int) []float32 {
	b := make([]float32, n)
	nan := float32(math.NaN())
	for i := range b {
		b[i] = nan
	}
	return b
}
