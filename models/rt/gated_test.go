package rt

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/spn-project/spn/models/internal/testkit/modeltest"
	"github.com/spn-project/spn/models/kernels"
)

// TestGatedSumGradient checks the gated sum against finite differences,
// serially and with two threads, over five graphs (one empty) of 300 real
// rows in tensors of 320 rows and graph tensors of 8 rows.
func TestGatedSumGradient(t *testing.T) {
	for _, threads := range []int{1, 2} {
		be := Env{Backend: kernels.CPU{Threads: threads}}
		rng := rand.New(rand.NewPCG(5, 6))
		N, c := 320, 3
		bd := &BatchData{N: 300, G: 5, Ptr: []int32{0, 10, 10, 57, 200, 300}}
		modeltest.CheckOpGrad(t, modeltest.OpCase{
			Name:   fmt.Sprintf("gated sum (threads %d)", threads),
			Op:     gatedSum{id: "gs", be: be, bd: bd, N: N, G: 8, c: c},
			In:     [][]float32{modeltest.RandFloats(rng, N*c, 2), modeltest.RandFloats(rng, N*c, 1)},
			Shapes: [][]int{{N, c}, {N, c}}, H: 1e-2, Tol: 2e-2, ZeroFrom: 5 * c,
		})
	}
}

// TestGatedSumFloat64 checks the gated sum's Gorgonia gradients against
// central differences of a float64 forward written from the formula.
func TestGatedSumFloat64(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 9))
	N, c := 24, 2
	bd := &BatchData{N: 20, G: 3, Ptr: []int32{0, 7, 7, 20}}
	ptr := bd.Ptr
	check64(t, modeltest.OpCase{
		Name:   "gated sum",
		Op:     gatedSum{id: "gs", be: Env{Backend: kernels.CPU{}}, bd: bd, N: N, G: 4, c: c},
		In:     [][]float32{modeltest.RandFloats(rng, N*c, 2), modeltest.RandFloats(rng, N*c, 1)},
		Shapes: [][]int{{N, c}, {N, c}},
	}, func(in [][]float64) []float64 {
		y := make([]float64, 4*c)
		for g := 0; g < 3; g++ {
			for r := ptr[g]; r < ptr[g+1]; r++ {
				for j := 0; j < c; j++ {
					z := in[0][int(r)*c+j]
					y[g*c+j] += in[1][int(r)*c+j] / (1 + math.Exp(-z))
				}
			}
		}
		return y
	})
}

// TestGatedSumValues pins the forward pass on a hand-computed case: two
// graphs of two and one nodes, one output.
func TestGatedSumValues(t *testing.T) {
	bd := &BatchData{N: 3, G: 2, Ptr: []int32{0, 2, 3}}
	o := gatedSum{id: "gs", be: Env{Backend: kernels.CPU{}}, bd: bd, N: 4, G: 2, c: 1}
	z := []float32{0, float32(math.Log(3)), -1, 9} // σ = 1/2, 3/4, σ(−1); row 3 is padding
	tv := []float32{2, 4, 10, 100}
	y := make([]float32, 2)
	if err := o.Forward([][]float32{z, tv}, y); err != nil {
		t.Fatal(err)
	}
	want := []float64{0.5*2 + 0.75*4, 10 / (1 + math.E)}
	for i := range want {
		if math.Abs(float64(y[i])-want[i]) > 1e-5 {
			t.Errorf("graph %d: %v, want %v", i, y[i], want[i])
		}
	}
}
