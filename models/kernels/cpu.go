// Package kernels holds the dense and sparse numeric kernels of spn's models
// behind a small Backend interface, with a multi-threaded CPU implementation.
//
// Every kernel is deterministic and independent of the thread count: work is
// split into fixed row chunks (ChunkRows), every output row is computed by one
// goroutine, and reductions over rows add per-chunk partial sums in chunk
// order. No kernel uses atomics on floats.
package kernels

import (
	"sync"

	"gonum.org/v1/gonum/blas/gonum"

	"github.com/spn-project/spn/data/csr"
)

// ChunkRows is the fixed row-chunk size of every parallel kernel. Reductions
// sum one partial per chunk in chunk order, so results do not depend on the
// number of threads.
const ChunkRows = 128

// Backend is the set of kernels a model needs. All matrices are dense,
// row-major float32 slices.
type Backend interface {
	// MatMul sets y (n×out) = x (n×in) · w (in×out) + bias (nil = none),
	// for s = MatMulShape{n, in, out}.
	MatMul(y, x, w, bias []float32, s MatMulShape)
	// MatMulBT sets dx (n×in) = dy (n×out) · wᵀ.
	MatMulBT(dx, dy, w []float32, s MatMulShape)
	// MatMulAT adds xᵀ (in×n) · dy (n×out) to dw (in×out) and the column
	// sums of dy to db (nil = skip).
	MatMulAT(dw, db, x, dy []float32, s MatMulShape)
	// MatMulATBuf is MatMulAT with the per-chunk partial sums kept in *buf
	// (grown as needed; its contents need not be zero), so repeated calls
	// do not allocate.
	MatMulATBuf(dw, db, x, dy []float32, s MatMulShape, buf *[]float32)
	// HopAggregate sets y = m.Scale·x + Σ_i m.Coef[i]·A_i·x over the rows
	// of x (n×d), where A_i is the 0/1 matrix of m.Hops[i].
	HopAggregate(y, x []float32, m HopMix, n, d int)
	// HopAggregateSums is HopAggregate that also stores A_i·x in sums[i]
	// (n×d each), for the gradient of the coefficients.
	HopAggregateSums(y []float32, sums [][]float32, x []float32, m HopMix, n, d int)
	// Dots returns ⟨g, xs[i]⟩ for each i over n×d matrices, summed per
	// row chunk in float32 and over chunks in float64.
	Dots(g []float32, xs [][]float32, n, d int) []float64
	// ForEachChunk runs f on the fixed row chunks [lo,hi) of n rows, in
	// parallel; f must only write rows lo..hi-1 or chunk-private memory.
	ForEachChunk(n int, f func(chunk, lo, hi int))
	// Gemm sets C = Alpha·op(A)·op(B) + Beta·C (GemmArgs), serially:
	// for callers that parallelise over independent blocks themselves
	// (attention heads).
	Gemm(g GemmArgs)
}

// GemmArgs are the operands of Backend.Gemm, C = Alpha·op(A)·op(B) +
// Beta·C on strided row-major matrices: op(A) is M×K, op(B) K×N and C
// M×N, op transposing A with TA and B with TB; LdA, LdB and LdC are the
// distances between the rows of A, B and C as stored.
type GemmArgs struct {
	TA, TB        bool
	M, N, K       int
	Alpha, Beta   float32
	A, B, C       []float32
	LdA, LdB, LdC int
}

// MatMulShape is the shape of Backend's dense products: the N rows of
// the data matrix (x or dy), the In columns of x (rows of w) and the Out
// columns of y (columns of w).
type MatMulShape struct {
	N, In, Out int
}

// HopMix is the linear map of the SPN hop aggregation over the rows of a
// matrix x, x ↦ Scale·x + Σ_i Coef[i]·A_i·x, where A_i is the 0/1 matrix
// of Hops[i] (len(Coef) ≥ len(Hops)).
type HopMix struct {
	Hops  []csr.CSR
	Coef  []float32
	Scale float32
}

// CPU is the pure-Go backend. Threads ≤ 1 runs serially. With a Pool
// (NewPool(Threads, 0)), parallel sections run on its workers instead of
// new goroutines, and the pool's thread count (which Pool.Grow may raise)
// replaces Threads.
type CPU struct {
	Threads int
	Pool    *Pool
}

var _ Backend = CPU{}

// Gemm implements Backend with this build's GEMM.
func (CPU) Gemm(g GemmArgs) {
	sgemm(g.TA, g.TB, g.M, g.N, g.K, g.Alpha, g.A, g.LdA, g.B, g.LdB, g.Beta, g.C, g.LdC)
}

// NumChunks returns the number of ChunkRows chunks covering n rows.
func NumChunks(n int) int { return (n + ChunkRows - 1) / ChunkRows }

// ForEachChunk implements Backend.
func (c CPU) ForEachChunk(n int, f func(chunk, lo, hi int)) {
	nc := NumChunks(n)
	t := c.Threads
	if c.Pool != nil {
		t = c.Pool.Threads()
	}
	if t > nc {
		t = nc
	}
	if t <= 1 {
		for ch := 0; ch < nc; ch++ {
			f(ch, ch*ChunkRows, min((ch+1)*ChunkRows, n))
		}
		return
	}
	if c.Pool != nil {
		c.Pool.forEachChunk(n, nc, f)
		return
	}
	var wg sync.WaitGroup
	for w := 0; w < t; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for ch := w; ch < nc; ch += t {
				f(ch, ch*ChunkRows, min((ch+1)*ChunkRows, n))
			}
		}(w)
	}
	wg.Wait()
}

var impl gonum.Implementation

// MatMul implements Backend.
func (c CPU) MatMul(y, x, w, bias []float32, s MatMulShape) {
	n, in, out := s.N, s.In, s.Out
	c.ForEachChunk(n, func(_, lo, hi int) {
		ys := y[lo*out : hi*out]
		if bias != nil {
			for r := 0; r < hi-lo; r++ {
				copy(ys[r*out:(r+1)*out], bias)
			}
		}
		beta := float32(0)
		if bias != nil {
			beta = 1
		}
		if in == 0 {
			if bias == nil {
				clear(ys)
			}
			return
		}
		sgemm(false, false, hi-lo, out, in, 1, x[lo*in:hi*in], in, w, out, beta, ys, out)
	})
}

// MatMulBT implements Backend.
func (c CPU) MatMulBT(dx, dy, w []float32, s MatMulShape) {
	n, in, out := s.N, s.In, s.Out
	if in == 0 {
		return
	}
	c.ForEachChunk(n, func(_, lo, hi int) {
		sgemm(false, true, hi-lo, in, out, 1, dy[lo*out:hi*out], out, w, out, 0, dx[lo*in:hi*in], in)
	})
}

// MatMulAT implements Backend.
func (c CPU) MatMulAT(dw, db, x, dy []float32, s MatMulShape) {
	var buf []float32
	c.MatMulATBuf(dw, db, x, dy, s, &buf)
}

// MatMulATBuf implements Backend.
func (c CPU) MatMulATBuf(dw, db, x, dy []float32, shape MatMulShape, buf *[]float32) {
	n, in, out := shape.N, shape.In, shape.Out
	nc := NumChunks(n)
	if nc == 0 {
		return
	}
	stride := in*out + out
	if cap(*buf) < nc*stride {
		*buf = make([]float32, nc*stride, nc*stride+nc*stride/2)
	}
	part := (*buf)[:nc*stride]
	c.ForEachChunk(n, func(ch, lo, hi int) {
		p := part[ch*stride : (ch+1)*stride]
		if in > 0 {
			// beta = 0: the GEMM zeroes its block itself.
			sgemm(true, false, in, out, hi-lo, 1, x[lo*in:hi*in], in, dy[lo*out:hi*out], out, 0, p[:in*out], out)
		}
		if db != nil {
			// Column sums of dy in row order; y += 1·x adds x exactly, so
			// the vector kernel gives the bits of the plain loop.
			s := p[in*out:]
			clear(s)
			for r := lo; r < hi; r++ {
				impl.Saxpy(out, 1, dy[r*out:(r+1)*out], 1, s, 1)
			}
		}
	})
	// The partials in chunk order (vectorised, as above).
	for ch := 0; ch < nc; ch++ {
		p := part[ch*stride : (ch+1)*stride]
		impl.Saxpy(in*out, 1, p[:in*out], 1, dw, 1)
		if db != nil {
			impl.Saxpy(out, 1, p[in*out:], 1, db, 1)
		}
	}
}

// Transpose returns the transpose of the square CSR a (rows sorted
// ascending), by a counting sort; for a symmetric a it equals a.
func Transpose(a csr.CSR) csr.CSR {
	n := a.Len()
	t := csr.CSR{Ptr: make([]int32, n+1), Idx: make([]int32, len(a.Idx))}
	for _, v := range a.Idx {
		t.Ptr[v+1]++
	}
	for u := 0; u < n; u++ {
		t.Ptr[u+1] += t.Ptr[u]
	}
	next := make([]int32, n)
	copy(next, t.Ptr[:n])
	for u := 0; u < n; u++ {
		for _, v := range a.Idx[a.Ptr[u]:a.Ptr[u+1]] {
			t.Idx[next[v]] = int32(u)
			next[v]++
		}
	}
	return t
}
