// Package cuda finds NVIDIA GPUs at run time, without cgo and without CUDA
// at build time.
//
// It opens the NVIDIA driver API (libcuda.so.1), NVRTC (libnvrtc.so.13,
// else libnvrtc.so.12) and cuBLAS (libcublas.so.13, else libcublas.so.12)
// through the system's dynamic loader, binds the entry points it needs and
// describes the devices it finds. The same binary runs on machines with and
// without a GPU: a missing library, a missing symbol, a driver older than
// [MinDriver], no device or a bad ordinal is an error naming what was
// looked for, never a crash.
//
// Opening libraries goes through the [Opener] interface: [System] is the
// real dynamic loader, and tests pass a fake one. The package holds device
// discovery only; no model kind computes on a GPU yet.
package cuda
