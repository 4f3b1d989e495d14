package kern_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/internal/testkit/kerntest"
	"github.com/spn-project/spn/models"
	"github.com/spn-project/spn/models/cuda/kern"
	"github.com/spn-project/spn/models/internal/testkit/hopcase"
	"github.com/spn-project/spn/models/kernels"
	"github.com/spn-project/spn/models/param"
	"github.com/spn-project/spn/models/rt"
)

// Tolerances. Where the kernel follows the CPU kernel's order of
// operations the test asserts the same bits. Otherwise:
//
//   - dα and dε: the CPU adds float32 partial dot products per chunk of
//     rows (in SIMD order), the kernel double ones: |Δ| ≤ 1e-6·Σ|products|,
//     the float32 rounding of the CPU's sums;
//   - softmax and cross-entropy: Go's math.Exp and math.Log against the C
//     library's (GPU: CUDA's), each within an ulp or two in double: relative
//     1e-6 on float32 outputs.
const (
	dotTol = 1e-6
	expTol = 1e-6
)

// flat is kern.PackHops, which must succeed.
func flat(t *testing.T, hops []data.CSR, n int) (ptr, idx []int32) {
	t.Helper()
	ptr, idx, err := kern.PackHops(hops, n)
	if err != nil {
		t.Fatal(err)
	}
	return ptr, idx
}

// TestHopAggregate compares the SPN aggregation forward and backward with
// models/nbop's HopCombine (the CPU op of the spn kind) on a batch of layered
// graphs, k = 4, over more than one chunk of rows.
func TestHopAggregate(t *testing.T) {
	const k, d = 4, 7
	c := hopcase.New(t, k, d)
	n, H, dy, alpha, eps, grad := c.N, c.H, c.DY, c.Alpha, c.Eps, c.Grad
	ptr, idx := flat(t, c.B.Hop[:k], n)
	for _, block := range []int{64, 5} { // the result does not depend on the launch
		yk, sk := make([]float32, n*d), make([]float32, k*n*d)
		launch(t, "spn_hop_aggregate", cover(n*d, block), block, yk, sk, H, ptr, idx, alpha, eps, k, n, d)
		equalBits(t, "y", yk, c.Y)
		for i := range c.Sums {
			equalBits(t, "S_i", sk[i*n*d:(i+1)*n*d], c.Sums[i])
		}
	}
	sk := make([]float32, k*n*d)
	launch(t, "spn_hop_aggregate", cover(n*d, 64), 64, make([]float32, n*d), sk, H, ptr, idx, alpha, eps, k, n, d)

	// dH: the same gather of dOut over the transposed hop sets.
	ptrT, idxT := flat(t, c.Transposed(), n)
	dH := make([]float32, n*d)
	launch(t, "spn_hop_aggregate", cover(n*d, 64), 64, dH, []float32(nil), dy, ptrT, idxT, alpha, eps, k, n, d)
	equalBits(t, "dH", dH, grad[0])

	// dα_i = Σ ⟨dOut, S_i⟩, dε = Σ ⟨dOut, H⟩.
	got := dots(t, dy, sk, k, H, n, d, 8)
	for i := 0; i < k; i++ {
		near(t, "dα", got[i:i+1], grad[1][i:i+1], dotTol*kerntest.AbsDot(dy, sk[i*n*d:(i+1)*n*d]), 0)
	}
	near(t, "dε", got[k:], grad[2], dotTol*kerntest.AbsDot(dy, H), 0)
}

// TestSoftmax compares the hop weights' softmax and its gradient with
// models/rt's op.
func TestSoftmax(t *testing.T) {
	for _, k := range []int{1, 5} {
		rng := rand.New(rand.NewPCG(3, uint64(k)))
		logits, da := kerntest.Randn(rng, k, 2), kerntest.Randn(rng, k, 1)
		op := rt.NewSoftmax("alpha", k)
		a, dl := make([]float32, k), make([]float32, k)
		if err := op.Forward([][]float32{logits}, a); err != nil {
			t.Fatal(err)
		}
		if err := op.Backward([][]float32{logits}, a, da, [][]float32{dl}); err != nil {
			t.Fatal(err)
		}
		ak, dlk := make([]float32, k), make([]float32, k)
		launch(t, "spn_softmax", 2, 4, ak, logits, k)
		near(t, "α", ak, a, 0, expTol)
		launch(t, "spn_softmax_backward", 2, 4, dlk, a, da, k)
		near(t, "dlogits", dlk, dl, 1e-12, expTol)
	}
}

// TestBiasReLU: y = ReLU(x + b) against Go's max (no CPU op adds a bias
// on its own: the CPU's GEMM adds it), the ReLU mask against
// kernels.ReLUMask.
func TestBiasReLU(t *testing.T) {
	const n, d = 300, 5
	rng := rand.New(rand.NewPCG(4, 5))
	x, b, dy := kerntest.Randn(rng, n*d, 1), kerntest.Randn(rng, d, 1), kerntest.Randn(rng, n*d, 1)
	x[3] = -b[3] // x + b = +0
	for _, relu := range []int{0, 1} {
		y := make([]float32, n*d)
		launch(t, "spn_bias_relu", cover(n*d, 32), 32, y, x, b, n, d, relu)
		want := make([]float32, n*d)
		for i := range want {
			want[i] = x[i] + b[i%d]
			if relu == 1 {
				want[i] = max(want[i], 0)
			}
		}
		equalBits(t, "y", y, want)
	}
	y := make([]float32, n*d)
	launch(t, "spn_bias_relu", cover(n*d, 32), 32, y, x, b, n, d, 1)
	dz, wantDz := make([]float32, n*d), make([]float32, n*d)
	launch(t, "spn_relu_mask", cover(n*d, 32), 32, dz, y, dy, n*d)
	kernels.ReLUMask(kernels.CPU{}, wantDz, y, dy, n, d)
	equalBits(t, "dz", dz, wantDz)
	// The bias gradient: TestColSums.
}

// TestFill: spn_fill sets every value, and only those, to the value
// (-0 kept).
func TestFill(t *testing.T) {
	for _, v := range []float32{0, float32(math.Copysign(0, -1)), 1.5} {
		y := []float32{7, 7, 7, 7, 7, 7}
		launch(t, "spn_fill", cover(5, 2), 2, y, v, 5)
		equalBits(t, "y", y, []float32{v, v, v, v, v, 7})
	}
}

// TestAddMany: spn_add_many adds each of its arrays into its part of g,
// as the CPU's float32 sums, and leaves g's other values and the arrays
// past count alone, with as many threads as values and with more.
func TestAddMany(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	xs := make([][]float32, kern.AddMany)
	offs := make([]int, kern.AddMany)
	// Parts of g in the reverse of the arrays' order, the last two arrays
	// unused, and two values of g in no part.
	size := 2
	for j := range xs {
		xs[j] = kerntest.Randn(rng, 1+j%3, 1)
		size += len(xs[j])
	}
	at := size
	for j := range xs {
		at -= len(xs[j])
		offs[j] = at
	}
	g0 := kerntest.Randn(rng, size, 1)
	count, values := kern.AddMany-2, 0
	want := append([]float32(nil), g0...)
	for j := 0; j < count; j++ {
		for i, v := range xs[j] {
			want[offs[j]+i] += v
		}
		values += len(xs[j])
	}
	for _, block := range []int{values, 8} { // as many threads as values, and more
		g := append([]float32(nil), g0...)
		args := []any{g}
		for _, x := range xs {
			args = append(args, x)
		}
		for _, o := range offs {
			args = append(args, o)
		}
		for _, x := range xs {
			args = append(args, len(x))
		}
		args = append(args, count)
		launch(t, "spn_add_many", cover(values, block), block, args...)
		equalBits(t, fmt.Sprintf("g (blocks of %d)", block), g, want)
	}
}

// TestScale: spn_scale multiplies every value by the scalar, as the CPU's
// float32 product.
func TestScale(t *testing.T) {
	x := []float32{1.5, -2, 0, 3.25e-3, 7}
	s := []float32{-0.3}
	y := make([]float32, len(x))
	launch(t, "spn_scale", cover(len(x), 2), 2, y, x, s, len(x))
	want := make([]float32, len(x))
	for i, v := range x {
		want[i] = v * s[0]
	}
	equalBits(t, "y", y, want)
}

// TestGeScalar: spn_ge_scalar is 1 where x ≥ s (or s ≥ x), else 0, NaN
// and -0 included, over the values and only those.
func TestGeScalar(t *testing.T) {
	nan := float32(math.NaN())
	x := []float32{1.5, -2, 0, float32(math.Copysign(0, -1)), nan, 3e-3, 7}
	for _, left := range []int{1, 0} {
		y := make([]float32, len(x)+1)
		y[len(x)] = 7
		launch(t, "spn_ge_scalar", cover(len(x), 2), 2, y, x, float32(0), left, len(x))
		want := make([]float32, len(x)+1)
		want[len(x)] = 7
		for i, v := range x {
			if (left == 1 && v >= 0) || (left == 0 && 0 >= v) {
				want[i] = 1
			}
		}
		equalBits(t, fmt.Sprintf("y (left %d)", left), y, want)
	}
}

// TestEncode: spn_encode adds (p + b) + E[label] per value as models/rt's
// encoder (absent terms with null pointers), and the label embeddings'
// gradient (embedGrad) adds each label's rows of dy in node order into a
// zeroed gradient; the same bits as the plain loops (each label has
// fewer nodes than a chunk).
func TestEncode(t *testing.T) {
	const n, d, L = 200, 3, 4
	rng := rand.New(rand.NewPCG(8, 9))
	p, b, E, dy := kerntest.Randn(rng, n*d, 1), kerntest.Randn(rng, d, 1), kerntest.Randn(rng, L*d, 1), kerntest.Randn(rng, n*d, 1)
	label := make([]int32, n)
	for i := range label {
		label[i] = int32(rng.IntN(L))
	}
	for _, c := range []struct {
		name string
		p, E []float32
	}{{"p+E", p, E}, {"E", nil, E}, {"p", p, nil}} {
		y := make([]float32, n*d)
		launch(t, "spn_encode", cover(n*d, 32), 32, y, c.p, b, c.E, label, n, d)
		want := make([]float32, n*d)
		for i := range want {
			v := b[i%d]
			if c.p != nil {
				v = c.p[i] + b[i%d]
			}
			if c.E != nil {
				v += c.E[int(label[i/d])*d+i%d]
			}
			want[i] = v
		}
		equalBits(t, c.name, y, want)
	}
	var ptr, idx []int32
	ptr = append(ptr, 0)
	for l := int32(0); l < L; l++ {
		for u, lu := range label {
			if lu == l {
				idx = append(idx, int32(u))
			}
		}
		ptr = append(ptr, int32(len(idx)))
	}
	// Into a zeroed gradient, as the device adaptor gives it: the CPU's
	// bits for rows of one chunk.
	dE, want := make([]float32, L*d), make([]float32, L*d)
	embedGrad(t, dE, dy, ptr, idx, d, 4)
	for u, l := range label {
		for j := 0; j < d; j++ {
			want[int(l)*d+j] += dy[u*d+j]
		}
	}
	equalBits(t, "dE", dE, want)
}

// TestBatchNorm compares batch norm + ReLU in training and evaluation
// mode, forward and backward, with the CPU kernels models/rt's op is made
// of (its glue between them repeated here: mean and variance from
// kernels.ColSums, 1/√(σ²+eps), the running statistics, the backward's
// column means).
func TestBatchNorm(t *testing.T) {
	for _, n := range []int{300, 100} { // three chunks of rows, one
		t.Run(fmt.Sprintf("n=%d", n), func(t *testing.T) { batchNorm(t, n) })
	}
}

func batchNorm(t *testing.T, n int) {
	const d, momentum, eps = 6, 0.1, 1e-5
	be := kernels.CPU{Threads: 2}
	rng := rand.New(rand.NewPCG(6, 7))
	x0, dy, bias := kerntest.Randn(rng, n*d, 2), kerntest.Randn(rng, n*d, 1), kerntest.Randn(rng, d, 3)
	x := make([]float32, n*d) // x0 plus a bias, as a linear map's output
	for i := range x {
		x0[i] += float32(i % d) // columns of different means
		x[i] = x0[i] + bias[i%d]
	}
	g, bt := kerntest.Randn(rng, d, 1), kerntest.Randn(rng, d, 0.5)
	runMean, runVar := make([]float64, d), make([]float64, d)
	for j := range runMean {
		runMean[j], runVar[j] = rng.NormFloat64(), 1+rng.Float64()
	}

	// Training mode, CPU.
	_, inv, xhat, y, wantMean, wantVar := kerntest.BNTrain(kerntest.BNCase{X: x, Gamma: g, Beta: bt, RunMean: runMean, RunVar: runVar, N: n, W: d, Momentum: momentum, Eps: eps})
	dz := make([]float32, n*d)
	kernels.ReLUMask(be, dz, y, dy, n, d)
	sdz, sdzx := kernels.ColSumsPair(be, dz, xhat, n, d)
	dg, db, gi, m, mx := make([]float32, d), make([]float32, d), make([]float32, d), make([]float32, d), make([]float32, d)
	for j := 0; j < d; j++ {
		dg[j], db[j] = float32(sdzx[j]), float32(sdz[j])
		gi[j], m[j], mx[j] = g[j]*inv[j], float32(sdz[j]/float64(n)), float32(sdzx[j]/float64(n))
	}
	dx := make([]float32, n*d)
	kernels.BNBackward(be, kernels.BNBackwardArgs{DX: dx, DZ: dz, XHat: xhat, GI: gi, M: m, MX: mx, N: n, D: d})

	// Training mode, kernels: the statistics' partials per chunk and
	// column, x̂ and y (and inv, the running statistics) per value; dz and
	// its partials per chunk and column, dx (and dγ, dβ) per value.
	// The input as x, and as x0 with the bias added by the kernels (the
	// fused MLP's form): the same bits.
	nc := kernels.NumChunks(n)
	msum, vsum := make([]float64, nc*d), make([]float64, nc*d)
	var kMean, kVar []float64
	kInv, kXhat, kY := make([]float32, d), make([]float32, n*d), make([]float32, n*d)
	for _, in := range []struct {
		what    string
		x, bias []float32
	}{{"x", x, nil}, {"x0 + bias", x0, bias}} {
		launch(t, "spn_bn_part", cover(nc*d, 4), 4, msum, []float64(nil), in.x, in.bias, n, d)
		launch(t, "spn_bn_part", cover(nc*d, 4), 4, vsum, msum, in.x, in.bias, n, d)
		kMean, kVar = append([]float64(nil), runMean...), append([]float64(nil), runVar...)
		launch(t, "spn_bn_relu_train", cover(n*d, 32), 32, kXhat, kY, kInv, kMean, kVar, in.x, in.bias, msum, vsum, g, bt, n, d, momentum, eps, 1)
		equalBits(t, in.what+": inv", kInv, inv)
		for j := range kMean {
			if kMean[j] != wantMean[j] || kVar[j] != wantVar[j] {
				t.Fatalf("%s: running statistics [%d] = %v, %v; CPU %v, %v", in.what, j, kMean[j], kVar[j], wantMean[j], wantVar[j])
			}
		}
		equalBits(t, in.what+": x̂", kXhat, xhat)
		equalBits(t, in.what+": y", kY, y)
	}
	kDz, part := make([]float32, n*d), make([]float64, 2*nc*d)
	launch(t, "spn_bn_backward_part", cover(nc*d, 4), 4, part, kDz, kY, dy, kXhat, n, d)
	equalBits(t, "dz", kDz, dz)
	kDg, kDb, kDx := make([]float32, d), make([]float32, d), make([]float32, n*d)
	launch(t, "spn_bn_backward", cover(nc*d, 4), 4, kDx, kDg, kDb, []float32(nil), []float32(nil), kDz, kXhat, g, kInv, part, n, d, 1)
	equalBits(t, "dγ", kDg, dg)
	equalBits(t, "dβ", kDb, db)
	equalBits(t, "dx", kDx, dx)

	// With the bias of a linear map before the batch norm: its gradient
	// Σ_rows dx from the chunks' partials (spn_col_sums) is the CPU GEMM's
	// bias gradient of dx, added to what it held, and dx is unchanged.
	dbias0 := kerntest.Randn(rng, d, 1)
	wantBias := append([]float32(nil), dbias0...)
	kernels.CPU{Threads: 2}.MatMulAT([]float32{}, wantBias, []float32{}, dx, kernels.MatMulShape{N: n, In: 0, Out: d})
	dbias, bpart := append([]float32(nil), dbias0...), []float32(nil) // one chunk: added by spn_bn_backward
	if nc > 1 {
		bpart = make([]float32, nc*d)
	}
	launch(t, "spn_bn_backward", cover(nc*d, 4), 4, kDx, kDg, kDb, dbias, bpart, kDz, kXhat, g, kInv, part, n, d, 1)
	if nc > 1 {
		launch(t, "spn_col_sums", cover(d, 4), 4, dbias, bpart, nc, d)
	}
	equalBits(t, "dx beside the bias gradient", kDx, dx)
	equalBits(t, "the bias gradient", dbias, wantBias)

	// Without update the running statistics stay.
	still, stillVar := append([]float64(nil), runMean...), append([]float64(nil), runVar...)
	launch(t, "spn_bn_relu_train", cover(n*d, 32), 32, kXhat, kY, kInv, still, stillVar, x, []float32(nil), msum, vsum, g, bt, n, d, momentum, eps, 0)
	for j := range still {
		if still[j] != runMean[j] || stillVar[j] != runVar[j] {
			t.Fatal("spn_bn_relu_train with update 0 moved the running statistics")
		}
	}

	// Evaluation mode: the running statistics, dx = dz·(γ·inv).
	eMu, eInv := make([]float32, d), make([]float32, d)
	for j := range eMu {
		eMu[j], eInv[j] = float32(runMean[j]), float32(1/math.Sqrt(runVar[j]+eps))
	}
	kMu := make([]float32, d)
	launch(t, "spn_bn_eval_stats", cover(d, 4), 4, kMu, kInv, runMean, runVar, d, eps)
	equalBits(t, "eval μ", kMu, eMu)
	equalBits(t, "eval inv", kInv, eInv)
	kernels.BNReLUForward(be, kernels.BNReLUArgs{XHat: xhat, Y: y, X: x, Mu: eMu, Inv: eInv, Gamma: g, Beta: bt, N: n, D: d})
	launch(t, "spn_bn_relu", cover(n*d, 32), 32, kXhat, kY, x, []float32(nil), kMu, kInv, g, bt, n, d)
	equalBits(t, "eval y", kY, y)
	launch(t, "spn_bn_relu", cover(n*d, 32), 32, kXhat, kY, x0, bias, kMu, kInv, g, bt, n, d)
	equalBits(t, "eval y of x0 + bias", kY, y)
	kernels.ReLUMask(be, dz, y, dy, n, d)
	for r := 0; r < n; r++ {
		for j := 0; j < d; j++ {
			dx[r*d+j] = dz[r*d+j] * (g[j] * eInv[j])
		}
	}
	sdz, sdzx = kernels.ColSumsPair(be, dz, xhat, n, d)
	launch(t, "spn_bn_backward_part", cover(nc*d, 4), 4, part, kDz, kY, dy, kXhat, n, d)
	equalBits(t, "eval dz", kDz, dz)
	launch(t, "spn_bn_backward", cover(nc*d, 4), 4, kDx, kDg, kDb, []float32(nil), []float32(nil), kDz, kXhat, g, kInv, part, n, d, 0)
	equalBits(t, "eval dx", kDx, dx)
	for j := 0; j < d; j++ {
		dg[j], db[j] = float32(sdzx[j]), float32(sdz[j])
	}
	equalBits(t, "eval dγ", kDg, dg)
	equalBits(t, "eval dβ", kDb, db)
}

// TestPool compares sum and mean pooling and their gradients with
// kernels.RowSum's sums, in order, on graphs with an empty one and
// padding rows after the last, for one node-state tensor and for three
// at once (blocks of y and dy, tensors x_k and dx_k): the same bits.
func TestPool(t *testing.T) {
	const d, N = 4, 150
	off := []int32{0, 3, 3, 10, 140, 141}
	G := len(off) - 1
	rng := rand.New(rand.NewPCG(8, 9))
	for _, count := range []int{1, 3} {
		xs, dys := make([][]float32, count), make([][]float32, count)
		for k := range xs {
			xs[k], dys[k] = kerntest.Randn(rng, N*d, 1), kerntest.Randn(rng, G*d, 1)
		}
		for mean := 0; mean <= 1; mean++ {
			kind := map[int]string{0: models.PoolSum, 1: models.PoolMean}[mean]
			var y []float32
			dx := make([][]float32, count)
			for k, x := range xs {
				var yk []float32
				yk, dx[k] = poolRef(kind, x, dys[k], off, d)
				y = append(y, yk...)
			}
			ky := make([]float32, count*G*d)
			args := append([]any{ky}, group(xs)...)
			launch(t, "spn_pool", cover(count*G*d, 8), 8, append(args, off, G, d, mean, count)...)
			equalBits(t, fmt.Sprintf("pool (%d tensors)", count), ky, y)
			kdx := make([][]float32, count)
			for k := range kdx {
				kdx[k] = make([]float32, N*d)
			}
			var dy []float32
			for _, v := range dys {
				dy = append(dy, v...)
			}
			args = append(group(kdx), dy)
			launch(t, "spn_pool_backward", cover(count*G*d, 8), 8, append(args, off, G, d, mean, count)...)
			for k := range kdx {
				equalBits(t, fmt.Sprintf("pool backward, tensor %d of %d", k, count), kdx[k], dx[k])
			}
		}
	}
}

// poolRef is the reference of TestPool and TestPoolMax: the pooling by
// kind of x (rows of d values, graph g its rows off[g]..off[g+1]-1) and
// its gradient for dy. Sum and mean add a graph's rows with
// kernels.RowSum, in order (mean then scales by 1/|g|, as its gradient
// does); max keeps the first row's value unless a later one is strictly
// greater and routes the gradient to that first arg-max row, as
// models/rt's max pooling. An empty graph gives zeros.
func poolRef(kind string, x, dy []float32, off []int32, d int) (y, dx []float32) {
	G := len(off) - 1
	y, dx = make([]float32, G*d), make([]float32, len(x))
	for g := 0; g < G; g++ {
		a, b := int(off[g]), int(off[g+1])
		if a == b {
			continue
		}
		if kind == models.PoolMax {
			for j := 0; j < d; j++ {
				best, arg := x[a*d+j], a
				for r := a + 1; r < b; r++ {
					if v := x[r*d+j]; v > best {
						best, arg = v, r
					}
				}
				y[g*d+j] = best
				dx[arg*d+j] = dy[g*d+j]
			}
			continue
		}
		kernels.RowSum(y[g*d:(g+1)*d], x[a*d:b*d], b-a, d)
		scale := float32(1)
		if kind == models.PoolMean {
			scale = 1 / float32(b-a)
			for j := 0; j < d; j++ {
				y[g*d+j] *= scale
			}
		}
		for r := a; r < b; r++ {
			for j := 0; j < d; j++ {
				dx[r*d+j] = dy[g*d+j] * scale
			}
		}
	}
	return y, dx
}

// group returns xs (at most kern.ReadoutGroup) as a kernel's group of
// pointer arguments, nil after them.
func group(xs [][]float32) []any {
	args := make([]any, kern.ReadoutGroup)
	for j := range args {
		var x []float32
		if j < len(xs) {
			x = xs[j]
		}
		args[j] = x
	}
	return args
}

// TestPoolMax compares max pooling and its gradient with models/rt's
// max pooling (the first row's value replaced only by a strictly
// greater one; the gradient to the first arg-max row) on graphs with an
// empty one, ties within a graph and padding rows after the last, for
// one node-state tensor and for three at once: the same bits.
func TestPoolMax(t *testing.T) {
	const d, N = 4, 150
	off := []int32{0, 3, 3, 10, 140, 141}
	G := len(off) - 1
	rng := rand.New(rand.NewPCG(12, 13))
	for _, count := range []int{1, 3} {
		xs, dys := make([][]float32, count), make([][]float32, count)
		var y, dy []float32
		dx := make([][]float32, count)
		for k := range xs {
			x := kerntest.Randn(rng, N*d, 1)
			for j := 0; j < d; j++ { // ties: rows 4 and 7 of graph 2 share their column maximum
				x[7*d+j] = x[4*d+j] + 10
				x[4*d+j] = x[7*d+j]
			}
			xs[k], dys[k] = x, kerntest.Randn(rng, G*d, 1)
			var yk []float32
			yk, dx[k] = poolRef(models.PoolMax, x, dys[k], off, d)
			if dx[k][4*d] == 0 || dx[k][7*d] != 0 {
				t.Fatal("the reference does not route the tie to the first row")
			}
			y, dy = append(y, yk...), append(dy, dys[k]...)
		}
		ky := make([]float32, count*G*d)
		for i := range ky {
			ky[i] = float32(math.NaN())
		}
		args := append([]any{ky}, group(xs)...)
		launch(t, "spn_pool_max", cover(count*G*d, 8), 8, append(args, off, G, d, count)...)
		equalBits(t, fmt.Sprintf("max pool (%d tensors)", count), ky, y)
		kdx := make([][]float32, count)
		for k := range kdx {
			kdx[k] = make([]float32, N*d)
		}
		args = append(append(group(kdx), dy), group(xs)...)
		launch(t, "spn_pool_max_backward", cover(count*G*d, 8), 8, append(args, off, G, d, count)...)
		for k := range kdx {
			equalBits(t, fmt.Sprintf("max pool backward, tensor %d of %d", k, count), kdx[k], dx[k])
		}
	}
}

// TestCrossEntropy compares the loss and its gradient with
// kernels.CrossEntropy.
func TestCrossEntropy(t *testing.T) {
	const G, c, dl = 37, 4, 0.7
	rng := rand.New(rand.NewPCG(10, 11))
	logits := kerntest.Randn(rng, G*c, 3)
	y := make([]int32, G)
	for i := range y {
		y[i] = int32(rng.IntN(c))
	}
	dz := make([]float32, G*c)
	loss := kernels.CrossEntropy(dz, float64(float32(dl)), logits, y, G, c) // the op passes its float32 output gradient
	part, kdz, kloss := make([]float64, G), make([]float32, G*c), make([]float32, 1)
	launch(t, "spn_cross_entropy", cover(G, 8), 8, part, kdz, logits, y, []float32{dl}, G, c)
	launch(t, "spn_mean_loss", 1, 4, kloss, part, G)
	near(t, "loss", kloss, []float32{float32(loss)}, 0, expTol)
	near(t, "dlogits", kdz, dz, 1e-12, expTol)
	// Without an output gradient only the loss is computed.
	part2 := make([]float64, G)
	launch(t, "spn_cross_entropy", cover(G, 8), 8, part2, []float32(nil), logits, y, []float32(nil), G, c)
	for i := range part {
		if part[i] != part2[i] {
			t.Fatalf("part[%d] %v without the gradient, %v with", i, part2[i], part[i])
		}
	}
}

// TestAdam runs three steps of models/param.Adam and of the kernel on the
// same gradients: a decayed parameter, one without decay and a frozen one.
func TestAdam(t *testing.T) {
	ps := []*param.Param{param.NewParam("w", 40), param.NewParam("b", 3), param.NewParam("eps", 1)}
	ps[1].NoDecay, ps[2].Frozen = true, true
	rng := rand.New(rand.NewPCG(12, 13))
	for _, p := range ps {
		copy(p.W, kerntest.Randn(rng, len(p.W), 1))
	}
	opt := param.NewAdam(ps, 0.01, 0.05)
	type state struct{ w, g, m, v []float32 }
	ks := make([]state, len(ps))
	for i, p := range ps {
		ks[i] = state{append([]float32(nil), p.W...), make([]float32, len(p.W)), make([]float32, len(p.W)), make([]float32, len(p.W))}
	}
	for step := 1; step <= 3; step++ {
		for i, p := range ps {
			copy(p.G, kerntest.Randn(rng, len(p.G), 1))
			copy(ks[i].g, p.G)
		}
		opt.Step()
		bc1, bc2 := 1-math.Pow(opt.Beta1, float64(step)), 1-math.Pow(opt.Beta2, float64(step))
		for i, p := range ps {
			s := ks[i]
			decay, frozen := 0, 0
			if !p.NoDecay {
				decay = 1
			}
			if p.Frozen {
				frozen = 1
			}
			n := len(s.w)
			launch(t, "spn_adam", cover(n, 16), 16, s.w, s.g, s.m, s.v, n, opt.LR, opt.Beta1, opt.Beta2, opt.Eps, opt.WeightDecay, bc1, bc2, decay, frozen)
			equalBits(t, p.Name, s.w, p.W)
			equalBits(t, p.Name+" gradient", s.g, p.G)
		}
	}
}

// uniform is the dropout kernel's generator (dropout.cu), written again:
// SplitMix64's output function over (seed, step, j).
func uniform(seed, step, j uint64) float64 {
	mix := func(z uint64) uint64 {
		z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
		z = (z ^ z>>27) * 0x94d049bb133111eb
		return z ^ z>>31
	}
	const golden = 0x9e3779b97f4a7c15
	key := mix(seed + golden*(step+1))
	return float64(mix(key+golden*(j+1))>>11) / (1 << 53)
}

// TestDropout checks the mask against the generator, its keep rate, that
// it depends on the step and not on the launch, and the masking product.
func TestDropout(t *testing.T) {
	const n, p = 20000, 0.25
	const seed = 0x5eed
	scale := float32(1 / (1 - p))
	masks := map[uint64][]float32{}
	for _, step := range []uint64{0, 1} {
		mask := make([]float32, n)
		launch(t, "spn_dropout_mask", cover(n, 128), 128, mask, n, uint64(seed), step, p, scale)
		kept := 0
		for j, v := range mask {
			want := float32(0)
			if uniform(seed, step, uint64(j)) >= p {
				want = scale
				kept++
			}
			if v != want {
				t.Fatalf("step %d: mask[%d] = %v, want %v", step, j, v, want)
			}
		}
		if r := float64(kept) / n; math.Abs(r-(1-p)) > 0.015 {
			t.Errorf("step %d keeps %.3f of the values, want %.2f", step, r, 1-p)
		}
		masks[step] = mask
	}
	other := make([]float32, n)
	launch(t, "spn_dropout_mask", cover(n, 7), 7, other, n, uint64(seed), uint64(1), p, scale)
	equalBits(t, "mask (another launch)", other, masks[1])
	same := 0
	for j := range masks[0] {
		if masks[0][j] == masks[1][j] {
			same++
		}
	}
	if same > n*7/10 { // independent masks agree on (1−p)² + p² = 62.5 %
		t.Errorf("the masks of steps 0 and 1 agree on %d of %d values", same, n)
	}
	rng := rand.New(rand.NewPCG(14, 15))
	x := kerntest.Randn(rng, n, 1)
	y, want := make([]float32, n), make([]float32, n)
	launch(t, "spn_mul", cover(n, 128), 128, y, x, masks[0], n)
	for i := range want {
		want[i] = x[i] * masks[0][i]
	}
	equalBits(t, "x⊙mask", y, want)
}

// TestSquaredError compares the mean squared error and its gradient with
// kernels.MSE, bit for bit (the same operations in the same order):
// every target labelled, some missing (NaN: part and gradient 0, the
// mean over the labelled ones), and none labelled (loss 0).
func TestSquaredError(t *testing.T) {
	const n, dl = 300, 0.3
	for _, c := range []struct {
		name    string
		missing func(i int) bool
	}{
		{"labelled", func(int) bool { return false }},
		{"some missing", func(i int) bool { return i%3 == 1 }},
		{"none labelled", func(int) bool { return true }},
	} {
		t.Run(c.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(16, 17))
			pred := kerntest.Randn(rng, n, 1)
			target := make([]float64, n)
			labelled := 0
			for i := range target {
				target[i] = rng.NormFloat64()
				if c.missing(i) {
					target[i] = math.NaN()
				} else {
					labelled++
				}
			}
			dz := make([]float32, n)
			loss := kernels.MSE(dz, float64(float32(dl)), pred, target) // the op passes its float32 output gradient
			part, kdz, kloss := make([]float64, n), make([]float32, n), make([]float32, 1)
			for i := range kdz {
				kdz[i] = 9 // every value must be written
			}
			launch(t, "spn_squared_error", cover(n, 32), 32, part, kdz, pred, target, []float32{dl}, n, labelled)
			launch(t, "spn_bce_loss", 1, 1, kloss, part, n, labelled)
			equalBits(t, "loss", kloss, []float32{float32(loss)})
			equalBits(t, "dpred", kdz, dz)
			if math.IsNaN(float64(kloss[0])) || (labelled == 0 && kloss[0] != 0) {
				t.Fatalf("loss %v with %d of %d values labelled", kloss[0], labelled, n)
			}
			if labelled == n {
				// Without a missing label the masked mean is the plain one.
				launch(t, "spn_mean_loss", 1, 1, kloss, part, n)
				equalBits(t, "loss (plain mean)", kloss, []float32{float32(loss)})
			}
		})
	}
}

// TestBCE compares the multi-task binary cross-entropy with missing
// labels and its gradient with kernels.BCEWithLogits and the CPU op's
// scaling by the output gradient: the loss within expTol (the C
// library's exp and log1p against Go's), the gradient too, zero at the
// missing labels; with no labelled entry the loss is 0.
func TestBCE(t *testing.T) {
	const m = 300
	const dl = float32(0.7)
	rng := rand.New(rand.NewPCG(18, 19))
	z := kerntest.Randn(rng, m, 3)
	y := make([]float64, m)
	for i := range y {
		switch rng.IntN(3) {
		case 0:
			y[i] = math.NaN()
		case 1:
			y[i] = 1
		}
	}
	dz := make([]float32, m)
	loss, labelled := kernels.BCEWithLogits(dz, z, y)
	if labelled == 0 || labelled == m {
		t.Fatalf("%d of %d entries labelled: want some missing", labelled, m)
	}
	for i := range dz {
		dz[i] *= dl
	}
	part, kdz, kloss := make([]float64, m), make([]float32, m), make([]float32, 1)
	launch(t, "spn_bce", cover(m, 32), 32, part, kdz, z, y, []float32{dl}, m, labelled)
	launch(t, "spn_bce_loss", 1, 4, kloss, part, m, labelled)
	near(t, "loss", kloss, []float32{float32(loss)}, 0, expTol)
	near(t, "dz", kdz, dz, 1e-12, expTol)
	for i, v := range y {
		if math.IsNaN(v) && kdz[i] != 0 {
			t.Fatalf("dz[%d] = %v at a missing label", i, kdz[i])
		}
	}
	// Without an output gradient only the loss is computed.
	part2 := make([]float64, m)
	launch(t, "spn_bce", cover(m, 32), 32, part2, []float32(nil), z, y, []float32(nil), m, labelled)
	for i := range part {
		if part[i] != part2[i] {
			t.Fatalf("part[%d] %v without the gradient, %v with", i, part2[i], part[i])
		}
	}
	// No labelled entry: loss 0.
	for i := range y {
		y[i] = math.NaN()
	}
	launch(t, "spn_bce", cover(m, 32), 32, part, kdz, z, y, []float32{dl}, m, 0)
	launch(t, "spn_bce_loss", 1, 4, kloss, part, m, 0)
	if kloss[0] != 0 {
		t.Fatalf("loss %v with no labelled entry, want 0", kloss[0])
	}
}

// TestBlocks: spn_blocks moves the real rows of m blocks between the
// interleaved n×(m·d) layout and the stacked one (m blocks of N rows),
// both ways, leaving the stacked padding rows and everything past the
// values alone.
func TestBlocks(t *testing.T) {
	const n, N, d, m = 5, 7, 3, 4
	inter := make([]float32, n*m*d)
	for i := range inter {
		inter[i] = float32(i) + 0.5
	}
	const pad = -9
	stacked := make([]float32, m*N*d+1)
	for i := range stacked {
		stacked[i] = pad
	}
	launch(t, "spn_blocks", cover(n*m*d, 4), 4, stacked, inter, n, N, d, m, 1)
	want := make([]float32, m*N*d+1)
	for i := range want {
		want[i] = pad
	}
	for r := 0; r < n; r++ {
		for b := 0; b < m; b++ {
			for c := 0; c < d; c++ {
				want[(b*N+r)*d+c] = inter[r*m*d+b*d+c]
			}
		}
	}
	equalBits(t, "stacked", stacked, want)
	back := make([]float32, n*m*d+1)
	back[n*m*d] = pad
	launch(t, "spn_blocks", cover(n*m*d, 4), 4, back, stacked, n, N, d, m, 0)
	equalBits(t, "interleaved", back, append(append([]float32(nil), inter...), pad))
}

// TestSumBlocks: spn_sum_blocks adds m blocks in block order, as a
// float32 loop from block 0 does (bits that depend on the order: large
// and small values mixed), -0 in every block staying -0.
func TestSumBlocks(t *testing.T) {
	const n, m = 5, 4
	x := []float32{
		1e8, 0, 3, 0.1, 7, // x[1] is made -0 below
		1, 0, -3, 0.2, 1e-3,
		-1e8, 0, 5, 0.3, 2,
		0.5, 0, 1e-7, 0.4, -9,
	}
	x[1] = float32(math.Copysign(0, -1))
	for b := 1; b < m; b++ {
		x[b*n+1] = float32(math.Copysign(0, -1))
	}
	y := make([]float32, n+1)
	y[n] = 42
	launch(t, "spn_sum_blocks", cover(n, 2), 2, y, x, n, m)
	want := make([]float32, n+1)
	want[n] = 42
	for i := 0; i < n; i++ {
		acc := x[i]
		for b := 1; b < m; b++ {
			acc += x[b*n+i]
		}
		want[i] = acc
	}
	equalBits(t, "y", y, want)
	if math.Signbit(float64(y[1])) != true {
		t.Errorf("-0 + -0 + … = %v, want -0", y[1])
	}
}

// TestReadoutSum: spn_readout_sum adds the readouts' (z_t + b_t)·m_t in
// order, from the first readout's value (first) or onto y's, with the
// bits of spn_bias_relu's sum, spn_mul's product and float sums in
// order; without masks it takes no product; the readouts past count and
// y's values past len are left alone.
func TestReadoutSum(t *testing.T) {
	const n, c, count = 5, 3, 3
	const size = n * c
	rng := rand.New(rand.NewPCG(30, 31))
	z := kerntest.Randn(rng, (count+1)*size, 1) // one readout's products more than count
	bs := make([][]float32, kern.ReadoutGroup)
	ms := make([][]float32, kern.ReadoutGroup)
	for j := range bs {
		bs[j] = kerntest.Randn(rng, c, 1)
		ms[j] = kerntest.Randn(rng, size, 1)
	}
	y0 := kerntest.Randn(rng, size+2, 1) // two values past len
	for _, masked := range []bool{true, false} {
		for _, first := range []int{1, 0} {
			want := append([]float32(nil), y0...)
			for i := 0; i < size; i++ {
				acc := want[i]
				for tt := 0; tt < count; tt++ {
					r := z[tt*size+i] + bs[tt][i%c]
					if masked {
						r *= ms[tt][i]
					}
					if first == 1 && tt == 0 {
						acc = r
					} else {
						acc += r
					}
				}
				want[i] = acc
			}
			args := []any{append([]float32(nil), y0...), z}
			for _, b := range bs {
				args = append(args, b)
			}
			for _, m := range ms {
				if !masked {
					m = nil
				}
				args = append(args, m)
			}
			args = append(args, count, size, c, first)
			for _, block := range []int{4, 64} {
				y := append([]float32(nil), y0...)
				args[0] = y
				launch(t, "spn_readout_sum", cover(size, block), block, args...)
				equalBits(t, fmt.Sprintf("y (masked %v, first %d, blocks of %d)", masked, first, block), y, want)
			}
		}
	}
}

// TestReadoutMasks: spn_readout_masks sets dr_t = dy ⊙ m_t for t < count
// (spn_mul's bits) and leaves what follows alone.
func TestReadoutMasks(t *testing.T) {
	const size, count = 7, 3
	rng := rand.New(rand.NewPCG(32, 33))
	dy := kerntest.Randn(rng, size, 1)
	args := []any{nil, dy}
	ms := make([][]float32, kern.ReadoutGroup)
	for j := range ms {
		ms[j] = kerntest.Randn(rng, size, 1)
		args = append(args, ms[j])
	}
	args = append(args, count, size)
	want := make([]float32, (count+1)*size)
	for tt := 0; tt < count; tt++ {
		for i := 0; i < size; i++ {
			want[tt*size+i] = dy[i] * ms[tt][i]
		}
	}
	for _, block := range []int{5, 32} {
		dr := make([]float32, (count+1)*size)
		args[0] = dr
		launch(t, "spn_readout_masks", cover(count*size, block), block, args...)
		equalBits(t, fmt.Sprintf("dr (blocks of %d)", block), dr, want)
	}
}

// TestReadoutProduct: spn_readout_product's z_t = p_t·W_t and
// spn_readout_product_backward's dp_t = dr_t·W_tᵀ and dW_t = p_tᵀ·dr_t
// for three readouts of a group of eight, with stacked output gradients
// and one for every readout (stride 0): each value a float sum in index
// order, the same bits as the loops here; no value past the readouts'
// is written.
func TestReadoutProduct(t *testing.T) {
	const n, d, c, count = 5, 7, 3, 3
	rng := rand.New(rand.NewPCG(36, 37))
	p := kerntest.Randn(rng, count*n*d, 1)
	ws := make([][]float32, kern.ReadoutGroup)
	for k := range ws {
		ws[k] = kerntest.Randn(rng, d*c, 1)
	}
	wantZ := make([]float32, (count+1)*n*c)
	for tt := 0; tt < count; tt++ {
		for g := 0; g < n; g++ {
			for k := 0; k < c; k++ {
				var s float32
				for j := 0; j < d; j++ {
					s += p[(tt*n+g)*d+j] * ws[tt][j*c+k]
				}
				wantZ[(tt*n+g)*c+k] = s
			}
		}
	}
	z := make([]float32, (count+1)*n*c)
	launch(t, "spn_readout_product", cover(count*n*c, 8), 8, append(append([]any{z, p}, group(ws)...), count, n, d, c)...)
	equalBits(t, "z", z, wantZ)

	dr := kerntest.Randn(rng, count*n*c, 1)
	for _, stride := range []int{n * c, 0} {
		wantP := make([]float32, (count+1)*n*d)
		wantW := make([][]float32, count)
		for tt := 0; tt < count; tt++ {
			wantW[tt] = make([]float32, d*c+1)
			for g := 0; g < n; g++ {
				for j := 0; j < d; j++ {
					var s float32
					for k := 0; k < c; k++ {
						s += dr[tt*stride+g*c+k] * ws[tt][j*c+k]
					}
					wantP[(tt*n+g)*d+j] = s
				}
			}
			for j := 0; j < d; j++ {
				for k := 0; k < c; k++ {
					var s float32
					for g := 0; g < n; g++ {
						s += p[(tt*n+g)*d+j] * dr[tt*stride+g*c+k]
					}
					wantW[tt][j*c+k] = s
				}
			}
		}
		dp := make([]float32, (count+1)*n*d)
		dws := make([][]float32, count)
		for k := range dws {
			dws[k] = make([]float32, d*c+1) // one value past dW_t
		}
		args := append(append([]any{dp}, group(dws)...), p)
		args = append(append(args, group(ws)...), dr, count, n, d, c, stride)
		launch(t, "spn_readout_product_backward", cover(count*(n*d+d*c), 8), 8, args...)
		equalBits(t, fmt.Sprintf("dp (stride %d)", stride), dp, wantP)
		for k := range dws {
			equalBits(t, fmt.Sprintf("dW_%d (stride %d)", k, stride), dws[k], wantW[k])
		}
	}
}

// TestReadoutBias: spn_readout_bias adds each block's column sums (rows
// in order, float) to its db_k, spn_col_part's bits for one chunk, with
// stacked blocks and with one block for every k (stride 0).
func TestReadoutBias(t *testing.T) {
	const n, c, count = 37, 3, 3
	rng := rand.New(rand.NewPCG(34, 35))
	dr := kerntest.Randn(rng, count*n*c, 1)
	for _, stride := range []int{n * c, 0} {
		dbs, want := make([][]float32, count), make([][]float32, count)
		for k := range dbs {
			dbs[k] = kerntest.Randn(rng, c, 1)
			want[k] = append([]float32(nil), dbs[k]...)
			for j := 0; j < c; j++ {
				p := float32(0)
				for r := 0; r < n; r++ {
					p += dr[k*stride+r*c+j]
				}
				want[k][j] += p
			}
			// spn_col_part's bits for the same block.
			one := append([]float32(nil), dbs[k]...)
			launch(t, "spn_col_part", cover(c, 4), 4, one, []float32(nil), dr[k*stride:k*stride+n*c], n, c)
			equalBits(t, fmt.Sprintf("spn_col_part, block %d", k), one, want[k])
		}
		args := append(group(dbs), dr, count, n, c, stride)
		launch(t, "spn_readout_bias", cover(count*c, 4), 4, args...)
		for k := range dbs {
			equalBits(t, fmt.Sprintf("db_%d (stride %d)", k, stride), dbs[k], want[k])
		}
	}
}

// TestLayerNorm runs the layer norm's kernels (spn_layer_norm, its
// backward pass, the chunk partials of dγ and dβ and their totals) over
// three chunks of rows and over one, with blocks of two sizes, and
// compares them with rt's layer-norm op on the CPU: the same bits (the
// row statistics and the column sums in double, in the CPU's order).
func TestLayerNorm(t *testing.T) {
	const d = 7
	for _, n := range []int{300, 5} {
		rng := rand.New(rand.NewPCG(40, uint64(n)))
		x, dy := kerntest.Randn(rng, n*d, 2), kerntest.Randn(rng, n*d, 1)
		for i := range x {
			x[i] += float32(i % 3) // rows of different means
		}
		g, b := kerntest.Randn(rng, d, 1), kerntest.Randn(rng, d, 0.5)
		cpu := rt.NewLayerNorm("ln", rt.Env{Backend: kernels.CPU{Threads: 2}}, &rt.BatchData{N: n}, false, n, d)
		y := make([]float32, n*d)
		if err := cpu.Forward([][]float32{x, g, b}, y); err != nil {
			t.Fatal(err)
		}
		dx, dg, db := make([]float32, n*d), make([]float32, d), make([]float32, d)
		if err := cpu.Backward([][]float32{x, g, b}, y, dy, [][]float32{dx, dg, db}); err != nil {
			t.Fatal(err)
		}
		nc := kernels.NumChunks(n)
		for _, block := range []int{3, 64} {
			what := fmt.Sprintf("n = %d, blocks of %d", n, block)
			ky, stats := make([]float32, n*d), make([]float64, 2*n)
			launch(t, "spn_layer_norm", cover(n, block), block, ky, stats, x, g, b, n, d, rt.LayerNormEps)
			equalBits(t, what+": y", ky, y)
			kdx := make([]float32, n*d)
			launch(t, "spn_layer_norm_backward", cover(n, block), block, kdx, dy, x, stats, g, n, d)
			equalBits(t, what+": dx", kdx, dx)
			part := make([]float64, 2*nc*d)
			launch(t, "spn_layer_norm_part", cover(nc*d, block), block, part, dy, x, stats, n, d)
			kdg, kdb := make([]float32, d), make([]float32, d)
			launch(t, "spn_layer_norm_params", cover(d, block), block, kdg, kdb, part, nc, d)
			equalBits(t, what+": dγ", kdg, dg)
			equalBits(t, what+": dβ", kdb, db)
		}
	}
}
