package cuda_test

import (
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/spn-project/spn/internal/testkit/kerntest"
	"github.com/spn-project/spn/models/cuda"
)

// batched is one SgemmStridedBatched call: its arguments, and the
// offsets of A's and C's views (Buffer.Slice) into larger buffers.
type batched struct {
	name           string
	transA, transB bool
	m, n, k        int
	alpha, beta    float32
	lda, strideA   int
	ldb, strideB   int
	ldc, strideC   int
	batch          int
	offA, offC     int
}

// stored returns the rows and columns of the stored A, B and C.
func (c batched) stored() (ar, ac, br, bc, cr, cc int) {
	ar, ac, br, bc = c.m, c.k, c.k, c.n
	if c.transA {
		ar, ac = c.k, c.m
	}
	if c.transB {
		br, bc = c.n, c.k
	}
	return ar, ac, br, bc, c.m, c.n
}

// span is the number of values the products read from an operand: up to
// its last matrix's last value.
func span(batch, stride, rows, ld, cols int) int {
	if rows == 0 || cols == 0 {
		return 0
	}
	return (batch-1)*stride + (rows-1)*ld + cols
}

// lens returns the values the products read from A, B and C.
func (c batched) lens() (la, lb, lc int) {
	ar, ac, br, bc, cr, cc := c.stored()
	return span(c.batch, c.strideA, ar, c.lda, ac), span(c.batch, c.strideB, br, c.ldb, bc), span(c.batch, c.strideC, cr, c.ldc, cc)
}

// at returns where product p reads op(A)[i, l] in A and op(B)[l, j] in B.
func (c batched) at(p, i, j, l int) (ia, ib int) {
	ia, ib = p*c.strideA+i*c.lda+l, p*c.strideB+l*c.ldb+j
	if c.transA {
		ia = p*c.strideA + l*c.lda + i
	}
	if c.transB {
		ib = p*c.strideB + j*c.ldb + l
	}
	return ia, ib
}

// ref makes the products on the host as the emulated device does (a
// plain loop: the sum over l in order in float32, then alpha·s, plus
// beta·c unless beta is 0), writing into the view C: the emulator's bits.
func (c batched) ref(A, B, C []float32) {
	for p := 0; p < c.batch; p++ {
		for i := 0; i < c.m; i++ {
			for j := 0; j < c.n; j++ {
				var s float32
				for l := 0; l < c.k; l++ {
					ia, ib := c.at(p, i, j, l)
					a, b := A[ia], B[ib]
					s += float32(a * b) // rounded: no fused multiply-add
				}
				v := &C[p*c.strideC+i*c.ldc+j]
				if c.beta == 0 {
					*v = c.alpha * s
				} else {
					*v = float32(c.alpha*s) + float32(c.beta**v)
				}
			}
		}
	}
}

// entry copies the rows×cols matrix of batch entry p out of the view x
// (rows ld apart, entries stride apart) into a dense one.
func entry(x []float32, p, stride, rows, ld, cols int) []float32 {
	y := make([]float32, 0, rows*cols)
	for r := 0; r < rows && cols > 0; r++ {
		y = append(y, x[p*stride+r*ld:][:cols]...)
	}
	return y
}

// pad is the number of values around each view in its buffer that the
// products must leave alone.
const pad = 3

// batchedCases are the calls TestEmulatedSgemmStridedBatched and the
// device tests make: the four transpositions on stacked matrices; rows
// longer than the matrices' (blocks of a wider matrix, with gaps between
// the entries); column block j of an N×(M·d) matrix times the j-th of M
// stacked d×d matrices (lda = M·d, strideA = d), and the two products of
// its gradient; one matrix for every entry (a stride of 0); beta = 1
// accumulating; one entry; no inner dimension (C = beta·C).
func batchedCases() []batched {
	const N, M, d = 6, 3, 4
	return []batched{
		{name: "NN", m: 3, n: 4, k: 5, alpha: 1, lda: 5, strideA: 15, ldb: 4, strideB: 20, ldc: 4, strideC: 12, batch: 3},
		{name: "TN", transA: true, m: 3, n: 4, k: 5, alpha: 1, lda: 3, strideA: 15, ldb: 4, strideB: 20, ldc: 4, strideC: 12, batch: 3},
		{name: "NT", transB: true, m: 3, n: 4, k: 5, alpha: 1, lda: 5, strideA: 15, ldb: 5, strideB: 20, ldc: 4, strideC: 12, batch: 3},
		{name: "TT", transA: true, transB: true, m: 3, n: 4, k: 5, alpha: -1.5, beta: 0.25, lda: 3, strideA: 15, ldb: 5, strideB: 20, ldc: 4, strideC: 12, batch: 3},
		{name: "NN wide rows", m: 3, n: 4, k: 5, alpha: 0.5, beta: -2, lda: 7, strideA: 23, ldb: 6, strideB: 25, ldc: 5, strideC: 16, batch: 3, offA: 3, offC: 2},
		{name: "TT wide rows", transA: true, transB: true, m: 3, n: 4, k: 5, alpha: 1, lda: 4, strideA: 21, ldb: 9, strideB: 40, ldc: 6, strideC: 19, batch: 2, offA: 1, offC: 5},
		{name: "column blocks", m: N, n: d, k: d, alpha: 1, lda: M * d, strideA: d, ldb: d, strideB: d * d, ldc: M * d, strideC: d, batch: M, offA: 5, offC: 1},
		{name: "column blocks, A transposed", transA: true, m: d, n: d, k: N, alpha: 1, lda: M * d, strideA: d, ldb: M * d, strideB: d, ldc: d, strideC: d * d, batch: M, offA: 2},
		{name: "column blocks, B transposed", transB: true, m: N, n: d, k: d, alpha: 1, lda: M * d, strideA: d, ldb: d, strideB: d * d, ldc: M * d, strideC: d, batch: M, offC: 3},
		{name: "one A", m: 5, n: 3, k: 4, alpha: 1, lda: 4, strideA: 0, ldb: 3, strideB: 12, ldc: 3, strideC: 15, batch: 4},
		{name: "one B, beta 1", transA: true, m: 5, n: 3, k: 4, alpha: 1, beta: 1, lda: 5, strideA: 20, ldb: 3, strideB: 0, ldc: 3, strideC: 15, batch: 4},
		{name: "one entry", m: 7, n: 5, k: 6, alpha: 1, lda: 6, ldb: 5, ldc: 5, batch: 1},
		{name: "k 0", m: 2, n: 3, k: 0, alpha: 1, beta: 2, lda: 1, strideA: 0, ldb: 3, strideB: 0, ldc: 3, strideC: 6, batch: 2},
	}
}

// runBatched makes the call c on the device d, from random A and B and a
// random C (NaN where beta = 0: not read), and returns the host's copies
// of the views A, B, C (before) and of C's whole buffer after the call,
// with the count of products it made.
func runBatched(d *dev, rng *rand.Rand, c batched) (A, B, C0, got []float32, gemms int) {
	t := d.t
	t.Helper()
	la, lb, lc := c.lens()
	bufA := kerntest.Randn(rng, c.offA+la+pad, 1)
	bufB := kerntest.Randn(rng, lb+pad, 1)
	bufC := kerntest.Randn(rng, c.offC+lc+pad, 1)
	if c.beta == 0 {
		_, _, _, _, cr, cc := c.stored()
		for p := 0; p < c.batch; p++ {
			for i := 0; i < cr; i++ {
				for j := 0; j < cc; j++ {
					bufC[c.offC+p*c.strideC+i*c.ldc+j] = float32(math.NaN())
				}
			}
		}
	}
	gA, gB, gC := up(d, bufA), up(d, bufB), up(d, bufC)
	vA, err := gA.Slice(c.offA, la)
	if err != nil {
		t.Fatal(err)
	}
	vB, err := gB.Slice(0, lb)
	if err != nil {
		t.Fatal(err)
	}
	vC, err := gC.Slice(c.offC, lc)
	if err != nil {
		t.Fatal(err)
	}
	before := d.ctx.Calls()
	if err := d.blas.SgemmStridedBatched(c.transA, c.transB, c.m, c.n, c.k, c.alpha, vA, c.lda, c.strideA, vB, c.ldb, c.strideB, c.beta, vC, c.ldc, c.strideC, c.batch); err != nil {
		t.Fatal(err)
	}
	gemms = d.ctx.Calls().Sub(before).GEMMs
	return bufA[c.offA:][:la], bufB[:lb], bufC, get[float32](d, gC), gemms
}

// TestEmulatedSgemmStridedBatched checks SgemmStridedBatched on the
// emulated device for each of batchedCases: one product counted; C's
// buffer bit for bit the host's loop (ref) on the views, the values
// outside the C_i untouched; and each C_i bit for bit what Sgemm gives
// for that entry alone.
func TestEmulatedSgemmStridedBatched(t *testing.T) {
	_, ctx, _ := emuContext(t)
	blas, err := ctx.NewBLAS()
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(31, 32))
	for _, c := range batchedCases() {
		t.Run(c.name, func(t *testing.T) {
			d := &dev{t: t, ctx: ctx, blas: blas}
			A, B, C0, got, gemms := runBatched(d, rng, c)
			if gemms != 1 {
				t.Errorf("%d products counted, want 1", gemms)
			}
			want := append([]float32(nil), C0...)
			c.ref(A, B, want[c.offC:])
			kerntest.EqualBits(t, "C", got, want)

			ar, ac, br, bc, cr, cc := c.stored()
			for p := 0; p < c.batch; p++ {
				Ap, Bp := entry(A, p, c.strideA, ar, c.lda, ac), entry(B, p, c.strideB, br, c.ldb, bc)
				Cp := up(d, entry(C0[c.offC:], p, c.strideC, cr, c.ldc, cc))
				if err := blas.Sgemm(c.transA, c.transB, c.m, c.n, c.k, c.alpha, up(d, Ap), up(d, Bp), c.beta, Cp); err != nil {
					t.Fatal(err)
				}
				kerntest.EqualBits(t, "C_i against Sgemm", entry(got[c.offC:], p, c.strideC, cr, c.ldc, cc), get[float32](d, Cp))
			}
		})
	}
}

// TestEmulatedSgemmStridedBatchedErrors checks SgemmStridedBatched's
// checks, made before any call; that it makes no product of no values;
// and that a profile reports a call as one product, under GEMMName.
func TestEmulatedSgemmStridedBatchedErrors(t *testing.T) {
	_, ctx, _ := emuContext(t)
	blas, err := ctx.NewBLAS()
	if err != nil {
		t.Fatal(err)
	}
	alloc := func(n int) *cuda.Buffer {
		t.Helper()
		b, err := cuda.Alloc[float32](ctx, n)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	// Two products of 2×4 by 4×3, stacked: A 16 values, B 24, C 12.
	A, B, C := alloc(16), alloc(24), alloc(12)
	type args struct {
		transA, transB      bool
		m, n, k             int
		A                   *cuda.Buffer
		lda, strideA        int
		B                   *cuda.Buffer
		ldb, strideB        int
		C                   *cuda.Buffer
		ldc, strideC, batch int
	}
	ok := args{m: 2, n: 3, k: 4, A: A, lda: 4, strideA: 8, B: B, ldb: 3, strideB: 12, C: C, ldc: 3, strideC: 6, batch: 2}
	with := func(f func(*args)) args { a := ok; f(&a); return a }
	call := func(a args) error {
		return blas.SgemmStridedBatched(a.transA, a.transB, a.m, a.n, a.k, 1, a.A, a.lda, a.strideA, a.B, a.ldb, a.strideB, 0, a.C, a.ldc, a.strideC, a.batch)
	}
	const pre = "cuda: SgemmStridedBatched"
	for _, c := range []struct {
		name string
		a    args
		want string
	}{
		{"lda too small", with(func(a *args) { a.lda = 3 }), pre + ": A's rows are 3 values apart, fewer than its 4 columns"},
		{"lda too small, A transposed", with(func(a *args) { a.transA, a.lda, a.strideA = true, 1, 8 }), pre + ": A's rows are 1 values apart, fewer than its 2 columns"},
		{"ldb too small, B transposed", with(func(a *args) { a.transB = true }), pre + ": B's rows are 3 values apart, fewer than its 4 columns"},
		{"ldc too small", with(func(a *args) { a.ldc = 2 }), pre + ": C's rows are 2 values apart, fewer than its 3 columns"},
		{"ld above int", with(func(a *args) { a.ldb = math.MaxInt32 + 1 }), pre + ": B's rows are 2147483648 values apart, more than 2147483647"},
		{"B too short", with(func(a *args) { a.B = alloc(23) }), pre + " B: the buffer holds 23 values, want 24"},
		{"C too short for its stride", with(func(a *args) { a.strideC = 7 }), pre + " C: the buffer holds 12 values, want 13"},
		{"A too short for its rows", with(func(a *args) { a.lda = 5 }), pre + " A: the buffer holds 16 values, want 17"},
		{"nil A", with(func(a *args) { a.A = nil }), pre + ": A is nil"},
		{"nil C", with(func(a *args) { a.C = nil }), pre + ": C is nil"},
		{"negative batch", with(func(a *args) { a.batch = -1 }), pre + ": a batch of -1 products, want 0 to 2147483647"},
		{"negative stride", with(func(a *args) { a.strideB = -1 }), pre + ": strides 8, -1 and 6, want none negative"},
		{"negative dimension", with(func(a *args) { a.k = -1 }), pre + " of 2×-1 by -1×3: dimensions must be 0 to 2147483647"},
		{"stride overflowing", with(func(a *args) { a.strideA, a.batch = math.MaxInt/2, 3 }), pre + ": A's 3 matrices span more values than an int counts"},
	} {
		if err := call(c.a); err == nil || err.Error() != c.want {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	before := ctx.Calls()
	for _, a := range []args{
		with(func(a *args) { a.batch = 0 }),
		with(func(a *args) { a.m, a.A, a.B, a.C = 0, nil, nil, nil }),
		with(func(a *args) { a.n = 0 }),
	} {
		if err := call(a); err != nil {
			t.Errorf("no products (m %d, n %d, batch %d): %v", a.m, a.n, a.batch, err)
		}
	}
	if err := ctx.StartProfile(); err != nil {
		t.Fatal(err)
	}
	if err := call(ok); err != nil {
		t.Fatal(err)
	}
	prof, err := ctx.StopProfile()
	if err != nil {
		t.Fatal(err)
	}
	if len(prof) != 1 || prof[0].Name != cuda.GEMMName || prof[0].Launches != 1 {
		t.Errorf("profile %v, want one call of %s", prof, cuda.GEMMName)
	}
	if n := ctx.Calls().Sub(before).GEMMs; n != 1 {
		t.Errorf("%d products counted for one call and three of no values, want 1", n)
	}
	if err := blas.Destroy(); err != nil {
		t.Fatal(err)
	}
	if err := call(ok); err == nil || err.Error() != pre+": the cuBLAS handle is destroyed" {
		t.Errorf("after Destroy: %v", err)
	}
}

// TestEmulatedSgemmStridedBatchedStatus calls the emulated device's
// cublasSgemmStridedBatched directly, past SgemmStridedBatched's checks:
// CUBLAS_STATUS_INVALID_VALUE (7) for bad sizes, operations, leading
// dimensions, strides or batch; CUBLAS_STATUS_EXECUTION_FAILED (13) for
// an operand whose first or last value is no device memory (A and B not
// read when k = 0); CUBLAS_STATUS_NOT_INITIALIZED (1) without a handle or
// a current context; and nothing checked under noexec.
func TestEmulatedSgemmStridedBatchedStatus(t *testing.T) {
	lib, err := cuda.System().Open(emulator(t))
	if err != nil {
		t.Fatal(err)
	}
	var (
		retain     func(ctx *uintptr, dev int32) int32
		release    func(dev int32) int32
		setCurrent func(ctx uintptr) int32
		memAlloc   func(p *uint64, n uint64) int32
		memFree    func(p uint64) int32
		create     func(h *uintptr) int32
		destroy    func(h uintptr) int32
		noexec     func(on uint64)
		gemm       func(h uintptr, ta, tb, m, n, k int32, alpha *float32, A uint64, lda int32, sa int64,
			B uint64, ldb int32, sb int64, beta *float32, C uint64, ldc int32, sc int64, batch int32) int32
	)
	for name, f := range map[string]any{
		"cuDevicePrimaryCtxRetain": &retain, "cuDevicePrimaryCtxRelease_v2": &release, "cuCtxSetCurrent": &setCurrent,
		"cuMemAlloc_v2": &memAlloc, "cuMemFree_v2": &memFree, "cublasCreate_v2": &create, "cublasDestroy_v2": &destroy,
		"spn_emu_set_noexec": &noexec, "cublasSgemmStridedBatched": &gemm,
	} {
		if err := lib.Bind(f, name); err != nil {
			t.Fatal(err)
		}
	}
	// The context is current on this thread only.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var ctx, h uintptr
	if r := retain(&ctx, 0); r != 0 {
		t.Fatalf("cuDevicePrimaryCtxRetain: %d", r)
	}
	defer release(0)
	if r := setCurrent(ctx); r != 0 {
		t.Fatalf("cuCtxSetCurrent: %d", r)
	}
	defer setCurrent(0)
	if r := create(&h); r != 0 {
		t.Fatalf("cublasCreate_v2: %d", r)
	}
	defer destroy(h)
	var allocs []uint64
	defer func() {
		for _, p := range allocs {
			if r := memFree(p); r != 0 {
				t.Errorf("cuMemFree_v2: %d", r)
			}
		}
	}()
	alloc := func(n int) uint64 {
		var p uint64
		if r := memAlloc(&p, uint64(4*n)); r != 0 {
			t.Fatalf("cuMemAlloc_v2: %d", r)
		}
		allocs = append(allocs, p)
		return p
	}
	// Two column-major products of 2×4 by 4×3: A 16 values, B 24, C 12.
	type args struct {
		h               uintptr
		ta, tb, m, n, k int32
		A               uint64
		lda             int32
		sa              int64
		B               uint64
		ldb             int32
		sb              int64
		C               uint64
		ldc             int32
		sc              int64
		batch           int32
	}
	const bogus = 8 // no device memory
	ok := args{h: h, m: 2, n: 3, k: 4, A: alloc(16), lda: 2, sa: 8, B: alloc(24), ldb: 4, sb: 12, C: alloc(12), ldc: 2, sc: 6, batch: 2}
	with := func(f func(*args)) args { a := ok; f(&a); return a }
	call := func(a args) int32 {
		alpha, beta := float32(1), float32(0)
		return gemm(a.h, a.ta, a.tb, a.m, a.n, a.k, &alpha, a.A, a.lda, a.sa, a.B, a.ldb, a.sb, &beta, a.C, a.ldc, a.sc, a.batch)
	}
	for _, c := range []struct {
		name string
		a    args
		want int32
	}{
		{"fine", ok, 0},
		{"A transposed, lda 4", with(func(a *args) { a.ta, a.lda = 1, 4 }), 0},
		{"no handle", with(func(a *args) { a.h = 0 }), 1},
		{"operation 2", with(func(a *args) { a.tb = 2 }), 7},
		{"negative k", with(func(a *args) { a.k = -1 }), 7},
		{"lda below m", with(func(a *args) { a.lda = 1 }), 7},
		{"A transposed, lda below k", with(func(a *args) { a.ta = 1 }), 7},
		{"ldb below k", with(func(a *args) { a.ldb = 3 }), 7},
		{"ldc below m", with(func(a *args) { a.ldc = 1 }), 7},
		{"negative stride", with(func(a *args) { a.sb = -1 }), 7},
		{"negative batch", with(func(a *args) { a.batch = -1 }), 7},
		{"A's last value outside", with(func(a *args) { a.sa = 9 }), 13},
		{"B's last value outside", with(func(a *args) { a.ldb = 5 }), 13},
		{"C's last value outside", with(func(a *args) { a.sc = 7 }), 13},
		{"A no device memory", with(func(a *args) { a.A = bogus }), 13},
		{"C no device memory", with(func(a *args) { a.C = bogus }), 13},
		{"k 0: A and B not read", with(func(a *args) { a.k, a.A, a.B = 0, bogus, bogus }), 0},
		{"batch 0: nothing read", with(func(a *args) { a.batch, a.A, a.B, a.C = 0, bogus, bogus, bogus }), 0},
		{"m 0: nothing read", with(func(a *args) { a.m, a.A, a.B, a.C = 0, bogus, bogus, bogus }), 0},
	} {
		if r := call(c.a); r != c.want {
			t.Errorf("%s: status %d, want %d", c.name, r, c.want)
		}
	}
	noexec(1)
	if r := call(with(func(a *args) { a.h, a.lda, a.C = 0, 0, bogus })); r != 0 {
		t.Errorf("under noexec: status %d, want 0", r)
	}
	noexec(0)
	setCurrent(0)
	if r := call(ok); r != 1 {
		t.Errorf("no current context: status %d, want 1", r)
	}
	setCurrent(ctx)
}

// sgemmBatched is exercise's SgemmStridedBatched part, for the emulated
// device and a GPU: each of batchedCases against a float64 loop, within
// gemmTol·(|alpha|·Σ_l|a_il·b_lj| + |beta·c_ij|) (cuBLAS adds in its own
// order), the values of C's buffer outside the C_i unchanged, one product
// counted per call.
func sgemmBatched(d *dev) {
	rng := rand.New(rand.NewPCG(33, 34))
	for _, c := range batchedCases() {
		d.t.Run(c.name, func(t *testing.T) {
			d := &dev{t: t, ctx: d.ctx, mod: d.mod, blas: d.blas, ks: d.ks}
			A, B, C0, got, gemms := runBatched(d, rng, c)
			if gemms != 1 {
				t.Errorf("%d products counted, want 1", gemms)
			}
			inside := make([]bool, len(got))
			for p := 0; p < c.batch; p++ {
				for i := 0; i < c.m; i++ {
					for j := 0; j < c.n; j++ {
						at := p*c.strideC + i*c.ldc + j
						var s, bound float64
						for l := 0; l < c.k; l++ {
							ia, ib := c.at(p, i, j, l)
							s += float64(A[ia]) * float64(B[ib])
							bound += math.Abs(float64(A[ia]) * float64(B[ib]))
						}
						want := float64(c.alpha) * s
						bound *= math.Abs(float64(c.alpha))
						if c.beta != 0 {
							want += float64(c.beta) * float64(C0[c.offC+at])
							bound += math.Abs(float64(c.beta) * float64(C0[c.offC+at]))
						}
						kerntest.Near(t, "C", got[c.offC+at:][:1], []float32{float32(want)}, gemmTol*bound, 0)
						inside[c.offC+at] = true
					}
				}
			}
			for i, in := range inside {
				if !in && math.Float32bits(got[i]) != math.Float32bits(C0[i]) {
					t.Fatalf("C's buffer[%d], outside the products, is %v, was %v", i, got[i], C0[i])
				}
			}
		})
	}
}
