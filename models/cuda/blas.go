package cuda

import (
	"errors"
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
	// sgemm is cublasSgemm_v2(h, transa, transb, m, n, k, *alpha, a,
	// lda, b, ldb, *beta, c, ldc), called by callC.
	sgemm uintptr
}

func (a *blasAPI) bindings() []binding {
	return []binding{
		{"cublasCreate_v2", &a.create},
		{"cublasDestroy_v2", &a.destroy},
		{"cublasSgemm_v2", &a.sgemm},
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
// atomics mode (cublasSetAtomicsMode) stays at its default, off. spn uses
// one handle on the default stream and never enables atomics, so its
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

// NewBLAS creates a cuBLAS handle in the context. Destroy (or the
// context's Close) releases it.
func (c *Context) NewBLAS() (*BLAS, error) {
	api := &blasAPI{}
	if err := bindAll(c.rt.cublasLib, c.rt.CuBLAS.Name, api.bindings()); err != nil {
		return nil, err
	}
	b := &BLAS{ctx: c, api: api}
	err := c.do(func() error {
		if err := check("cublasCreate_v2", b.api.create(&b.h)); err != nil {
			return err
		}
		c.track(b)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return b, nil
}

// Destroy releases the handle. Destroying twice does nothing.
func (b *BLAS) Destroy() error {
	err := b.ctx.do(func() error {
		if b.destroyed {
			return nil
		}
		delete(b.ctx.live, b)
		return b.release()
	})
	if errors.Is(err, errClosed) {
		return nil // Close destroyed it
	}
	return err
}

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
	for _, d := range []int{m, n, k} {
		if d < 0 || d > math.MaxInt32 {
			return fmt.Errorf("cuda: Sgemm of %d×%d by %d×%d: dimensions must be 0 to %d", m, k, k, n, math.MaxInt32)
		}
	}
	if m == 0 || n == 0 {
		return nil
	}
	op := func(t bool) int32 {
		if t {
			return opT
		}
		return opN
	}
	lda, ldb := k, n
	if transA {
		lda = m
	}
	if transB {
		ldb = k
	}
	return b.ctx.do(func() error {
		if b.destroyed {
			return fmt.Errorf("cuda: Sgemm: the cuBLAS handle is destroyed")
		}
		for _, x := range []struct {
			name string
			buf  *Buffer
			n    int
		}{{"A", A, m * k}, {"B", B, k * n}, {"C", C, m * n}} {
			if x.buf == nil {
				return fmt.Errorf("cuda: Sgemm: %s is nil", x.name)
			}
			if err := x.buf.usable(b.ctx, kern.F32Ptr, x.n, "Sgemm "+x.name); err != nil {
				return err
			}
		}
		b.ctx.calls.GEMMs++
		if err := b.ctx.profileStart(); err != nil {
			return err
		}
		r := callC(b.api.sgemm, b.h, uintptr(op(transB)), uintptr(op(transA)), uintptr(n), uintptr(m), uintptr(k), uintptr(unsafe.Pointer(&alpha)),
			uintptr(B.ptr), uintptr(max(ldb, 1)), uintptr(A.ptr), uintptr(max(lda, 1)), uintptr(unsafe.Pointer(&beta)), uintptr(C.ptr), uintptr(n))
		runtime.KeepAlive(&alpha)
		runtime.KeepAlive(&beta)
		if err := check("cublasSgemm_v2", r); err != nil {
			return err
		}
		return b.ctx.profileEnd(GEMMName)
	})
}
