package gcn

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/models/internal/testkit/modeltest"
	"github.com/spn-project/spn/models/kernels"
	"github.com/spn-project/spn/models/rt"
)

// TestOpGradient checks the GCN propagation against a float64 reference
// forward (values, and gradients by central differences of the reference)
// with one and two threads on 300+ real nodes padded past a bucket.
func TestOpGradient(t *testing.T) {
	const d, H, maxDist = 8, 2, 3
	sizes := []int{40, 0, 7, 1, 130, 60, 80}
	_, b := modeltest.AttnBatch(t, 9, sizes, maxDist)
	n := b.N
	N := rt.RoundUp(n, rt.NodeBucket) + rt.NodeBucket
	for _, threads := range []int{1, 2} {
		be := rt.Env{Backend: kernels.CPU{Threads: threads}}
		rng := rand.New(rand.NewPCG(1, uint64(threads)))
		gd := &graphData{}
		if err := gd.Set(b); err != nil {
			t.Fatal(err)
		}
		c := modeltest.RefCase{OpCase: modeltest.OpCase{Name: "gcn aggregation", Op: newGCNAgg("gcn", be, gd, N, d),
			In: [][]float32{modeltest.RandFloats(rng, N*d, 1)}, Shapes: [][]int{{N, d}}, H: 1e-2, Tol: 2e-2, ZeroFrom: n * d},
			Ref: func(in [][]float64) []float64 { return refGCN(b, in[0], N, d) }}
		c.Name = fmt.Sprintf("%s (threads %d)", c.Name, threads)
		modeltest.CheckRef(t, c)
	}
}

func degreeOf(b *data.Batch, u int) int { return int(b.Adj.Ptr[u+1] - b.Adj.Ptr[u]) }

func refGCN(b *data.Batch, x []float64, N, d int) []float64 {
	y := make([]float64, N*d)
	for u := 0; u < b.N; u++ {
		du := float64(degreeOf(b, u) + 1)
		for j := 0; j < d; j++ {
			y[u*d+j] = x[u*d+j] / du
		}
		for _, v := range b.Adj.Row(u) {
			w := 1 / math.Sqrt(du*float64(degreeOf(b, int(v))+1))
			for j := 0; j < d; j++ {
				y[u*d+j] += w * x[int(v)*d+j]
			}
		}
	}
	return y
}
