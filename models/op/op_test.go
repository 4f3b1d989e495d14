package op_test

import (
	"testing"

	G "gorgonia.org/gorgonia"

	"github.com/spn-project/spn/models/internal/testkit/optest"
	"github.com/spn-project/spn/models/op"
)

// scale is y = x ⊙ w over n values, with w not differentiated when
// fixedW: the smallest op that exercises Diff and the packed gradient.
type scale struct {
	id     string
	n      int
	fixedW bool
}

func (s scale) Sig() op.Sig {
	sig := op.Sig{ID: s.id, In: [][]int{{s.n}, {s.n}}, Out: []int{s.n}}
	if s.fixedW {
		sig.Diff = []bool{true, false}
	}
	return sig
}

func (s scale) Forward(in [][]float32, out []float32) error {
	for i := range out {
		out[i] = in[0][i] * in[1][i]
	}
	return nil
}

func (s scale) Backward(in [][]float32, _, dOut []float32, dIn [][]float32) error {
	for i, g := range dOut {
		dIn[0][i] = g * in[1][i]
		if dIn[1] != nil {
			dIn[1][i] = g * in[0][i]
		}
	}
	return nil
}

// sumSq is the scalar Σ x², for a scalar output.
type sumSq struct{ n int }

func (s sumSq) Sig() op.Sig { return op.Sig{ID: "sumsq", In: [][]int{{s.n}}} }

func (s sumSq) Forward(in [][]float32, out []float32) error {
	var t float32
	for _, v := range in[0] {
		t += v * v
	}
	out[0] = t
	return nil
}

func (s sumSq) Backward(in [][]float32, _, dOut []float32, dIn [][]float32) error {
	for i, v := range in[0] {
		dIn[0][i] = 2 * v * dOut[0]
	}
	return nil
}

func TestAdaptorGradients(t *testing.T) {
	x, w := []float32{0.5, -1, 2}, []float32{1.5, 0.25, -0.75}
	for _, c := range []optest.Case{
		{Name: "scale", Op: scale{id: "s", n: 3}, In: [][]float32{x, w}},
		{Name: "scale, w fixed", Op: scale{id: "s", n: 3, fixedW: true}, In: [][]float32{x, w}},
		{Name: "scalar output", Op: sumSq{3}, In: [][]float32{x}},
	} {
		optest.CheckGrad(t, c)
	}
}

// TestIdentityKeepsNodesApart checks that ops of different IDs over the
// same inputs stay two nodes (Gorgonia merges equal hashes) and that equal
// ones merge.
func TestIdentityKeepsNodesApart(t *testing.T) {
	g := G.NewGraph()
	x := G.NewVector(g, G.Float32, G.WithShape(2), G.WithName("x"), G.WithInit(G.Ones()))
	w := G.NewVector(g, G.Float32, G.WithShape(2), G.WithName("w"), G.WithInit(G.Ones()))
	apply := func(id string) *G.Node {
		n, err := op.Apply(nil, scale{id: id, n: 2}, x, w)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	a, b, again := apply("layer1.s"), apply("layer2.s"), apply("layer1.s")
	if a == b {
		t.Fatal("ops of different identities were merged")
	}
	if a != again {
		t.Fatal("the same op applied twice gave two nodes: Gorgonia's merge rule changed")
	}
	if _, err := op.Apply(nil, scale{id: "s", n: 2}, x); err == nil {
		t.Fatal("Apply with a missing input: no error")
	}
}
