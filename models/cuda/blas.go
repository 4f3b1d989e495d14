package cuda

import (
	"fmt"
	"math"
	"runtime"
	"unsafe"

	"github.com/spn-project/spn/models/cuda/kern"
)

// blasAPI holds the cuBLAS entry points spn uses. A cublasHandle_t is a
// pointer, held as uintptr; the matrices are device pointers and alpha
// and beta host pointers (cuBLAS's default pointer mode).
type blasAPI struct {
	create  func(h *uintptr) int32
	destroy func(h uintptr) int32
	// setStream is cublasSetStream_v2(h, stream).
	setStream func(h, stream uintptr) int32
	// sgemm is cublasSgemm_v2(h, transa, transb, m, n, k, *alpha, a,
	// lda, b, ldb, *beta, c, ldc), called by callC; sgemmBatched is
	// cublasSgemmStridedBatched(h, transa, transb, m, n, k, *alpha, a,
	// lda, strideA, b, ldb, strideB, *beta, c, ldc, strideC, batch), the
	// strides long long.
	sgemm, sgemmBatched uintptr
}

func (a *blasAPI) bindings() []binding {
	return []binding{
		{"cublasCreate_v2", &a.create},
		{"cublasDestroy_v2", &a.destroy},
		{"cublasSetStream_v2", &a.setStream},
		{"cublasSgemm_v2", &a.sgemm},
		{"cublasSgemmStridedBatched", &a.sgemmBatched},
	}
}

// cublasOperation_t.
const (
	opN = 0
	opT = 1
)

// BLAS is a cuBLAS handle in a context.
//
// Determinism: cuBLAS documents that its routines give the same bits from
// run to run on GPUs of the same architecture and number of SMs, with the
// same cuBLAS version, as long as one stream is active (concurrent
// streams sharing a handle may pick other internal workspaces) and the
// atomics mode (cublasSetAtomicsMode) stays at its default, off. spn's
// handles are each set once to their Context's stream (one handle per
// Context in the engine) and never enable atomics, so its
// products are deterministic on one GPU model; they differ between GPU
// models and cuBLAS versions. The handle keeps the default math mode,
// which does not use TF32 tensor cores for Sgemm: products are in full
// float32.
type BLAS struct {
	ctx       *Context
	api       *blasAPI
	h         uintptr
	destroyed bool
}

// NewBLAS creates a cuBLAS handle in the context whose products go on the
// context's stream (cublasSetStream_v2). Destroy (or the context's
// Close) releases it.
func (c *Context) NewBLAS() (*BLAS, error) {
	api := &blasAPI{}
	if err := bindAll(c.rt.cublasLib, c.rt.CuBLAS.Name, api.bindings()); err != nil {
		return nil, err
	}
	b := &BLAS{ctx: c, api: api}
	err := c.do(func() error {
		if err := c.blasCheck("cublasCreate_v2", b.api.create(&b.h)); err != nil {
			return err
		}
		c.track(b)
		return c.blasCheck("cublasSetStream_v2", b.api.setStream(b.h, c.stream))
	})
	if err != nil {
		return nil, err
	}
	return b, nil
}

// Destroy releases the handle. Destroying twice does nothing.
func (b *BLAS) Destroy() error { return b.ctx.drop(b, &b.destroyed) }

func (b *BLAS) release() error {
	b.destroyed = true
	return check("cublasDestroy_v2", b.api.destroy(b.h))
}

// Sgemm sets C = alpha·op(A)·op(B) + beta·C for row-major float32
// matrices: op(A) is m×k, op(B) is k×n and C is m×n; op(X) is X, or Xᵀ
// when transX (A is then stored k×m, B n×k). With beta = 0, C's old
// values are not read (cuBLAS's rule; a NaN there does not propagate).
//
// cuBLAS is column-major, and a row-major r×c matrix with rows of c
// values is, read column-major, its transpose: c×r with leading dimension
// c. So the row-major C = op(A)·op(B) is the column-major
// Cᵀ = op(B)ᵀ·op(A)ᵀ, and Sgemm makes the column-major call with the
// operands swapped:
//
//	cublasSgemm(opB, opA, n, m, k, alpha, B, ldb, A, lda, beta, C, n)
//
// where opX is CUBLAS_OP_T when transX, else CUBLAS_OP_N, and the leading
// dimensions are the row lengths of the stored matrices: lda = k (m when
// transA), ldb = n (k when transB).
func (b *BLAS) Sgemm(transA, transB bool, m, n, k int, alpha float32, A, B *Buffer, beta float32, C *Buffer) error {
	lda, ldb := k, n
	if transA {
		lda = m
	}
	if transB {
		ldb = k
	}
	return b.gemm(false, transA, transB, m, n, k, alpha, A, max(lda, 1), 0, B, max(ldb, 1), 0, beta, C, max(n, 1), 0, 1)
}

// SgemmStridedBatched makes batch products of row-major float32
// matrices in one cublasSgemmStridedBatched call: for i = 0 .. batch−1,
//
//	C_i = alpha·op(A_i)·op(B_i) + beta·C_i
//
// where A_i is the matrix from A's value i·strideA on, its rows lda
// values apart (stored m×k, or k×m when transA), B_i the one from B's
// value i·strideB on, rows ldb apart (k×n, or n×k when transB), and C_i
// (m×n) the one from C's value i·strideC on, rows ldc apart. A stride of
// 0 uses one matrix for every product; a leading dimension above the row
// length addresses a block of columns of a wider matrix (with A a Slice
// from the block's first column). The leading dimensions must be at least
// the stored row lengths (lda ≥ k, or m when transA; ldb ≥ n, or k when
// transB; ldc ≥ n), and each buffer must hold its last matrix's last
// value. With beta = 0, C's old values are not read; m, n or batch 0 make
// no call. The C_i must not overlap: cuBLAS makes the products in no
// set order.
//
// As Sgemm, it is the column-major call with the operands swapped:
//
//	cublasSgemmStridedBatched(opB, opA, n, m, k, alpha, B, ldb, strideB,
//		A, lda, strideA, beta, C, ldc, strideC, batch)
//
// Its bits are deterministic under BLAS's conditions, but cuBLAS may pick
// other kernels for a batch than for one product: on a GPU they need not
// be Sgemm's for each C_i. The profile counts it as one product, under
// GEMMName.
func (b *BLAS) SgemmStridedBatched(transA, transB bool, m, n, k int, alpha float32, A *Buffer, lda, strideA int, B *Buffer, ldb, strideB int, beta float32, C *Buffer, ldc, strideC, batch int) error {
	return b.gemm(true, transA, transB, m, n, k, alpha, A, lda, strideA, B, ldb, strideB, beta, C, ldc, strideC, batch)
}

// gemm is Sgemm (cublasSgemm_v2: batch 1, the strides 0) and, when
// batched, SgemmStridedBatched (cublasSgemmStridedBatched).
func (b *BLAS) gemm(batched, transA, transB bool, m, n, k int, alpha float32, A *Buffer, lda, strideA int, B *Buffer, ldb, strideB int, beta float32, C *Buffer, ldc, strideC, batch int) error {
	name, call := "Sgemm", "cublasSgemm_v2"
	if batched {
		name, call = "SgemmStridedBatched", "cublasSgemmStridedBatched"
	}
	for _, d := range []int{m, n, k} {
		if d < 0 || d > math.MaxInt32 {
			return fmt.Errorf("cuda: %s of %d×%d by %d×%d: dimensions must be 0 to %d", name, m, k, k, n, math.MaxInt32)
		}
	}
	if batch < 0 || batch > math.MaxInt32 {
		return fmt.Errorf("cuda: %s: a batch of %d products, want 0 to %d", name, batch, math.MaxInt32)
	}
	if strideA < 0 || strideB < 0 || strideC < 0 {
		return fmt.Errorf("cuda: %s: strides %d, %d and %d, want none negative", name, strideA, strideB, strideC)
	}
	if m == 0 || n == 0 || batch == 0 {
		return nil
	}
	op := func(t bool) int32 {
		if t {
			return opT
		}
		return opN
	}
	// The stored matrices' rows and columns.
	ar, ac, br, bc := m, k, k, n
	if transA {
		ar, ac = k, m
	}
	if transB {
		br, bc = n, k
	}
	return b.ctx.do(func() error {
		if b.destroyed {
			return fmt.Errorf("cuda: %s: the cuBLAS handle is destroyed", name)
		}
		for _, x := range []struct {
			name                   string
			buf                    *Buffer
			rows, cols, ld, stride int
		}{{"A", A, ar, ac, lda, strideA}, {"B", B, br, bc, ldb, strideB}, {"C", C, m, n, ldc, strideC}} {
			if x.buf == nil {
				return fmt.Errorf("cuda: %s: %s is nil", name, x.name)
			}
			if x.ld < max(x.cols, 1) {
				return fmt.Errorf("cuda: %s: %s's rows are %d values apart, fewer than its %d columns", name, x.name, x.ld, max(x.cols, 1))
			}
			if x.ld > math.MaxInt32 {
				return fmt.Errorf("cuda: %s: %s's rows are %d values apart, more than %d", name, x.name, x.ld, math.MaxInt32)
			}
			need, ok := extent(batch, x.stride, x.rows, x.ld, x.cols)
			if !ok {
				return fmt.Errorf("cuda: %s: %s's %d matrices span more values than an int counts", name, x.name, batch)
			}
			if err := x.buf.usable(b.ctx, kern.F32Ptr, need, name+" "+x.name); err != nil {
				return err
			}
		}
		b.ctx.calls.GEMMs++
		if err := b.ctx.profileStart(); err != nil {
			return err
		}
		var r int32
		if batched {
			r = callC(b.api.sgemmBatched, b.h, uintptr(op(transB)), uintptr(op(transA)), uintptr(n), uintptr(m), uintptr(k), uintptr(unsafe.Pointer(&alpha)),
				uintptr(B.ptr), uintptr(ldb), uintptr(strideB), uintptr(A.ptr), uintptr(lda), uintptr(strideA), uintptr(unsafe.Pointer(&beta)),
				uintptr(C.ptr), uintptr(ldc), uintptr(strideC), uintptr(batch))
		} else {
			r = callC(b.api.sgemm, b.h, uintptr(op(transB)), uintptr(op(transA)), uintptr(n), uintptr(m), uintptr(k), uintptr(unsafe.Pointer(&alpha)),
				uintptr(B.ptr), uintptr(ldb), uintptr(A.ptr), uintptr(lda), uintptr(unsafe.Pointer(&beta)), uintptr(C.ptr), uintptr(ldc))
		}
		runtime.KeepAlive(&alpha)
		runtime.KeepAlive(&beta)
		if err := b.ctx.blasCheck(call, r); err != nil {
			return err
		}
		return b.ctx.profileEnd(GEMMName)
	})
}

// blasCheck turns the status r of the cuBLAS call named call, made in
// the context with its lock held, into an error, as check does. cuBLAS
// reports a launch the driver refused as CUBLAS_STATUS_EXECUTION_FAILED
// (13), or CUBLAS_STATUS_INTERNAL_ERROR (14), whatever the driver said;
// so for those it asks the stream (cuStreamSynchronize), whose error,
// joined to cuBLAS's, says what the driver did: a sticky error there
// (an earlier kernel's fault) makes the whole ErrContextLost, as it
// would be had a launch or copy met it first.
func (c *Context) blasCheck(call string, r int32) error {
	err := check(call, r)
	if err == nil || r != 13 && r != 14 {
		return err
	}
	if serr := check("cuStreamSynchronize", c.api.streamSynchronize(c.stream)); serr != nil {
		return fmt.Errorf("%w; the stream: %w", err, serr)
	}
	return err
}

// extent returns the number of values batch matrices of rows×cols, rows
// ld apart, stride apart, span: up to the last one's last value, 0 for
// matrices of no values (A and B when k = 0, not read). It is false if
// the number overflows an int.
func extent(batch, stride, rows, ld, cols int) (int, bool) {
	if batch == 0 || rows == 0 || cols == 0 {
		return 0, true
	}
	n := cols
	if rows > 1 {
		if ld > (math.MaxInt-n)/(rows-1) {
			return 0, false
		}
		n += (rows - 1) * ld
	}
	if batch > 1 && stride > 0 {
		if stride > (math.MaxInt-n)/(batch-1) {
			return 0, false
		}
		n += (batch - 1) * stride
	}
	return n, true
}
