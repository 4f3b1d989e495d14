package rt

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/spn-project/spn/models/internal/testkit/modeltest"
	"github.com/spn-project/spn/models/kernels"
)

// TestLayerNormGradients checks the layer norm against a float64
// reference forward (the float32 forward must match it) and its gradients
// against central differences of the reference, node-level on 300 real
// rows (three row chunks, so the chunked column sums of dγ and dβ are
// exercised) of 320 and graph-level on 5 real rows of 8, with one and two
// threads: the padding rows' output and gradient must be zero.
func TestLayerNormGradients(t *testing.T) {
	const d = 6
	for _, threads := range []int{1, 2} {
		be := Env{Backend: kernels.CPU{Threads: threads}}
		rng := rand.New(rand.NewPCG(7, uint64(threads)))
		bd := &BatchData{N: 300, G: 5}
		for _, c := range []struct {
			name  string
			graph bool
			N     int
		}{{"node-level", false, 320}, {"graph-level", true, 8}} {
			n := bd.Rows(c.graph)
			rc := modeltest.RefCase{OpCase: modeltest.OpCase{Name: fmt.Sprintf("layer norm %s (threads %d)", c.name, threads),
				Op:     NewLayerNorm("ln", be, bd, c.graph, c.N, d),
				In:     [][]float32{modeltest.RandFloats(rng, c.N*d, 1), modeltest.RandFloats(rng, d, 1), modeltest.RandFloats(rng, d, 1)},
				Shapes: [][]int{{c.N, d}, {d}, {d}}, H: 1e-2, Tol: 3e-2, ZeroFrom: n * d},
				Ref: func(in [][]float64) []float64 { return refLayerNorm(n, in[0], in[1], in[2], c.N, d) }}
			t.Run(rc.Name, func(t *testing.T) { modeltest.CheckRef(t, rc) })
		}
	}
}

// refLayerNorm is the layer norm of the first n rows of x (N×d) in
// float64, the padding rows zero.
func refLayerNorm(n int, x, gamma, beta []float64, N, d int) []float64 {
	y := make([]float64, N*d)
	for u := 0; u < n; u++ {
		var mu, s float64
		for j := 0; j < d; j++ {
			mu += x[u*d+j]
		}
		mu /= float64(d)
		for j := 0; j < d; j++ {
			s += (x[u*d+j] - mu) * (x[u*d+j] - mu)
		}
		inv := 1 / math.Sqrt(s/float64(d)+LayerNormEps)
		for j := 0; j < d; j++ {
			y[u*d+j] = (x[u*d+j]-mu)*inv*gamma[j] + beta[j]
		}
	}
	return y
}
