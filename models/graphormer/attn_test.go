package graphormer

import (
	"github.com/spn-project/spn/models/internal/testkit/modeltest"
	"github.com/spn-project/spn/models/rt"

	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/models/kernels"
)

// TestDistanceBuckets checks Graphormer's buckets against BFS distances,
// with kmax = max_dist and kmax > max_dist: self 0, distance i < max_dist
// is i, every longer finite distance max_dist (also those beyond kmax),
// unreachable max_dist+1.
func TestDistanceBuckets(t *testing.T) {
	for _, tc := range []struct{ maxDist, kmax int }{{2, 2}, {3, 5}, {5, 5}} {
		_, b := modeltest.AttnBatch(t, 5, []int{12, 0, 9, 30, 1}, tc.kmax)
		gd := &graphData{}
		if err := gd.set(b, tc.maxDist); err != nil {
			t.Fatal(err)
		}
		far := 0
		for j := 0; j < b.NumGraphs; j++ {
			dist := modeltest.BFS(b, j)
			nj := len(dist)
			for u := range dist {
				for v, dv := range dist[u] {
					want := dv
					switch {
					case dv < 0:
						want = tc.maxDist + 1
					case dv >= tc.maxDist:
						want = tc.maxDist
						if dv > tc.kmax {
							far++
						}
					}
					if got := int(gd.bucket[gd.boff[j]+u*nj+v]); got != want {
						t.Fatalf("max_dist %d kmax %d graph %d: bucket(%d,%d) = %d, want %d (distance %d)", tc.maxDist, tc.kmax, j, u, v, got, want, dv)
					}
				}
			}
		}
		if tc.kmax == 2 && far == 0 {
			t.Errorf("no pair beyond kmax: the clamp past kmax is not exercised")
		}
	}
}

// TestAttnOpGradients checks every op of the competitor models against a
// float64 reference forward: the float32 forward must match it, and the
// op's gradients (through Gorgonia) must match central differences of the
// reference at sampled entries (padding rows included, where the gradient
// must be zero), with one and two threads, on a batch of 300+ real nodes
// (three row chunks) padded to more than a multiple of 64 rows.
func TestAttnOpGradients(t *testing.T) {
	const d, H, maxDist = 8, 2, 3
	sizes := []int{40, 0, 7, 1, 130, 60, 80}
	_, b := modeltest.AttnBatch(t, 9, sizes, maxDist)
	n := b.N
	N := rt.RoundUp(n, rt.NodeBucket) + rt.NodeBucket
	for _, threads := range []int{1, 2} {
		be := rt.Env{Backend: kernels.CPU{Threads: threads}}
		rng := rand.New(rand.NewPCG(1, uint64(threads)))
		bd := rt.NewBatchData(b, []data.CSR{b.Adj})
		gph := &graphData{}
		if err := gph.set(b, maxDist); err != nil {
			t.Fatal(err)
		}
		B := maxDist + 2
		cases := []modeltest.RefCase{
			{OpCase: modeltest.OpCase{Name: "graph attention", Op: newGraphAttn("attn", be, bd, gph, attnShape{Heads: H, Buckets: B, N: N, D: d}),
				In: [][]float32{modeltest.RandFloats(rng, N*d, 1), modeltest.RandFloats(rng, N*d, 1), modeltest.RandFloats(rng, N*d, 1),
					modeltest.RandFloats(rng, B*H, 1)},
				Shapes: [][]int{{N, d}, {N, d}, {N, d}, {B, H}}, H: 1e-2, Tol: 2e-2, ZeroFrom: n * d},
				Ref: func(in [][]float64) []float64 { return refGraphAttn(b, gph, in[0], in[1], in[2], in[3], H, B, N, d) }},
			{OpCase: modeltest.OpCase{Name: "degree embedding", Op: newDegEmb("deg", be, bd, gph, N, d),
				In:     [][]float32{modeltest.RandFloats(rng, N*d, 1), modeltest.RandFloats(rng, (MaxDegree+1)*d, 1)},
				Shapes: [][]int{{N, d}, {MaxDegree + 1, d}}, H: 1e-2, Tol: 1e-2, ZeroFrom: n * d},
				Ref: func(in [][]float64) []float64 { return refDegEmb(b, in[0], in[1], N, d) }},
			{OpCase: modeltest.OpCase{Name: "relu", Op: newReLU("relu", 50, 3),
				In: [][]float32{modeltest.AwayFromZero(modeltest.RandFloats(rng, 150, 1))}, Shapes: [][]int{{50, 3}}, H: 1e-3, Tol: 1e-3},
				Ref: func(in [][]float64) []float64 {
					y := make([]float64, len(in[0]))
					for i, v := range in[0] {
						y[i] = math.Max(v, 0)
					}
					return y
				}},
		}
		for _, c := range cases {
			c.Name = fmt.Sprintf("%s (threads %d)", c.Name, threads)
			t.Run(c.Name, func(t *testing.T) {
				modeltest.CheckRef(t, c)
			})
		}
	}
}

func refGraphAttn(b *data.Batch, gd *graphData, q, k, v, bias []float64, H, B, N, d int) []float64 {
	dh := d / H
	y := make([]float64, N*d)
	for j := 0; j < b.NumGraphs; j++ {
		p0, p1 := int(b.GraphPtr[j]), int(b.GraphPtr[j+1])
		nj := p1 - p0
		for u := p0; u < p1; u++ {
			for h := 0; h < H; h++ {
				c := h * dh
				s := make([]float64, nj)
				m := math.Inf(-1)
				for w := 0; w < nj; w++ {
					var x float64
					for i := 0; i < dh; i++ {
						x += q[u*d+c+i] * k[(p0+w)*d+c+i]
					}
					bk := int(gd.bucket[gd.boff[j]+(u-p0)*nj+w])
					s[w] = x/math.Sqrt(float64(dh)) + bias[bk*H+h]
					m = math.Max(m, s[w])
				}
				var sum float64
				for w := range s {
					s[w] = math.Exp(s[w] - m)
					sum += s[w]
				}
				for w := range s {
					for i := 0; i < dh; i++ {
						y[u*d+c+i] += s[w] / sum * v[(p0+w)*d+c+i]
					}
				}
			}
		}
	}
	return y
}

func refDegEmb(b *data.Batch, x, emb []float64, N, d int) []float64 {
	y := make([]float64, N*d)
	for u := 0; u < b.N; u++ {
		dg := min(degreeOf(b, u), MaxDegree)
		for j := 0; j < d; j++ {
			y[u*d+j] = x[u*d+j] + emb[dg*d+j]
		}
	}
	return y
}

func degreeOf(b *data.Batch, u int) int { return int(b.Adj.Ptr[u+1] - b.Adj.Ptr[u]) }
