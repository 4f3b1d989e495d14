package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestBNKernels checks BNReLUForward, ReLUMask and BNBackward bit for bit
// against the plain Go loops (the AVX2 kernels' contract), for widths
// around the 8-column blocks, with zeros, −0 results and a NaN.
func TestBNKernels(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	for _, d := range []int{1, 8, 13, 64, 100} {
		for _, n := range []int{1, 5, 128, 300} {
			vec := func(m int) []float32 {
				v := make([]float32, m)
				for i := range v {
					v[i] = float32(rng.NormFloat64())
				}
				return v
			}
			x, mu, inv, g, bt := vec(n*d), vec(d), vec(d), vec(d), vec(d)
			dy, m, mx, gi := vec(n*d), vec(d), vec(d), vec(d)
			// γ·x̂ + β = −0 in column 0 (γ = 0, x̂ < 0 or −0, β = −0),
			// exact zeros and a NaN in x.
			g[0], bt[0] = 0, float32(math.Copysign(0, -1))
			for i := 0; i < len(x); i += 7 {
				x[i] = mu[i%d]
			}
			x[len(x)/2] = float32(math.NaN())

			wantH, wantY := make([]float32, n*d), make([]float32, n*d)
			for r := 0; r < n; r++ {
				for j := 0; j < d; j++ {
					h := (x[r*d+j] - mu[j]) * inv[j]
					wantH[r*d+j] = h
					wantY[r*d+j] = max(g[j]*h+bt[j], 0)
				}
			}
			be := CPU{Threads: 2}
			h, y := make([]float32, n*d), make([]float32, n*d)
			BNReLUForward(be, BNReLUArgs{XHat: h, Y: y, X: x, Mu: mu, Inv: inv, Gamma: g, Beta: bt, N: n, D: d})
			same(t, "x̂", d, n, h, wantH)
			same(t, "y", d, n, y, wantY)

			wantZ := make([]float32, n*d)
			for i, v := range y {
				if math.Float32bits(v) != 0 {
					wantZ[i] = dy[i]
				}
			}
			dz := make([]float32, n*d)
			ReLUMask(be, dz, y, dy, n, d)
			same(t, "dz", d, n, dz, wantZ)

			wantX := make([]float32, n*d)
			for r := 0; r < n; r++ {
				for j := 0; j < d; j++ {
					wantX[r*d+j] = gi[j] * (dz[r*d+j] - m[j] - h[r*d+j]*mx[j])
				}
			}
			dx := make([]float32, n*d)
			BNBackward(be, BNBackwardArgs{DX: dx, DZ: dz, XHat: h, GI: gi, M: m, MX: mx, N: n, D: d})
			same(t, "dx", d, n, dx, wantX)
		}
	}
}

func same(t *testing.T, what string, d, n int, got, want []float32) {
	t.Helper()
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("d=%d n=%d %s[%d] = %v (%#x), loop %v (%#x)", d, n, what, i, got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
		}
	}
}

// BenchmarkBN is a batch norm + ReLU's forward and backward elementwise
// passes over 1024 rows of width 64.
func BenchmarkBN(b *testing.B) {
	const n, d = 1024, 64
	x, h, y, dz, dx := make([]float32, n*d), make([]float32, n*d), make([]float32, n*d), make([]float32, n*d), make([]float32, n*d)
	v := make([]float32, d)
	for i := range x {
		x[i] = float32(i%7) - 3
	}
	for j := range v {
		v[j] = 0.5
	}
	be := CPU{Threads: 1}
	for b.Loop() {
		BNReLUForward(be, BNReLUArgs{XHat: h, Y: y, X: x, Mu: v, Inv: v, Gamma: v, Beta: v, N: n, D: d})
		ReLUMask(be, dz, y, x, n, d)
		BNBackward(be, BNBackwardArgs{DX: dx, DZ: dz, XHat: h, GI: v, M: v, MX: v, N: n, D: d})
	}
}

// TestScaleInto checks scaleInto bit for bit against the Go loop.
func TestScaleInto(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 24))
	for _, n := range []int{0, 1, 8, 13, 64, 1000} {
		x, y, want := make([]float32, n), make([]float32, n), make([]float32, n)
		a := float32(rng.NormFloat64())
		for i := range x {
			x[i] = float32(rng.NormFloat64())
			want[i] = a * x[i]
		}
		scaleInto(y, x, a)
		same(t, "y", 1, n, y, want)
	}
}

// TestRowSum checks RowSum bit for bit against the Go loop.
func TestRowSum(t *testing.T) {
	rng := rand.New(rand.NewPCG(25, 26))
	for _, d := range []int{3, 64, 70, 128} {
		for _, n := range []int{0, 1, 2, 31} {
			x := make([]float32, n*d)
			for i := range x {
				x[i] = float32(rng.NormFloat64())
			}
			if n > 0 {
				x[0] = float32(math.Copysign(0, -1))
			}
			want := make([]float32, d)
			for r := 0; r < n; r++ {
				for j := 0; j < d; j++ {
					want[j] += x[r*d+j]
				}
			}
			got := make([]float32, d)
			for i := range got {
				got[i] = 7 // overwritten
			}
			RowSum(got, x, n, d)
			same(t, "y", d, n, got, want)
		}
	}
}
