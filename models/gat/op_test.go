package gat

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

// TestOpGradient checks GAT's attention against a float64 reference
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
		bd := rt.NewBatchData(b, []data.CSR{b.Adj})
		gd := &graphData{}
		if err := gd.Set(b); err != nil {
			t.Fatal(err)
		}
		c := modeltest.RefCase{OpCase: modeltest.OpCase{Name: "gat attention", Op: newGATAttn("gat", be, bd, gd, attnShape{Heads: H, N: N, D: d}),
			In:     [][]float32{modeltest.RandFloats(rng, N*d, 1), modeltest.RandFloats(rng, d, 0.7), modeltest.RandFloats(rng, d, 0.7)},
			Shapes: [][]int{{N, d}, {H, d / H}, {H, d / H}}, H: 1e-3, Tol: 3e-2, ZeroFrom: n * d},
			Ref: func(in [][]float64) []float64 { return refGAT(b, in[0], in[1], in[2], H, N, d) }}
		c.Name = fmt.Sprintf("%s (threads %d)", c.Name, threads)
		modeltest.CheckRef(t, c)
	}
}

func refGAT(b *data.Batch, z, aSrc, aDst []float64, H, N, d int) []float64 {
	dh := d / H
	y := make([]float64, N*d)
	for u := 0; u < b.N; u++ {
		nb := append([]int32{int32(u)}, b.Adj.Row(u)...)
		for h := 0; h < H; h++ {
			c := h * dh
			e := make([]float64, len(nb))
			m := math.Inf(-1)
			for i, v := range nb {
				var p float64
				for j := 0; j < dh; j++ {
					p += aDst[c+j]*z[u*d+c+j] + aSrc[c+j]*z[int(v)*d+c+j]
				}
				if p < 0 {
					p *= GATSlope
				}
				e[i] = p
				m = math.Max(m, p)
			}
			var s float64
			for i := range e {
				e[i] = math.Exp(e[i] - m)
				s += e[i]
			}
			for i, v := range nb {
				for j := 0; j < dh; j++ {
					y[u*d+c+j] += e[i] / s * z[int(v)*d+c+j]
				}
			}
		}
	}
	return y
}
