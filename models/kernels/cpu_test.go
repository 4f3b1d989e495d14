package kernels

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/data/csr"
)

func randMat(rng *rand.Rand, n int) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = float32(rng.NormFloat64())
	}
	return s
}

func randCSR(rng *rand.Rand, n int, p float64) csr.CSR {
	c := csr.CSR{Ptr: make([]int32, n+1)}
	for u := 0; u < n; u++ {
		for v := 0; v < n; v++ {
			if v != u && rng.Float64() < p {
				c.Idx = append(c.Idx, int32(v))
			}
		}
		c.Ptr[u+1] = int32(len(c.Idx))
	}
	return c
}

func close32(t *testing.T, what string, got []float32, want []float64, tol float64) {
	t.Helper()
	for i := range want {
		if math.Abs(float64(got[i])-want[i]) > tol*(1+math.Abs(want[i])) {
			t.Fatalf("%s[%d] = %v, want %v", what, i, got[i], want[i])
		}
	}
}

// TestKernelsAgainstNaive compares every kernel with a float64 reference
// on 300 rows (three chunks), for 1 and 3 threads, and checks that the
// results are bit-identical across thread counts.
func TestKernelsAgainstNaive(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	n, in, out := 300, 7, 5
	x, w, bias := randMat(rng, n*in), randMat(rng, in*out), randMat(rng, out)
	dy := randMat(rng, n*out)
	hop := []csr.CSR{randCSR(rng, n, 0.02), randCSR(rng, n, 0.05)}
	coef := []float32{0.3, 0.7}
	xs := randMat(rng, n*in)

	y64 := make([]float64, n*out)
	dx64 := make([]float64, n*in)
	dw64 := make([]float64, in*out)
	db64 := make([]float64, out)
	for r := 0; r < n; r++ {
		for j := 0; j < out; j++ {
			s := float64(bias[j])
			for k := 0; k < in; k++ {
				s += float64(x[r*in+k]) * float64(w[k*out+j])
				dw64[k*out+j] += float64(x[r*in+k]) * float64(dy[r*out+j])
			}
			y64[r*out+j] = s
			db64[j] += float64(dy[r*out+j])
		}
		for k := 0; k < in; k++ {
			for j := 0; j < out; j++ {
				dx64[r*in+k] += float64(dy[r*out+j]) * float64(w[k*out+j])
			}
		}
	}
	agg64 := make([]float64, n*in)
	sums64 := [][]float64{make([]float64, n*in), make([]float64, n*in)}
	for u := 0; u < n; u++ {
		for c := 0; c < in; c++ {
			agg64[u*in+c] = 1.5 * float64(xs[u*in+c])
		}
		for i, a := range hop {
			for _, v := range a.Row(u) {
				for c := 0; c < in; c++ {
					sums64[i][u*in+c] += float64(xs[int(v)*in+c])
					agg64[u*in+c] += float64(coef[i]) * float64(xs[int(v)*in+c])
				}
			}
		}
	}
	var results [][]float32
	for _, threads := range []int{1, 3} {
		be := CPU{Threads: threads}
		y := make([]float32, n*out)
		be.MatMul(y, x, w, bias, MatMulShape{N: n, In: in, Out: out})
		close32(t, "MatMul", y, y64, 1e-5)
		dx := make([]float32, n*in)
		be.MatMulBT(dx, dy, w, MatMulShape{N: n, In: in, Out: out})
		close32(t, "MatMulBT", dx, dx64, 1e-5)
		dw, db := make([]float32, in*out), make([]float32, out)
		be.MatMulAT(dw, db, x, dy, MatMulShape{N: n, In: in, Out: out})
		close32(t, "MatMulAT dw", dw, dw64, 1e-4)
		close32(t, "MatMulAT db", db, db64, 1e-4)
		var buf []float32
		for range 2 { // a reused scratch buffer must not leak into the result
			dw2, db2 := make([]float32, in*out), make([]float32, out)
			be.MatMulATBuf(dw2, db2, x, dy, MatMulShape{N: n, In: in, Out: out}, &buf)
			if !slices.Equal(dw, dw2) || !slices.Equal(db, db2) {
				t.Fatal("MatMulATBuf differs from MatMulAT")
			}
		}
		agg := make([]float32, n*in)
		sums := [][]float32{make([]float32, n*in), make([]float32, n*in)}
		be.HopAggregateSums(agg, sums, xs, HopMix{Hops: hop, Coef: coef, Scale: 1.5}, n, in)
		close32(t, "HopAggregateSums", agg, agg64, 1e-5)
		close32(t, "HopAggregateSums sums[1]", sums[1], sums64[1], 1e-5)
		agg2 := make([]float32, n*in)
		be.HopAggregate(agg2, xs, HopMix{Hops: hop, Coef: coef, Scale: 1.5}, n, in)
		if !slices.Equal(agg, agg2) {
			t.Fatal("HopAggregate differs from HopAggregateSums")
		}
		dots := be.Dots(x, [][]float32{x, dx}, n, in)
		var want0 float64
		for _, v := range x {
			want0 += float64(v) * float64(v)
		}
		if math.Abs(dots[0]-want0) > 1e-4*want0 {
			t.Fatalf("Dots = %v, want %v", dots[0], want0)
		}
		var all []float32
		for _, s := range [][]float32{y, dx, dw, db, agg, sums[0], {float32(dots[0]), float32(dots[1])}} {
			all = append(all, s...)
		}
		results = append(results, all)
	}
	if !slices.Equal(results[0], results[1]) {
		t.Fatal("results differ between 1 and 3 threads")
	}
}

func TestTranspose(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 2))
	a := randCSR(rng, 40, 0.1)
	tt := Transpose(a)
	if err := data.ValidateCSR(tt, 40, 40, true); err != nil {
		t.Fatal(err)
	}
	for u := 0; u < 40; u++ {
		for _, v := range a.Row(u) {
			if !slices.Contains(tt.Row(int(v)), int32(u)) {
				t.Fatalf("edge %d→%d missing from the transpose", u, v)
			}
		}
	}
	if len(tt.Idx) != len(a.Idx) {
		t.Fatal("transpose changed the entry count")
	}
	back := Transpose(tt)
	if !slices.Equal(back.Ptr, a.Ptr) || !slices.Equal(back.Idx, a.Idx) {
		t.Fatal("transpose of the transpose differs")
	}
}

// BenchmarkHopAggregate is one SPN aggregation over 5 hops of a 3-Prox
// sized batch (32 graphs × 117 nodes, ~12 neighbours per hop), width 64.
func BenchmarkHopAggregate(b *testing.B) {
	rng := rand.New(rand.NewPCG(3, 3))
	n, d := 32*117, 64
	var hop []csr.CSR
	for i := 0; i < 5; i++ {
		c := csr.CSR{Ptr: make([]int32, n+1)}
		for u := 0; u < n; u++ {
			g := u / 117 * 117
			for e := 0; e < 12; e++ {
				c.Idx = append(c.Idx, int32(g+rng.IntN(117)))
			}
			slices.Sort(c.Idx[c.Ptr[u]:])
			c.Ptr[u+1] = int32(len(c.Idx))
		}
		hop = append(hop, c)
	}
	x := randMat(rng, n*d)
	y := make([]float32, n*d)
	sums := make([][]float32, 5)
	for i := range sums {
		sums[i] = make([]float32, n*d)
	}
	coef := []float32{0.2, 0.2, 0.2, 0.2, 0.2}
	be := CPU{Threads: 2}
	for b.Loop() {
		be.HopAggregateSums(y, sums, x, HopMix{Hops: hop, Coef: coef, Scale: 1}, n, d)
	}
}

// BenchmarkMatMul is one 3744×64·64×64 product (a hidden linear layer).
func BenchmarkMatMul(b *testing.B) {
	rng := rand.New(rand.NewPCG(4, 4))
	n := 32 * 117
	x, w := randMat(rng, n*64), randMat(rng, 64*64)
	y := make([]float32, n*64)
	be := CPU{Threads: 2}
	for b.Loop() {
		be.MatMul(y, x, w, nil, MatMulShape{N: n, In: 64, Out: 64})
	}
}
