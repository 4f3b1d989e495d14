package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// colSumsLoop is ColSums' and ColSumsPair's arithmetic as plain Go loops
// (chunk partials in row order, chunks added in order): the bits the AVX2
// kernels must give.
func colSumsLoop(x, y []float32, center []float64, n, d int) (sums, sq, pair []float64) {
	nc := NumChunks(n)
	sums, sq, pair = make([]float64, d), make([]float64, d), make([]float64, d)
	for ch := 0; ch < nc; ch++ {
		ps, pq, pp := make([]float64, d), make([]float64, d), make([]float64, d)
		for r := ch * ChunkRows; r < min((ch+1)*ChunkRows, n); r++ {
			for j := 0; j < d; j++ {
				v := x[r*d+j]
				ps[j] += float64(v)
				e := float64(v) - center[j]
				pq[j] += e * e
				pp[j] += float64(v * y[r*d+j])
			}
		}
		for j := 0; j < d; j++ {
			sums[j] += ps[j]
			sq[j] += pq[j]
			pair[j] += pp[j]
		}
	}
	return sums, sq, pair
}

// TestColSumsKernels checks ColSums and ColSumsPair bit for bit against
// the plain loops for widths around the kernels' 16- and 32-column blocks.
func TestColSumsKernels(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	for _, d := range []int{16, 17, 32, 40, 64, 100} {
		for _, n := range []int{1, 127, 128, 300} {
			x, y := make([]float32, n*d), make([]float32, n*d)
			center := make([]float64, d)
			for i := range x {
				x[i], y[i] = float32(rng.NormFloat64()), float32(rng.NormFloat64())
			}
			for j := range center {
				center[j] = rng.NormFloat64()
			}
			sums, sq, pair := colSumsLoop(x, y, center, n, d)
			be := CPU{Threads: 2}
			s, c := ColSums(be, x, nil, n, d), ColSums(be, x, center, n, d)
			a, p := ColSumsPair(be, x, y, n, d)
			for j := 0; j < d; j++ {
				for _, q := range []struct {
					name      string
					got, want float64
				}{{"sum", s[j], sums[j]}, {"centred squares", c[j], sq[j]}, {"pair sum", a[j], sums[j]}, {"pair products", p[j], pair[j]}} {
					if math.Float64bits(q.got) != math.Float64bits(q.want) {
						t.Fatalf("d=%d n=%d column %d %s: %v, loop %v", d, n, j, q.name, q.got, q.want)
					}
				}
			}
		}
	}
}

// BenchmarkColSums is batch norm's statistics over one 128-row chunk of
// width 64.
func BenchmarkColSums(b *testing.B) {
	const n, d = 128, 64
	x, y := make([]float32, n*d), make([]float32, n*d)
	for i := range x {
		x[i], y[i] = float32(i%7), float32(i%5)
	}
	center := make([]float64, d)
	be := CPU{Threads: 1}
	for b.Loop() {
		ColSums(be, x, nil, n, d)
		ColSums(be, x, center, n, d)
		ColSumsPair(be, x, y, n, d)
	}
}
