// Package cuda finds NVIDIA GPUs at run time and compiles CUDA C for
// them, without cgo and without CUDA at build time.
//
// It opens the NVIDIA driver API (libcuda.so.1), NVRTC (libnvrtc.so.13,
// else libnvrtc.so.12) and cuBLAS (libcublas.so.13, else libcublas.so.12)
// through the system's dynamic loader, binds the entry points it needs and
// describes the devices it finds. The same binary runs on machines with and
// without a GPU: a missing library, a missing symbol, a driver older than
// [MinDriver], no device or a bad ordinal is an error naming what was
// looked for, never a crash.
//
// A [Compiler] (Runtime.Compiler) compiles CUDA C to PTX for one device
// with NVRTC, choosing among the loaded NVRTCs one that still targets the
// device ([ChooseNVRTC]: NVRTC 13 dropped compute capabilities below 7.5);
// a compile error carries NVRTC's log ([CompileError]). CompileCached
// keeps the PTX under a directory the caller gives, keyed by the source,
// the architecture, the options and the NVRTC version ([PTXKey]), written
// atomically and checked when read.
//
// Opening libraries goes through the [Opener] interface: [System] is the
// real dynamic loader, and tests pass a fake one (models/cuda/cudatest).
// The kernels spn compiles are in models/cuda/kern. No model kind computes
// on a GPU yet: the device tensor engine that would launch them does not
// exist ([ErrNoBackend]).
package cuda
