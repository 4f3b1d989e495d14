package spn

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/models/internal/modeltest"
	"github.com/spn-project/spn/models/kernels"
	"github.com/spn-project/spn/models/nn"
	"github.com/spn-project/spn/models/op"
	"github.com/spn-project/spn/models/rt"
)

// hopBatch returns the batch data of n real nodes over k random
// (asymmetric: checks the transpose) hop sets.
func hopBatch(rng *rand.Rand, n, k int) (*rt.BatchData, []data.CSR) {
	hop := modeltest.RandomHopSets(rng, n, k)
	hopT := make([]data.CSR, k)
	for i := range hop {
		hopT[i] = kernels.Transpose(hop[i])
	}
	return &rt.BatchData{N: n, G: 1, Hops: hop, HopsT: hopT, Ptr: []int32{0, int32(n)}}, hop
}

// TestHopAggGradient checks the hop aggregation's gradients against
// finite differences of its forward (float32, serially and with two
// threads, 300 real rows in 320: the padding rows must not matter) and
// against central differences of a float64 reference forward written
// from the equation.
func TestHopAggGradient(t *testing.T) {
	for _, threads := range []int{1, 2} {
		be := rt.Env{Backend: kernels.CPU{Threads: threads}}
		rng := rand.New(rand.NewPCG(1, 2))
		n, N, d, k := 300, 320, 5, 3
		bd, _ := hopBatch(rng, n, k)
		modeltest.CheckOpGrad(t, modeltest.OpCase{Name: fmt.Sprintf("hop aggregation (threads %d)", threads),
			Op:     op.Adapt(nil, newHopAgg("agg", be, bd, k, N, d)),
			In:     [][]float32{modeltest.RandFloats(rng, N*d, 1), {0.2, 0.5, 0.3}, {0.3}},
			Shapes: [][]int{{N, d}, {k}, {1}}, H: 1e-2, Tol: 2e-2, ZeroFrom: n * d})
	}
	be := rt.Env{Backend: kernels.CPU{Threads: 2}}
	rng := rand.New(rand.NewPCG(21, 22))
	n, N, d, k := 150, 160, 4, 3
	bd, hop := hopBatch(rng, n, k)
	modeltest.CheckRef(t, modeltest.RefCase{OpCase: modeltest.OpCase{Name: "hop aggregation float64", Op: op.Adapt(nil, newHopAgg("agg", be, bd, k, N, d)),
		In: [][]float32{modeltest.RandFloats(rng, N*d, 1), {0.2, 0.5, 0.3}, {0.4}}, Shapes: [][]int{{N, d}, {k}, {1}}},
		Ref: func(in [][]float64) []float64 {
			x, a, e := in[0], in[1], in[2][0]
			y := make([]float64, N*d)
			for u := 0; u < n; u++ {
				for j := 0; j < d; j++ {
					y[u*d+j] = (1 + e) * x[u*d+j]
				}
				for i, h := range hop {
					for _, v := range h.Row(u) {
						for j := 0; j < d; j++ {
							y[u*d+j] += a[i] * x[int(v)*d+j]
						}
					}
				}
			}
			return y
		}})
}

// TestHopAggMatchesNN checks that the op computes exactly what the
// hand-written nn.HopAggregation computes (same kernels, same order).
func TestHopAggMatchesNN(t *testing.T) {
	be := rt.Env{Backend: kernels.CPU{Threads: 2}}
	rng := rand.New(rand.NewPCG(3, 4))
	n, d, k := 300, 6, 3
	bd, _ := hopBatch(rng, n, k)
	x := modeltest.RandFloats(rng, n*d, 1)
	agg := nn.NewHopAggregation("agg", k, d, 0.25, true)
	agg.Logits.Uniform(rng, 1)
	want := agg.Forward(be, x, bd.Hops, bd.HopsT, n)
	a := make([]float32, k)
	if err := rt.NewSoftmax("alpha", k).Forward([][]float32{agg.Logits.W}, a); err != nil {
		t.Fatal(err)
	}
	got := make([]float32, n*d)
	if err := newHopAgg("agg", be, bd, k, n, d).Forward([][]float32{x, a, agg.Eps.W}, got); err != nil {
		t.Fatal(err)
	}
	for i, v := range got {
		if v != want[i] {
			t.Fatalf("hop aggregation [%d] = %v, nn.HopAggregation %v", i, v, want[i])
		}
	}
}
