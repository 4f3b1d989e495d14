// spn.cuh: what every kernel file of spn uses. Kernels are written for
// correctness and determinism first: one thread per output value (or per
// output row or column), loops in a fixed order, no atomics, no shared
// memory and no __syncthreads, so that a kernel's result does not depend on
// the launch configuration and a C compiler can run it on the CPU (the
// package's emulation test). Tuning happens on a GPU.
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
