package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestDotsExactBits checks dotsExact against gonum's Sdot bit for bit, over
// lengths that exercise every phase of DotUnitary's order (prefix, blocks
// of 16, groups of 4, single products), every 16-byte alignment of the
// ys (mixed within one call, so groups break), and 1 to 11 dot products.
func TestDotsExactBits(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	pool := make([]float32, 1<<14)
	for i := range pool {
		pool[i] = float32(rng.NormFloat64())
	}
	for _, n := range []int{1, 3, 4, 7, 15, 16, 17, 31, 33, 64, 100, 129, 1000} {
		for k := 1; k <= 11; k++ {
			for trial := 0; trial < 4; trial++ {
				x := pool[rng.IntN(64) : rng.IntN(64)+n+64][:n]
				ys := make([][]float32, k)
				for i := range ys {
					off := 2000 + rng.IntN(8000)
					if trial%2 == 0 {
						off = 2000 + 512*i // all at one alignment
					}
					ys[i] = pool[off : off+n]
				}
				out := make([]float32, k)
				dotsExact(out, x, ys)
				for i, y := range ys {
					want := impl.Sdot(n, x, 1, y, 1)
					if math.Float32bits(out[i]) != math.Float32bits(want) {
						t.Fatalf("n %d k %d trial %d: dot %d = %v, gonum's Sdot %v", n, k, trial, i, out[i], want)
					}
				}
			}
		}
	}
}

// BenchmarkDots compares gonum's Sdot one at a time with dotsExact on the
// α/ε gradient's shape: a 128-row chunk of hidden 64 against k+1 = 6
// matrices.
func BenchmarkDots(b *testing.B) {
	const n, k = 128 * 64, 6
	rng := rand.New(rand.NewPCG(1, 2))
	x := make([]float32, n)
	ys := make([][]float32, k)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	for i := range ys {
		ys[i] = make([]float32, n)
		for j := range ys[i] {
			ys[i][j] = float32(rng.NormFloat64())
		}
	}
	out := make([]float32, k)
	b.Run("gonum", func(b *testing.B) {
		for b.Loop() {
			for i, y := range ys {
				out[i] = impl.Sdot(n, x, 1, y, 1)
			}
		}
	})
	b.Run("dotsExact", func(b *testing.B) {
		for b.Loop() {
			dotsExact(out, x, ys)
		}
	})
}
