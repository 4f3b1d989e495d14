package cuda_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/spn-project/spn/internal/testkit/kerntest"
	"github.com/spn-project/spn/models/cuda"
	"github.com/spn-project/spn/models/cuda/kern"
	"github.com/spn-project/spn/models/internal/testkit/hopcase"
	"github.com/spn-project/spn/models/kernels"
	"github.com/spn-project/spn/models/param"
)

// The device tests: one body (exercise) runs on the emulated device
// (TestEmulatedDevice) and on a real GPU (TestGPUDevice). Each part
// uploads inputs, launches kernels through the typed launcher, downloads
// the results and compares them with the CPU code, with the tolerances of
// models/cuda/kern's emulation test:
//
//   - bit for bit where the kernel follows the CPU's order of operations
//     (compiled without fused multiply-add);
//   - dα and dε within dotTol·Σ|products| (the CPU adds float32 partial
//     dot products, the kernel double ones);
//   - softmax and cross-entropy within expTol relative (the C library's or
//     CUDA's exp and log against Go's);
//   - matrix products within gemmTol·Σ_l|a_il·b_lj| (cuBLAS and the CPU's
//     GEMM add in different orders).
const (
	dotTol  = 1e-6
	expTol  = 1e-6
	gemmTol = 1e-5
)

// dev is a context with the kernels' module loaded, for one test.
type dev struct {
	t    *testing.T
	ctx  *cuda.Context
	mod  *cuda.Module
	blas *cuda.BLAS
	ks   map[string]*cuda.Kernel
}

// up uploads x (float32, float64 or int32 values) to a new buffer.
func up[T cuda.Elem](d *dev, x []T) *cuda.Buffer {
	d.t.Helper()
	b, err := cuda.NewBuffer(d.ctx, x)
	if err != nil {
		d.t.Fatal(err)
	}
	return b
}

// out allocates a buffer of n values of T.
func out[T cuda.Elem](d *dev, n int) *cuda.Buffer {
	d.t.Helper()
	b, err := cuda.Alloc[T](d.ctx, n)
	if err != nil {
		d.t.Fatal(err)
	}
	return b
}

// get downloads b.
func get[T cuda.Elem](d *dev, b *cuda.Buffer) []T {
	d.t.Helper()
	x := make([]T, b.Len())
	if err := cuda.Download(x, b); err != nil {
		d.t.Fatal(err)
	}
	return x
}

// launch launches the kernel name over grid blocks of block threads.
func (d *dev) launch(name string, grid, block int, args ...any) {
	d.t.Helper()
	k, ok := d.ks[name]
	if !ok {
		var err error
		if k, err = d.mod.Kernel(name); err != nil {
			d.t.Fatal(err)
		}
		d.ks[name] = k
	}
	if err := k.Launch(grid, block, args...); err != nil {
		d.t.Fatal(err)
	}
}

// cover returns a grid of blocks of block threads covering n threads, with
// one block more than needed, so that every kernel's bound check runs.
func cover(n, block int) int { return (n+block-1)/block + 1 }

// exercise runs every part on the context ctx with the kernels' PTX.
func exercise(t *testing.T, ctx *cuda.Context, ptx []byte) {
	mod, err := ctx.LoadModule(ptx)
	if err != nil {
		t.Fatal(err)
	}
	blas, err := ctx.NewBLAS()
	if err != nil {
		t.Fatal(err)
	}
	for _, part := range []struct {
		name string
		run  func(*dev)
	}{
		{"HopAggregate", hopAggregate},
		{"BiasReLU", biasReLU},
		{"BatchNorm", batchNorm},
		{"Pool", pool},
		{"CrossEntropy", crossEntropy},
		{"Adam", adam},
		{"Sgemm", sgemm},
		{"SgemmStridedBatched", sgemmBatched},
	} {
		t.Run(part.name, func(t *testing.T) {
			part.run(&dev{t: t, ctx: ctx, mod: mod, blas: blas, ks: map[string]*cuda.Kernel{}})
		})
	}
	if err := ctx.Synchronize(); err != nil {
		t.Fatal(err)
	}
	if err := blas.Destroy(); err != nil {
		t.Fatal(err)
	}
	if err := mod.Unload(); err != nil {
		t.Fatal(err)
	}
}

// hopAggregate: the SPN aggregation with its hop sums, its input gradient
// (the same gather over the transposed hop sets) and dα, dε, against
// models/nbop's HopCombine on a batch of layered graphs (k = 4, more than one
// chunk of rows).
func hopAggregate(d *dev) {
	t := d.t
	const k, w = 4, 7
	c := hopcase.New(t, k, w)
	n, H, dy, grad := c.N, c.H, c.DY, c.Grad
	ptr, idx, err := kern.PackHops(c.B.Hop[:k], n)
	if err != nil {
		t.Fatal(err)
	}
	ptrT, idxT, err := kern.PackHops(c.Transposed(), n)
	if err != nil {
		t.Fatal(err)
	}
	gH, gDy, gAlpha, gEps := up(d, H), up(d, dy), up(d, c.Alpha), up(d, c.Eps)
	gY, gSums := out[float32](d, n*w), out[float32](d, k*n*w)
	d.launch("spn_hop_aggregate", cover(n*w, 64), 64, gY, gSums, gH, up(d, ptr), up(d, idx), gAlpha, gEps, k, n, w)
	kerntest.EqualBits(t, "y", get[float32](d, gY), c.Y)
	sk := get[float32](d, gSums)
	for i := range c.Sums {
		kerntest.EqualBits(t, "S_i", sk[i*n*w:(i+1)*n*w], c.Sums[i])
	}

	gDH := out[float32](d, n*w)
	d.launch("spn_hop_aggregate", cover(n*w, 64), 64, gDH, nil, gDy, up(d, ptrT), up(d, idxT), gAlpha, gEps, k, n, w)
	kerntest.EqualBits(t, "dH", get[float32](d, gDH), grad[0])

	// dα and dε: row dots, chunk partials, chunks in order.
	nc, M := kernels.NumChunks(n), k+1
	gRows, gPart, gDa, gDe := out[float64](d, n*M), out[float64](d, nc*M), out[float32](d, k), out[float32](d, 1)
	d.launch("spn_row_dots", cover(n*M, 64), 64, gRows, gDy, gSums, gH, k, nil, nil, 0, n, w)
	d.launch("spn_dot_chunks", cover(nc*M, 8), 8, gPart, gRows, M, n)
	d.launch("spn_sum_chunks", cover(M, 8), 8, gDa, gDe, gPart, nc, M, 0, M, k)
	da := get[float32](d, gDa)
	for i := 0; i < k; i++ {
		kerntest.Near(t, "dα", da[i:i+1], grad[1][i:i+1], dotTol*kerntest.AbsDot(dy, sk[i*n*w:(i+1)*n*w]), 0)
	}
	kerntest.Near(t, "dε", get[float32](d, gDe), grad[2], dotTol*kerntest.AbsDot(dy, H), 0)
}

// biasReLU: y = ReLU(x + b) against Go's max, the ReLU mask against
// kernels.ReLUMask and the bias gradient against the CPU GEMM's.
func biasReLU(d *dev) {
	t := d.t
	const n, w = 300, 5
	rng := rand.New(rand.NewPCG(4, 5))
	x, b, dy := kerntest.Randn(rng, n*w, 1), kerntest.Randn(rng, w, 1), kerntest.Randn(rng, n*w, 1)
	x[3] = -b[3] // x + b = +0
	want := make([]float32, n*w)
	for i := range want {
		want[i] = max(x[i]+b[i%w], 0)
	}
	gY := out[float32](d, n*w)
	d.launch("spn_bias_relu", cover(n*w, 32), 32, gY, up(d, x), up(d, b), n, w, 1)
	kerntest.EqualBits(t, "y", get[float32](d, gY), want)

	wantDz := make([]float32, n*w)
	kernels.ReLUMask(kernels.CPU{}, wantDz, want, dy, n, w)
	gDz := out[float32](d, n*w)
	d.launch("spn_relu_mask", cover(n*w, 32), 32, gDz, gY, up(d, dy), n*w)
	kerntest.EqualBits(t, "dz", get[float32](d, gDz), wantDz)

	db0 := kerntest.Randn(rng, w, 1)
	wantDb := append([]float32(nil), db0...)
	kernels.CPU{Threads: 2}.MatMulAT([]float32{}, wantDb, []float32{}, wantDz, kernels.MatMulShape{N: n, In: 0, Out: w})
	nc := kernels.NumChunks(n)
	gDb, gPart := up(d, db0), out[float32](d, nc*w)
	d.launch("spn_col_part", cover(nc*w, 4), 4, gDb, gPart, gDz, n, w)
	d.launch("spn_col_sums", cover(w, 4), 4, gDb, gPart, nc, w)
	kerntest.EqualBits(t, "db", get[float32](d, gDb), wantDb)
}

// batchNorm: the training statistics with the running update and the
// batch norm + ReLU forward, against the CPU kernels models/rt's op is
// made of.
func batchNorm(d *dev) {
	t := d.t
	const n, w, momentum, eps = 300, 6, 0.1, 1e-5
	rng := rand.New(rand.NewPCG(6, 7))
	x := kerntest.Randn(rng, n*w, 2)
	for i := range x {
		x[i] += float32(i % w)
	}
	g, bt := kerntest.Randn(rng, w, 1), kerntest.Randn(rng, w, 0.5)
	runMean, runVar := make([]float64, w), make([]float64, w)
	for j := range runMean {
		runMean[j], runVar[j] = rng.NormFloat64(), 1+rng.Float64()
	}
	_, inv, xhat, y, wantMean, wantVar := kerntest.BNTrain(kerntest.BNCase{X: x, Gamma: g, Beta: bt, RunMean: runMean, RunVar: runVar, N: n, W: w, Momentum: momentum, Eps: eps})

	nc := kernels.NumChunks(n)
	gInv, gMean, gVar, gX := out[float32](d, w), up(d, runMean), up(d, runVar), up(d, x)
	gMsum, gVsum := out[float64](d, nc*w), out[float64](d, nc*w)
	d.launch("spn_bn_part", cover(nc*w, 4), 4, gMsum, nil, gX, nil, n, w)
	d.launch("spn_bn_part", cover(nc*w, 4), 4, gVsum, gMsum, gX, nil, n, w)
	gXhat, gY := out[float32](d, n*w), out[float32](d, n*w)
	d.launch("spn_bn_relu_train", cover(n*w, 32), 32, gXhat, gY, gInv, gMean, gVar, gX, nil, gMsum, gVsum, up(d, g), up(d, bt), n, w, momentum, eps, 1)
	kerntest.EqualBits(t, "inv", get[float32](d, gInv), inv)
	kMean, kVar := get[float64](d, gMean), get[float64](d, gVar)
	for j := range kMean {
		if kMean[j] != wantMean[j] || kVar[j] != wantVar[j] {
			t.Fatalf("running statistics [%d] = %v, %v; CPU %v, %v", j, kMean[j], kVar[j], wantMean[j], wantVar[j])
		}
	}
	kerntest.EqualBits(t, "x̂", get[float32](d, gXhat), xhat)
	kerntest.EqualBits(t, "y", get[float32](d, gY), y)
}

// pool: sum and mean pooling against kernels.RowSum and its 1/|g|
// scaling, on graphs with an empty one and padding rows after the last.
func pool(d *dev) {
	t := d.t
	const w, N = 4, 150
	off := []int32{0, 3, 3, 10, 140, 141}
	G := len(off) - 1
	rng := rand.New(rand.NewPCG(8, 9))
	x := kerntest.Randn(rng, N*w, 1)
	gX, gOff := up(d, x), up(d, off)
	for mean := 0; mean <= 1; mean++ {
		y := make([]float32, G*w)
		for g := 0; g < G; g++ {
			a, b := int(off[g]), int(off[g+1])
			if a == b {
				continue
			}
			kernels.RowSum(y[g*w:(g+1)*w], x[a*w:b*w], b-a, w)
			if mean == 1 {
				scale := 1 / float32(b-a)
				for j := 0; j < w; j++ {
					y[g*w+j] *= scale
				}
			}
		}
		gY := out[float32](d, G*w)
		none := (*cuda.Buffer)(nil) // the pooling of one tensor: x_1..x_7 unused
		d.launch("spn_pool", cover(G*w, 8), 8, gY, gX, none, none, none, none, none, none, none, gOff, G, w, mean, 1)
		kerntest.EqualBits(t, "pool", get[float32](d, gY), y)
	}
}

// crossEntropy: the loss and its gradient against kernels.CrossEntropy.
func crossEntropy(d *dev) {
	t := d.t
	const G, c, dl = 37, 4, 0.7
	rng := rand.New(rand.NewPCG(10, 11))
	logits := kerntest.Randn(rng, G*c, 3)
	y := make([]int32, G)
	for i := range y {
		y[i] = int32(rng.IntN(c))
	}
	dz := make([]float32, G*c)
	loss := kernels.CrossEntropy(dz, float64(float32(dl)), logits, y, G, c)
	gPart, gDz, gLoss := out[float64](d, G), out[float32](d, G*c), out[float32](d, 1)
	d.launch("spn_cross_entropy", cover(G, 8), 8, gPart, gDz, up(d, logits), up(d, y), up(d, []float32{dl}), G, c)
	d.launch("spn_mean_loss", 1, 4, gLoss, gPart, G)
	kerntest.Near(t, "loss", get[float32](d, gLoss), []float32{float32(loss)}, 0, expTol)
	kerntest.Near(t, "dlogits", get[float32](d, gDz), dz, 1e-12, expTol)
}

// adam: one step of models/param.Adam and of the kernel on the same
// gradients, for a decayed parameter, one without decay and a frozen one.
func adam(d *dev) {
	t := d.t
	ps := []*param.Param{param.NewParam("w", 40), param.NewParam("b", 3), param.NewParam("eps", 1)}
	ps[1].NoDecay, ps[2].Frozen = true, true
	rng := rand.New(rand.NewPCG(12, 13))
	type state struct{ w, g, m, v *cuda.Buffer }
	ks := make([]state, len(ps))
	for i, p := range ps {
		copy(p.W, kerntest.Randn(rng, len(p.W), 1))
		copy(p.G, kerntest.Randn(rng, len(p.G), 1))
		zero := make([]float32, len(p.W))
		ks[i] = state{up(d, p.W), up(d, p.G), up(d, zero), up(d, zero)}
	}
	opt := param.NewAdam(ps, 0.01, 0.05)
	opt.Step()
	bc1, bc2 := 1-opt.Beta1, 1-opt.Beta2 // step 1
	for i, p := range ps {
		decay, frozen := 1, 0
		if p.NoDecay {
			decay = 0
		}
		if p.Frozen {
			frozen = 1
		}
		n := len(p.W)
		s := ks[i]
		d.launch("spn_adam", cover(n, 16), 16, s.w, s.g, s.m, s.v, n, opt.LR, opt.Beta1, opt.Beta2, opt.Eps, opt.WeightDecay, bc1, bc2, decay, frozen)
		kerntest.EqualBits(t, p.Name, get[float32](d, s.w), p.W)
		kerntest.EqualBits(t, p.Name+" gradient", get[float32](d, s.g), p.G)
	}
}

// sgemm: the row-major wrapper in its four transposition cases against
// the CPU's GEMMs (kernels.CPU's MatMul, MatMulBT and MatMulAT) and, for
// both transposed, a float64 loop.
func sgemm(d *dev) {
	t := d.t
	const m, k, n = 150, 37, 9
	rng := rand.New(rand.NewPCG(18, 19))
	be := kernels.CPU{Threads: 2}
	// bound[i·n+j] = Σ_l |op(A)[i,l]·op(B)[l,j]|, for the tolerance.
	check := func(what string, got, want []float32, opA, opB func(i, l int) float32, rows, cols int) {
		t.Helper()
		for i := 0; i < rows; i++ {
			for j := 0; j < cols; j++ {
				var bound float64
				for l := 0; l < k; l++ {
					bound += math.Abs(float64(opA(i, l)) * float64(opB(l, j)))
				}
				kerntest.Near(t, what, got[i*cols+j:i*cols+j+1], want[i*cols+j:i*cols+j+1], gemmTol*bound, 0)
			}
		}
	}
	gemm := func(transA, transB bool, rows, cols int, alpha float32, A, B []float32, beta float32, C []float32) []float32 {
		t.Helper()
		gC := up(d, C)
		if err := d.blas.Sgemm(transA, transB, rows, cols, k, alpha, up(d, A), up(d, B), beta, gC); err != nil {
			t.Fatal(err)
		}
		return get[float32](d, gC)
	}

	// y = x·w (m×k by k×n), over a C of NaNs: beta = 0 does not read C.
	x, w := kerntest.Randn(rng, m*k, 1), kerntest.Randn(rng, k*n, 1)
	nan := make([]float32, m*n)
	for i := range nan {
		nan[i] = float32(math.NaN())
	}
	y := make([]float32, m*n)
	be.MatMul(y, x, w, nil, kernels.MatMulShape{N: m, In: k, Out: n})
	xw := gemm(false, false, m, n, 1, x, w, 0, nan)
	check("x·w", xw, y,
		func(i, l int) float32 { return x[i*k+l] }, func(l, j int) float32 { return w[l*n+j] }, m, n)
	kerntest.EqualBits(t, "x·w again (cuBLAS is deterministic on one device)", gemm(false, false, m, n, 1, x, w, 0, nan), xw)

	// dx = dy·wᵀ (dy m×k, w n×k).
	dy, w2 := kerntest.Randn(rng, m*k, 1), kerntest.Randn(rng, n*k, 1)
	dx := make([]float32, m*n)
	be.MatMulBT(dx, dy, w2, kernels.MatMulShape{N: m, In: n, Out: k})
	check("dy·wᵀ", gemm(false, true, m, n, 1, dy, w2, 0, make([]float32, m*n)), dx,
		func(i, l int) float32 { return dy[i*k+l] }, func(l, j int) float32 { return w2[j*k+l] }, m, n)

	// dw += xᵀ·dy (x k×m, dy k×n): beta = 1 accumulates.
	x3, dy3, dw0 := kerntest.Randn(rng, k*m, 1), kerntest.Randn(rng, k*n, 1), kerntest.Randn(rng, m*n, 1)
	dw := append([]float32(nil), dw0...)
	be.MatMulAT(dw, nil, x3, dy3, kernels.MatMulShape{N: k, In: m, Out: n})
	check("dw + xᵀ·dy", gemm(true, false, m, n, 1, x3, dy3, 1, dw0), dw,
		func(i, l int) float32 { return x3[l*m+i] }, func(l, j int) float32 { return dy3[l*n+j] }, m, n)

	// C = 0.5·Aᵀ·Bᵀ − 2·C (A k×m, B n×k).
	a4, b4, c4 := kerntest.Randn(rng, k*m, 1), kerntest.Randn(rng, n*k, 1), kerntest.Randn(rng, m*n, 1)
	want := make([]float32, m*n)
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			var s float64
			for l := 0; l < k; l++ {
				s += float64(a4[l*m+i]) * float64(b4[j*k+l])
			}
			want[i*n+j] = float32(0.5*s - 2*float64(c4[i*n+j]))
		}
	}
	check("0.5·Aᵀ·Bᵀ − 2·C", gemm(true, true, m, n, 0.5, a4, b4, -2, c4), want,
		func(i, l int) float32 { return a4[l*m+i] }, func(l, j int) float32 { return b4[j*k+l] }, m, n)
}
