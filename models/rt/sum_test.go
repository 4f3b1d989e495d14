package rt

import (
	"math"
	"math/rand/v2"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/spn-project/spn/models/internal/testkit/modeltest"
)

// TestSumIsGorgoniasAdd: sumOp has the bits of Gorgonia's Add, which it
// replaces in the layers (−0 + −0, −0 + 0, infinities and NaN included),
// and the gradient dy for both inputs.
func TestSumIsGorgoniasAdd(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const n = 37
	a, b := modeltest.RandFloats(rng, n, 1), modeltest.RandFloats(rng, n, 1)
	negZero := float32(math.Copysign(0, -1))
	a[0], b[0] = negZero, negZero
	a[1], b[1] = negZero, 0
	a[2], b[2] = float32(math.Inf(1)), float32(math.Inf(-1))
	a[3] = float32(math.NaN())
	g := G.NewGraph()
	x := G.NewVector(g, G.Float32, G.WithShape(n), G.WithName("x"), G.WithValue(tensor.New(tensor.WithBacking(append([]float32(nil), a...)))))
	y := G.NewVector(g, G.Float32, G.WithShape(n), G.WithName("y"), G.WithValue(tensor.New(tensor.WithBacking(append([]float32(nil), b...)))))
	s, err := G.Add(x, y)
	if err != nil {
		t.Fatal(err)
	}
	vm := G.NewTapeMachine(g)
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		t.Fatal(err)
	}
	want := s.Value().Data().([]float32)
	got := make([]float32, n)
	o := sumOp{id: "sum", shape: []int{n}}
	if err := o.Forward([][]float32{a, b}, got); err != nil {
		t.Fatal(err)
	}
	for i := range got {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("sum[%d] = %v (%08x), Gorgonia's Add %v (%08x)", i, got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
		}
	}
	dy := modeltest.RandFloats(rng, n, 1)
	da, db := make([]float32, n), make([]float32, n)
	if err := o.Backward(nil, got, dy, [][]float32{da, db}); err != nil {
		t.Fatal(err)
	}
	for i := range dy {
		if da[i] != dy[i] || db[i] != dy[i] {
			t.Fatalf("gradient %d: %v, %v, want dy %v for both", i, da[i], db[i], dy[i])
		}
	}
}
