// spn.cuh: what every kernel file of spn uses. Kernels are written for
// correctness and determinism first: one thread per output value (or per
// output row or column), loops in a fixed order, no atomics, no shared
// memory and no __syncthreads, so that a kernel's result does not depend on
// the launch configuration and a C compiler can run it on the CPU (the
// package's emulation test). A reduction over the rows of a batch is not
// one thread's loop over all of them (thousands of dependent steps, which
// a GPU runs at memory latency): one thread per chunk of SPN_CHUNK_ROWS
// rows writes a partial, and a second launch, or each thread of the
// consumer, adds the partials in chunk order.
//
// A launch covers its outputs with any grid: every kernel computes its
// global thread index t and returns when t is past its last output.

#ifndef SPN_KERNEL
#define SPN_KERNEL extern "C" __global__
#endif
#ifndef SPN_DEVICE
#define SPN_DEVICE static __device__ __forceinline__
#endif

// SPN_CHUNK_ROWS is models/kernels.ChunkRows: column reductions add one
// partial sum per chunk of rows, chunks in order, as the CPU kernels do.
#define SPN_CHUNK_ROWS 128

// spn_chunks is the number of chunks of SPN_CHUNK_ROWS rows in n rows.
SPN_DEVICE int spn_chunks(int n)
{
	return (n + SPN_CHUNK_ROWS - 1) / SPN_CHUNK_ROWS;
}

// spn_chunk maps thread t of a reduction by chunks (t = c·w + j) onto
// chunk c of n rows, its rows lo..hi−1, and column j < w; it returns 0
// for a thread past the last chunk.
SPN_DEVICE int spn_chunk(long long t, int n, int w, int* c, int* j, int* lo, int* hi)
{
	if (t >= (long long)spn_chunks(n) * w) {
		return 0;
	}
	*c = (int)(t / w);
	*j = (int)(t % w);
	*lo = *c * SPN_CHUNK_ROWS;
	*hi = *lo + SPN_CHUNK_ROWS < n ? *lo + SPN_CHUNK_ROWS : n;
	return 1;
}

// spn_index is the thread's global index over a one-dimensional grid.
SPN_DEVICE long long spn_index(void)
{
	return (long long)blockIdx.x * (long long)blockDim.x + (long long)threadIdx.x;
}

// spn_relu is Go's max(v, 0) on float32: +0 for v <= 0 (-0 included), NaN
// stays NaN.
SPN_DEVICE float spn_relu(float v)
{
	return (v > 0.0f || v != v) ? v : 0.0f;
}

// spn_relu_grad is the gradient dy through a ReLU whose output was y: dy
// where y is not +0 (the ReLU writes +0 for what it cuts), +0 where it is,
// bit for bit models/kernels.ReLUMask.
SPN_DEVICE float spn_relu_grad(float y, float dy)
{
	unsigned int mask = __float_as_uint(y) != 0u ? 0xffffffffu : 0u;
	return __uint_as_float(__float_as_uint(dy) & mask);
}

// spn_pick returns p_k (k < 8; p_7 for any larger k): how a kernel that
// takes a group of eight arrays finds its thread's, by a chain of
// selects, not an array indexed by k, which would live in local memory.
SPN_DEVICE const float* spn_pick(int k, const float* p0, const float* p1, const float* p2, const float* p3,
	const float* p4, const float* p5, const float* p6, const float* p7)
{
	return k == 0 ? p0 : k == 1 ? p1 : k == 2 ? p2 : k == 3 ? p3 : k == 4 ? p4 : k == 5 ? p5 : k == 6 ? p6 : p7;
}

// spn_pick_out is spn_pick for outputs.
SPN_DEVICE float* spn_pick_out(int k, float* p0, float* p1, float* p2, float* p3, float* p4, float* p5, float* p6, float* p7)
{
	return k == 0 ? p0 : k == 1 ? p1 : k == 2 ? p2 : k == 3 ? p3 : k == 4 ? p4 : k == 5 ? p5 : k == 6 ? p6 : p7;
}

// spn_group_item splits thread i of a launch over count ≤ 8 items (the
// arrays of a group: tensors, readouts, relations) of len values each
// into the item *k and the value *v within it. It returns 0, and the
// thread has nothing to do, past the last value or for count > 8.
SPN_DEVICE int spn_group_item(long long i, int count, long long len, int* k, long long* v)
{
	if (count > 8 || i >= (long long)count * len) {
		return 0;
	}
	*k = (int)(i / len);
	*v = i % len;
	return 1;
}

// spn_rows_sum returns Σ_{a ≤ r < b} x[r, j] of x (·×d), added in float
// in order from 0: a graph column's sum (kernels.RowSum's order), and one
// chunk's part of a column sum (the bias gradients' order, models/kernels'
// CPU.MatMulAT).
SPN_DEVICE float spn_rows_sum(const float* __restrict__ x, int a, int b, int d, int j)
{
	float s = 0.0f;
	for (int r = a; r < b; r++) {
		s += x[(long long)r * d + j];
	}
	return s;
}
