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
// a compile error carries NVRTC's log ([CompileError]). [OpenCompiler]
// opens an NVRTC on its own, without a driver or a GPU, for checking the
// kernels and for tooling; for a real architecture (sm_XX) it compiles
// to a CUBIN, whose log (Compiler.CompileLog) can hold ptxas's register
// and spill counts, and Context.LoadModule loads a CUBIN as it loads
// PTX. CompileCached
// keeps the PTX under a directory the caller gives, keyed by the source,
// the architecture, the options and the NVRTC version ([PTXKey]), written
// atomically and checked when read.
//
// The device layer runs code on a GPU through the driver API: a
// [Context] (Runtime.NewContext) is a device's primary context, made
// current on the calling OS thread for each call, so it may be used from
// any goroutine. In it, [Alloc], [NewBuffer], [Upload] and [Download] move
// float32, float64 and int32 values to and from device memory, a [Pack]
// sends many arrays in one copy (views into one buffer; Pack.Share
// names one array twice), and
// Context.Calls counts the copies each way, the launches, the products
// and the allocations. Those copies wait for the device; the
// asynchronous ones do not: [DownloadAsync] and Pack.UploadAsync (through
// a [Staging]) copy between device memory and page-locked host memory
// (Context.AllocHost, [HostBuffer]) in the order of the Context's stream,
// and the host learns that they have run by waiting for an [Event]
// recorded after them (Context.NewEvent);
// Context.LoadModule loads PTX and Module.Kernel finds an entry point of
// models/cuda/kern's table, whose Launch checks the arguments against the
// kernel's parameters before launching ([ArgError]); Context.NewBLAS
// makes a cuBLAS handle whose Sgemm multiplies row-major matrices.
// Context.StartProfile and StopProfile time each launch and product on
// the device between two driver events ([KernelTime]).
// Context.Close releases everything made in the context. A driver or
// cuBLAS call that fails gives an error wrapping a [*CallError], which names
// the call and its code.
//
// NVIDIA's libraries stay loaded for the life of the process: Close
// releases what the package made in the driver (contexts, memory,
// modules, cuBLAS handles), but nothing unloads libcuda, NVRTC or cuBLAS,
// whose helper threads and exit handlers may outlive an unload.
//
// Opening libraries goes through the [Opener] interface: [System] is the
// real dynamic loader, and tests pass a fake one (internal/testkit/cudatest),
// or the real loader with a fake CUDA built from C (testdata; its
// emulated device runs the kernels on the host). The kernels spn compiles
// are in models/cuda/kern; models/cuda/engine is the Gorgonia tensor
// engine over device memory that launches them, through which
// models/rt runs the steps and evaluation of the kinds with device math
// (models.DeviceKind: spn, gin, rspn, espn, gcn, gat;
// rt.Engine.UseDevice; and baseline, whose graph of Gorgonia's own ops
// runs on the engine's built-ins: baseline.Model.UseDevice),
// models/fit their training runs, and the train stage a spec's, on a GPU
// of the machine or of a Slurm job, and spn bench its timed steps.
package cuda
