package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/blas"
)

// gemmCase is one shape of the exactness tests.
type gemmCase struct {
	tA         bool
	m, n, k    int
	lda, ldb   int
	ldc        int
	beta       float32
	zeros, nan bool // a with many ±0 entries (ReLU outputs); a NaN in b
}

func gemmCases() []gemmCase {
	var cs []gemmCase
	for _, tA := range []bool{false, true} {
		for _, mnk := range [][3]int{
			{1, 1, 1}, {128, 64, 64}, {37, 64, 64}, {128, 2, 64}, {128, 64, 3}, {5, 64, 37},
			{64, 64, 128}, {7, 101, 13}, {3, 8, 0}, {2, 33, 5}, {128, 72, 64}, {4, 200, 9},
			{6, 300, 17}, {3, 12, 5}, {2, 7, 4}, {5, 130, 150},
		} {
			for _, beta := range []float32{0, 1, 0.5} {
				m, n, k := mnk[0], mnk[1], mnk[2]
				lda := max(k, 1)
				if tA {
					lda = m
				}
				cs = append(cs, gemmCase{tA: tA, m: m, n: n, k: k, lda: lda, ldb: n, ldc: n, beta: beta})
			}
			m, n, k := mnk[0], mnk[1], mnk[2]
			lda := k + 3
			if tA {
				lda = m + 3
			}
			cs = append(cs,
				gemmCase{tA: tA, m: m, n: n, k: k, lda: lda, ldb: n + 5, ldc: n + 1, beta: 1, zeros: true},
				gemmCase{tA: tA, m: m, n: n, k: k, lda: lda, ldb: n, ldc: n, beta: 0, zeros: true, nan: k > 0})
		}
	}
	return cs
}

func (c gemmCase) String() string {
	return fmt.Sprintf("tA=%v m=%d n=%d k=%d lda=%d ldb=%d ldc=%d beta=%g zeros=%v nan=%v", c.tA, c.m, c.n, c.k, c.lda, c.ldb, c.ldc, c.beta, c.zeros, c.nan)
}

// operands returns random a, b, c for the case.
func (c gemmCase) operands(rng *rand.Rand) (a, b, cm []float32) {
	rows := c.m
	if c.tA {
		rows = c.k
	}
	a = make([]float32, max(rows*c.lda, 1))
	b = make([]float32, max(c.k*c.ldb, 1))
	cm = make([]float32, max(c.m*c.ldc, 1))
	for i := range a {
		a[i] = float32(rng.NormFloat64())
		if c.zeros && rng.IntN(2) == 0 {
			a[i] = float32(math.Copysign(0, rng.NormFloat64())) // ±0
		}
	}
	for i := range b {
		b[i] = float32(rng.NormFloat64())
	}
	for i := range cm {
		cm[i] = float32(rng.NormFloat64())
		if c.zeros && rng.IntN(4) == 0 {
			cm[i] = float32(math.Copysign(0, -1)) // -0 stays -0 when every term is skipped
		}
	}
	if c.nan {
		b[rng.IntN(len(b))] = float32(math.NaN())
	}
	return a, b, cm
}

// TestSgemmExactMatchesGonum checks sgemmExact bit for bit against gonum's
// Sgemm (the default build's GEMM, which the trace golden pins) and the
// Go row kernel against the assembly one.
func TestSgemmExactMatchesGonum(t *testing.T) {
	if !haveAVX2 {
		t.Skip("no AVX2 kernels in this build or on this CPU: sgemm is gonum's")
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, c := range gemmCases() {
		a, b, c0 := c.operands(rng)
		want := append([]float32(nil), c0...)
		ta := blas.NoTrans
		if c.tA {
			ta = blas.Trans
		}
		impl.Sgemm(ta, blas.NoTrans, c.m, c.n, c.k, 1, a, c.lda, b, c.ldb, c.beta, want, c.ldc)
		got := append([]float32(nil), c0...)
		if !sgemmExact(c.tA, false, c.m, c.n, c.k, 1, a, c.lda, b, c.ldb, c.beta, got, c.ldc) {
			t.Fatalf("%v: sgemmExact declined", c)
		}
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("%v: c[%d] = %v (%#x), gonum %v (%#x)", c, i, got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
			}
		}
	}
}

// TestSgemmExactReference checks sgemmExact against a float64 reference
// (within float32 rounding of the products' magnitudes), and that the Go
// row kernel gives the assembly kernels' bits.
func TestSgemmExactReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, c := range gemmCases() {
		if c.nan {
			continue
		}
		a, b, c0 := c.operands(rng)
		at := func(i, l int) float32 {
			if c.tA {
				return a[l*c.lda+i]
			}
			return a[i*c.lda+l]
		}
		got := append([]float32(nil), c0...)
		if !sgemmExact(c.tA, false, c.m, c.n, c.k, 1, a, c.lda, b, c.ldb, c.beta, got, c.ldc) {
			if haveAVX2 {
				t.Fatalf("%v: sgemmExact declined", c)
			}
			continue
		}
		goRows := append([]float32(nil), c0...)
		for i := 0; i < c.m; i++ {
			row := goRows[i*c.ldc : i*c.ldc+c.n]
			for j := range row {
				switch c.beta {
				case 0:
					row[j] = 0
				case 1:
				default:
					row[j] *= c.beta
				}
			}
			if c.k == 0 {
				continue
			}
			if c.tA {
				axpyRowGo(row, a[i:], c.lda, c.k, b, c.ldb)
			} else {
				axpyRowGo(row, a[i*c.lda:], 1, c.k, b, c.ldb)
			}
		}
		for i := 0; i < c.m; i++ {
			for j := 0; j < c.n; j++ {
				ref, mag := float64(c.beta)*float64(c0[i*c.ldc+j]), math.Abs(float64(c.beta)*float64(c0[i*c.ldc+j]))
				if c.beta == 0 {
					ref, mag = 0, 0
				}
				for l := 0; l < c.k; l++ {
					p := float64(at(i, l)) * float64(b[l*c.ldb+j])
					ref += p
					mag += math.Abs(p)
				}
				g := got[i*c.ldc+j]
				if tol := float64(c.k+2) * 6e-8 * mag; math.Abs(float64(g)-ref) > tol {
					t.Fatalf("%v: c[%d,%d] = %v, float64 reference %v (tolerance %g)", c, i, j, g, ref, tol)
				}
				if gr := goRows[i*c.ldc+j]; math.Float32bits(gr) != math.Float32bits(g) {
					t.Fatalf("%v: c[%d,%d]: Go row kernel %v, assembly %v", c, i, j, gr, g)
				}
			}
		}
	}
}

// TestSgemmExactDeclines checks the cases left to gonum.
func TestSgemmExactDeclines(t *testing.T) {
	a, b, c := make([]float32, 16), make([]float32, 16), make([]float32, 16)
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"both transposed", sgemmExact(true, true, 4, 4, 4, 1, a, 4, b, 4, 0, c, 4)},
		{"alpha 2", sgemmExact(false, false, 4, 4, 4, 2, a, 4, b, 4, 0, c, 4)},
		{"short a", sgemmExact(false, false, 4, 4, 5, 1, a, 5, b, 4, 0, c, 4)},
		{"short c", sgemmExact(false, false, 5, 4, 4, 1, a, 4, b, 4, 0, c, 4)},
		{"small ldb", sgemmExact(false, false, 4, 4, 4, 1, a, 4, b, 3, 0, c, 4)},
	} {
		if tc.ok {
			t.Errorf("%s: sgemmExact accepted", tc.name)
		}
	}
}

// BenchmarkSgemm compares gonum's Sgemm with sgemmExact on the kernels'
// shapes: a 128-row chunk (or a few rows) by hidden 64, R-SPN's 128 and
// E-SPN's 300 (four blocks of 64 columns and a tail of 44), and the
// Peptides-func widths 210 and 175, whose rows of W differ in alignment.
func BenchmarkSgemm(b *testing.B) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, s := range []struct {
		name    string
		tA, tB  bool
		m, n, k int
	}{
		{"NN/128x64x64", false, false, 128, 64, 64},
		{"NN/16x64x64", false, false, 16, 64, 64},
		{"NN/128x2x64", false, false, 128, 2, 64},
		{"TN/64x64x128", true, false, 64, 64, 128},
		{"NT/128x64x64", false, true, 128, 64, 64},
		{"NN/128x128x128", false, false, 128, 128, 128},
		{"TN/128x128x128", true, false, 128, 128, 128},
		{"NN/128x300x300", false, false, 128, 300, 300},
		{"NT/128x128x128", false, true, 128, 128, 128},
		{"NT/128x300x300", false, true, 128, 300, 300},
		{"NT/128x210x210", false, true, 128, 210, 210},
		{"NT/128x175x175", false, true, 128, 175, 175},
		{"TN/300x300x128", true, false, 300, 300, 128},
	} {
		lda, ldb := s.k, s.n
		if s.tA {
			lda = s.m
		}
		if s.tB {
			ldb = s.k
		}
		a := make([]float32, s.m*s.k)
		bm := make([]float32, s.k*s.n)
		c := make([]float32, s.m*s.n)
		for i := range a {
			a[i] = max(0, float32(rng.NormFloat64())) // ReLU-like: half zeros
		}
		for i := range bm {
			bm[i] = float32(rng.NormFloat64())
		}
		ta, tb := blas.NoTrans, blas.NoTrans
		if s.tA {
			ta = blas.Trans
		}
		if s.tB {
			tb = blas.Trans
		}
		flops := float64(2 * s.m * s.n * s.k)
		b.Run(s.name+"/gonum", func(b *testing.B) {
			for b.Loop() {
				impl.Sgemm(ta, tb, s.m, s.n, s.k, 1, a, lda, bm, ldb, 0, c, s.n)
			}
			b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
		b.Run(s.name+"/sgemm", func(b *testing.B) {
			for b.Loop() {
				sgemm(s.tA, s.tB, s.m, s.n, s.k, 1, a, lda, bm, ldb, 0, c, s.n)
			}
			b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

// BenchmarkSgemmFreshZeros is y = x·W with x's ReLU-like zeros new at
// every call, as in training: each call takes the next of 16 matrices,
// too many for the CPU's branch predictor to learn where the zeros are,
// which it does for BenchmarkSgemm's one repeated matrix (the row kernels
// branch on every zero).
func BenchmarkSgemmFreshZeros(b *testing.B) {
	const variants = 16
	rng := rand.New(rand.NewPCG(5, 6))
	for _, d := range []int{64, 128, 300} {
		const m = 128
		xs := make([][]float32, variants)
		for v := range xs {
			xs[v] = make([]float32, m*d)
			for i := range xs[v] {
				xs[v][i] = max(0, float32(rng.NormFloat64()))
			}
		}
		w := make([]float32, d*d)
		for i := range w {
			w[i] = float32(rng.NormFloat64())
		}
		y := make([]float32, m*d)
		b.Run(fmt.Sprintf("NN/%dx%dx%d", m, d, d), func(b *testing.B) {
			for v := 0; b.Loop(); v++ {
				sgemm(false, false, m, d, d, 1, xs[v%variants], d, w, d, 0, y, d)
			}
			b.ReportMetric(float64(2*m*d*d)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

// TestSgemmExactNTMatchesGonum checks C = A·Bᵀ bit for bit against gonum's
// Sgemm for every alignment of B's rows, inner dimensions around the
// 16-element blocks and row and column counts around the 2×4 kernel.
func TestSgemmExactNTMatchesGonum(t *testing.T) {
	if !haveAVX2 {
		t.Skip("no AVX2 kernels in this build or on this CPU: sgemm is gonum's")
	}
	rng := rand.New(rand.NewPCG(7, 8))
	// k above 64 with m, n ≥ 65 is gonum's parallel mode, which adds the
	// dot products in blocks of 64 (300: hidden 300, the E-SPN width).
	for _, k := range []int{0, 1, 2, 3, 4, 5, 15, 16, 17, 19, 35, 64, 68, 100, 128, 131, 300} {
		// n = 600: several cache blocks of rows of B per alignment class
		// in the mixed-alignment path (at k ≥ 64 a block is 64 rows).
		for _, n := range []int{1, 7, 8, 9, 64, 67, 130, 600} {
			if n == 600 && k < 64 {
				continue
			}
			for _, m := range []int{1, 5, 128} {
				for shift := 0; shift < 4; shift++ {
					for _, ldb := range ntStrides(k) {
						for _, beta := range []float32{0, 1, -0.5} {
							lda := max(k, 1) + shift
							a := make([]float32, m*lda)
							bb := make([]float32, shift+n*ldb)[shift:] // rows start shift elements off 16 bytes
							c0 := make([]float32, m*n)
							for i := range a {
								a[i] = float32(rng.NormFloat64())
							}
							for i := range bb {
								bb[i] = float32(rng.NormFloat64())
							}
							for i := range c0 {
								c0[i] = float32(rng.NormFloat64())
								if i%7 == 0 {
									c0[i] = float32(math.Copysign(0, -1))
								}
							}
							want := append([]float32(nil), c0...)
							impl.Sgemm(blas.NoTrans, blas.Trans, m, n, k, 1, a, lda, bb, ldb, beta, want, n)
							got := append([]float32(nil), c0...)
							name := fmt.Sprintf("m=%d n=%d k=%d ldb=%d shift=%d beta=%g", m, n, k, ldb, shift, beta)
							if !sgemmExact(false, true, m, n, k, 1, a, lda, bb, ldb, beta, got, n) {
								t.Fatalf("%s: declined", name)
							}
							for i := range want {
								if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
									t.Fatalf("%s: c[%d] = %v, gonum %v", name, i, got[i], want[i])
								}
							}
						}
					}
				}
			}
		}
	}
}

// ntStrides returns the strides of B's rows TestSgemmExactNTMatchesGonum
// tries for inner dimension k: a multiple of 4 (every row with one
// alignment) and, for k > 0, one of each other residue mod 4 (rows in two
// or four alignments, as at widths 210, 175 and 125).
func ntStrides(k int) []int {
	s := []int{max((k+3)/4*4, 4)}
	if k == 0 {
		return s
	}
	for pad := 0; pad < 4; pad++ {
		if (k+pad)%4 != 0 {
			s = append(s, k+pad)
		}
	}
	return s
}

// TestDotUnitaryGo checks the Go spelling of gonum's dot product against
// gonum (Sdot with unit strides is DotUnitary) and a float64 reference.
func TestDotUnitaryGo(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for k := 0; k < 70; k++ {
		for shift := 0; shift < 4; shift++ {
			x := make([]float32, k)
			y := make([]float32, k+shift)[shift:]
			ref, mag := 0.0, 0.0
			for i := range x {
				x[i], y[i] = float32(rng.NormFloat64()), float32(rng.NormFloat64())
				ref += float64(x[i]) * float64(y[i])
				mag += math.Abs(float64(x[i]) * float64(y[i]))
			}
			var p int
			if k > 0 {
				p = alignPrefix(&y[0], k)
			}
			got := dotUnitaryGo(x, y, p)
			if want := impl.Sdot(k, x, 1, y, 1); math.Float32bits(got) != math.Float32bits(want) {
				t.Fatalf("k=%d shift=%d: %v, gonum %v", k, shift, got, want)
			}
			if math.Abs(float64(got)-ref) > float64(k+1)*6e-8*mag {
				t.Fatalf("k=%d shift=%d: %v, float64 reference %v", k, shift, got, ref)
			}
		}
	}
}

// TestAxpyRowWidths checks the row kernel on every width up to 130 (the
// blocks of 64 and each tail of 8·n8 + r columns), with and without zero,
// strided a and zeros among its values, bit for bit against the Go row
// kernel; the columns after the row hold sentinels in c (which must stay)
// and NaNs in b (which must not reach the row).
func TestAxpyRowWidths(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	const pad = 9
	for n := 1; n <= 130; n++ {
		for _, k := range []int{1, 7, 70} {
			for _, zero := range []bool{false, true} {
				astride, ldb := 3, n+pad
				a := make([]float32, k*astride)
				for i := range a {
					if rng.IntN(4) > 0 {
						a[i] = float32(rng.NormFloat64())
					}
				}
				b := make([]float32, k*ldb)
				for l := 0; l < k; l++ {
					for j := 0; j < ldb; j++ {
						b[l*ldb+j] = float32(rng.NormFloat64())
						if j >= n {
							b[l*ldb+j] = float32(math.NaN())
						}
					}
				}
				c := make([]float32, n+pad)
				for j := range c {
					c[j] = float32(rng.NormFloat64())
				}
				want := append([]float32(nil), c...)
				if zero {
					clear(want[:n])
				}
				axpyRowGo(want[:n], a, astride, k, b, ldb)
				got := append([]float32(nil), c...)
				axpyRow(got[:n], axpyRowArgs{A: a, AStride: astride, K: k, B: b, LdB: ldb, Zero: zero})
				for j := range got {
					if math.Float32bits(got[j]) != math.Float32bits(want[j]) {
						t.Fatalf("n=%d k=%d zero=%v: c[%d] = %v, Go row kernel %v", n, k, zero, j, got[j], want[j])
					}
				}
			}
		}
	}
}
