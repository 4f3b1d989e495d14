package kernels

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/spn-project/spn/data/csr"
)

// TestSumRowsKernels checks sumRows (AVX2 kernels where available) bit for
// bit against the Go loop, and against a float64 sum, for widths around
// the 8- and 64-column blocks and row counts around the groups of four.
func TestSumRowsKernels(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, d := range []int{1, 7, 8, 9, 16, 63, 64, 65, 72, 130} {
		const n = 40
		x := make([]float32, n*d)
		for i := range x {
			x[i] = float32(rng.NormFloat64())
			if i%17 == 0 {
				x[i] = float32(math.Copysign(0, -1))
			}
		}
		for nrows := 0; nrows <= 11; nrows++ {
			rows := make([]int32, nrows)
			for i := range rows {
				rows[i] = int32(rng.IntN(n)) // duplicates allowed
			}
			got, want := make([]float32, d), make([]float32, d)
			for i := range got {
				got[i], want[i] = 99, 99 // overwritten, not added to
			}
			sumRows(got, x, rows, d)
			sumRowsGo(want, x, rows, d, d)
			for j := range got {
				if math.Float32bits(got[j]) != math.Float32bits(want[j]) {
					t.Fatalf("d=%d rows=%v column %d: %v, Go loop %v", d, rows, j, got[j], want[j])
				}
				ref, mag := 0.0, 0.0
				for _, v := range rows {
					ref += float64(x[int(v)*d+j])
					mag += math.Abs(float64(x[int(v)*d+j]))
				}
				if math.Abs(float64(got[j])-ref) > float64(nrows+1)*6e-8*mag {
					t.Fatalf("d=%d rows=%v column %d: %v, float64 sum %v", d, rows, j, got[j], ref)
				}
			}
		}
	}
	// Special values go through lane by lane.
	x := []float32{float32(math.Inf(1)), float32(math.NaN()), 1, 2, 3, 4, 5, 6, float32(math.Inf(-1)), 0, 0, 0, 0, 0, 0, 0}
	got, want := make([]float32, 8), make([]float32, 8)
	sumRows(got, x, []int32{0, 1, 1, 0, 1}, 8)
	sumRowsGo(want, x, []int32{0, 1, 1, 0, 1}, 8, 8)
	for j := range got {
		if math.Float32bits(got[j]) != math.Float32bits(want[j]) && !(math.IsNaN(float64(got[j])) && math.IsNaN(float64(want[j]))) {
			t.Fatalf("special values, column %d: %v, Go loop %v", j, got[j], want[j])
		}
	}
}

// BenchmarkSumRows sums 12 rows of width 64 (a hop set's row) per op.
func BenchmarkSumRows(b *testing.B) {
	const n, d = 128, 64
	x := make([]float32, n*d)
	for i := range x {
		x[i] = float32(i % 13)
	}
	rows := []int32{3, 17, 29, 31, 40, 55, 61, 77, 90, 101, 115, 127}
	s := make([]float32, d)
	b.Run("go", func(b *testing.B) {
		for b.Loop() {
			sumRowsGo(s, x, rows, d, d)
		}
	})
	b.Run("sumRows", func(b *testing.B) {
		for b.Loop() {
			sumRows(s, x, rows, d)
		}
	})
}

// TestSumRowsCSR checks the chunk kernel bit for bit against sumRowsGo row
// by row, for widths of one and two 64-column blocks and others (the
// per-row path), rows of 0 to 9 neighbours, and a sub-range of rows.
func TestSumRowsCSR(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	for _, d := range []int{8, 64, 100, 128} {
		const n = 200
		x := make([]float32, n*d)
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		a := csr.CSR{Ptr: []int32{0}}
		for u := 0; u < n; u++ {
			for c := rng.IntN(10); c > 0; c-- {
				a.Idx = append(a.Idx, int32(rng.IntN(n)))
			}
			a.Ptr = append(a.Ptr, int32(len(a.Idx)))
		}
		for _, r := range [][2]int{{0, n}, {37, 165}, {5, 6}} {
			lo, hi := r[0], r[1]
			got := make([]float32, (hi-lo)*d)
			sumRowsCSR(got, x, a, lo, hi, d)
			want := make([]float32, (hi-lo)*d)
			for u := lo; u < hi; u++ {
				sumRowsGo(want[(u-lo)*d:], x, a.Idx[a.Ptr[u]:a.Ptr[u+1]], d, d)
			}
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("d=%d rows [%d,%d): value %d = %v, sumRowsGo %v", d, lo, hi, i, got[i], want[i])
				}
			}
		}
	}
}
