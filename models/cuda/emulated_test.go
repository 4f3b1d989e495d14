package cuda_test

import (
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/spn-project/spn/internal/testkit/cudatest"
	"github.com/spn-project/spn/internal/testkit/kerntest"
	"github.com/spn-project/spn/models/cuda"
	"github.com/spn-project/spn/models/cuda/kern"
)

// The emulated device is one shared library built from C with the system
// compiler: testdata/fakecuda.c (discovery, an NVRTC whose PTX holds the
// source), testdata/emudevice.c (contexts, memory, modules, launches and
// cuBLAS's Sgemm on the host) and a generated unit holding kern.Source()
// behind kerntest's prelude and dispatcher. Opened through the real
// dynamic loader, it checks the bindings' C signatures, the
// kernel-params array and the per-thread context, and runs the kernels.

var emu struct {
	once      sync.Once
	path, dir string
	skip      string
	err       error
}

// emulator returns the emulated device library, built once per test
// binary; it skips without a C compiler.
func emulator(t testing.TB) string {
	t.Helper()
	emu.once.Do(func() {
		if emu.dir, emu.err = os.MkdirTemp("", "spn-emudevice-"); emu.err != nil {
			return
		}
		emu.path, emu.skip, emu.err = cudatest.BuildEmulator(emu.dir, "testdata")
	})
	if emu.skip != "" {
		t.Skip(emu.skip)
	}
	if emu.err != nil {
		t.Fatal(emu.err)
	}
	return emu.path
}

func TestMain(m *testing.M) {
	code := m.Run()
	if emu.dir != "" {
		os.RemoveAll(emu.dir)
	}
	os.Exit(code)
}

// live reads the emulated device's count of live objects: 0 allocations,
// 1 modules, 2 cuBLAS handles, 3 references to the primary context, 4
// events, 5 page-locked allocations, 6 asynchronous copies the host has
// not waited for, 7 streams; 8 counts the work enqueued on the legacy
// stream.
func live(t *testing.T, lib string) func(what int32) int32 {
	t.Helper()
	l, err := cuda.System().Open(lib)
	if err != nil {
		t.Fatal(err)
	}
	var f func(int32) int32
	if err := l.Bind(&f, "spn_emu_live"); err != nil {
		t.Fatal(err)
	}
	return f
}

// emuContext probes the emulated device and opens a context on it.
func emuContext(t *testing.T) (*cuda.Runtime, *cuda.Context, string) {
	t.Helper()
	lib := emulator(t)
	r, _ := device0(t, lib)
	ctx, err := r.NewContext(0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ctx.Close() })
	return r, ctx, lib
}

// kernelsPTX compiles the kernels through the PTX cache for ctx's device.
func kernelsPTX(t *testing.T, r *cuda.Runtime, ctx *cuda.Context) []byte {
	t.Helper()
	c, err := r.Compiler(ctx.Device)
	if err != nil {
		t.Fatal(err)
	}
	ptx, _, err := c.CompileCached(cudatest.KernelCacheDir(t), kern.Name, kern.Source(), kern.Options()...)
	if err != nil {
		t.Fatal(err)
	}
	return ptx
}

// loadKernels loads the kernels' module into ctx (kernelsPTX) and
// returns its entry points names.
func loadKernels(t *testing.T, r *cuda.Runtime, ctx *cuda.Context, names ...string) []*cuda.Kernel {
	t.Helper()
	mod, err := ctx.LoadModule(kernelsPTX(t, r, ctx))
	if err != nil {
		t.Fatal(err)
	}
	ks := make([]*cuda.Kernel, len(names))
	for i, name := range names {
		if ks[i], err = mod.Kernel(name); err != nil {
			t.Fatal(err)
		}
	}
	return ks
}

// TestEmulatedDevice runs the device tests on the emulated device, then
// checks that Close released everything.
func TestEmulatedDevice(t *testing.T) {
	r, ctx, lib := emuContext(t)
	count := live(t, lib)
	exercise(t, ctx, kernelsPTX(t, r, ctx))
	if n := count(0); n == 0 {
		t.Fatal("no live allocations before Close: the test's buffers should be left to it")
	}
	if err := ctx.Close(); err != nil {
		t.Fatal(err)
	}
	cudatest.LibOpener{Lib: lib}.CheckReleased(t)
	if err := ctx.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := cuda.Alloc[float32](ctx, 1); err == nil || err.Error() != "cuda: the context is closed" {
		t.Errorf("Alloc after Close: %v", err)
	}
}

// TestLoadCUBIN compiles the kernels to a CUBIN with the emulated
// device's NVRTC opened on its own (cuda.OpenCompiler for sm_90), loads
// the image as a module, unchanged (no NUL added after the ELF image),
// and runs a kernel of it.
func TestLoadCUBIN(t *testing.T) {
	_, ctx, lib := emuContext(t)
	c, err := cuda.OpenCompiler(dirOpener{lib}, cuda.NVRTC13, "sm_90")
	if err != nil {
		t.Fatal(err)
	}
	cubin, err := c.Compile(kern.Name, kern.Source(), kern.Options()...)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(cubin), "\x7fELF") {
		t.Fatalf("image %.40q is not a CUBIN", cubin)
	}
	mod, err := ctx.LoadModule(cubin)
	if err != nil {
		t.Fatal(err)
	}
	fill, err := mod.Kernel("spn_fill")
	if err != nil {
		t.Fatal(err)
	}
	y, err := cuda.NewBuffer(ctx, make([]float32, 3))
	if err != nil {
		t.Fatal(err)
	}
	if err := fill.Launch(1, 3, y, float32(2.5), 3); err != nil {
		t.Fatal(err)
	}
	got := make([]float32, 3)
	if err := cuda.Download(got, y); err != nil {
		t.Fatal(err)
	}
	if got[0] != 2.5 || got[1] != 2.5 || got[2] != 2.5 {
		t.Errorf("spn_fill from the CUBIN wrote %v, want 2.5 three times", got)
	}
}

// TestLaunchChecksArguments: a launch whose arguments do not match the
// kernel's table is refused before it reaches the driver (the output
// keeps its values), and one that matches runs.
func TestLaunchChecksArguments(t *testing.T) {
	r, ctx, _ := emuContext(t)
	mod, err := ctx.LoadModule(kernelsPTX(t, r, ctx))
	if err != nil {
		t.Fatal(err)
	}
	k, err := mod.Kernel("spn_bias_relu") // (float* y, float* x, float* b, int n, int d, int relu)
	if err != nil {
		t.Fatal(err)
	}
	f32 := func(x ...float32) *cuda.Buffer {
		b, err := cuda.NewBuffer(ctx, x)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	y, x, b := f32(7, 7), f32(-1, 2), f32(0.5)
	f64, err := cuda.NewBuffer(ctx, []float64{0.5})
	if err != nil {
		t.Fatal(err)
	}
	freed := f32(1)
	if err := freed.Free(); err != nil {
		t.Fatal(err)
	}
	_, other, _ := emuContext(t)
	foreign, err := cuda.NewBuffer(other, []float32{1})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name        string
		grid, block int
		args        []any
		want        string
	}{
		{"too few", 1, 2, []any{y, x, b, 2, 1}, "cuda: launching spn_bias_relu: 5 arguments for the 6 parameters (float* y, float* x, float* b, int n, int d, int relu)"},
		{"too many", 1, 2, []any{y, x, b, 2, 1, 1, 1}, "7 arguments for the 6 parameters"},
		{"float for int", 1, 2, []any{y, x, b, float32(2), 1, 1}, "argument 3 (int n): float32, want int"},
		{"int64 for int", 1, 2, []any{y, x, b, int64(2), 1, 1}, "argument 3 (int n): int64, want int"},
		{"int too big", 1, 2, []any{y, x, b, 1 << 40, 1, 1}, "argument 3 (int n): 1099511627776 does not fit a C int"},
		{"slice for pointer", 1, 2, []any{y, []float32{1, 2}, b, 2, 1, 1}, "argument 1 (float* x): []float32 is not a device buffer"},
		{"double buffer for float*", 1, 2, []any{y, x, f64, 2, 1, 1}, "argument 2 (float* b): the buffer holds double*, want float*"},
		{"freed buffer", 1, 2, []any{y, freed, b, 2, 1, 1}, "argument 1 (float* x): the buffer is freed"},
		{"other context", 1, 2, []any{y, foreign, b, 2, 1, 1}, "argument 1 (float* x): the buffer belongs to another context"},
		{"buffer for int", 1, 2, []any{y, x, b, x, 1, 1}, "argument 3 (int n): *cuda.Buffer, want int"},
		{"no blocks", 0, 2, []any{y, x, b, 2, 1, 1}, "0 blocks of 2 threads: want 1 to 2147483647 blocks of 1 to 1024 threads"},
		{"block too big", 1, 2048, []any{y, x, b, 2, 1, 1}, "1 blocks of 2048 threads"},
	} {
		err := k.Launch(c.grid, c.block, c.args...)
		var ae *cuda.ArgError
		if !errors.As(err, &ae) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an *ArgError with %q", c.name, err, c.want)
		}
	}
	got := make([]float32, 2)
	if err := cuda.Download(got, y); err != nil {
		t.Fatal(err)
	}
	if got[0] != 7 || got[1] != 7 {
		t.Fatalf("a refused launch ran: y = %v", got)
	}
	if err := k.Launch(1, 2, y, x, b, int32(2), 1, 1); err != nil {
		t.Fatal(err)
	}
	if err := cuda.Download(got, y); err != nil {
		t.Fatal(err)
	}
	if got[0] != 0 || got[1] != 2.5 {
		t.Fatalf("y = %v, want [0 2.5]", got)
	}
	// A null pointer is nil or a nil *Buffer: spn_hop_aggregate's sums
	// and eps may be null.
	agg, err := mod.Kernel("spn_hop_aggregate")
	if err != nil {
		t.Fatal(err)
	}
	ptr, err := cuda.NewBuffer(ctx, []int32{0, 0, 0})
	if err != nil {
		t.Fatal(err)
	}
	idx, err := cuda.NewBuffer(ctx, []int32{0})
	if err != nil {
		t.Fatal(err)
	}
	if err := agg.Launch(1, 2, y, nil, x, ptr, idx, b, (*cuda.Buffer)(nil), 1, 2, 1); err != nil {
		t.Fatal(err)
	}
	if err := cuda.Download(got, y); err != nil {
		t.Fatal(err)
	}
	if got[0] != 0 || got[1] != 0 { // scale 0 without eps, no neighbours
		t.Fatalf("y = %v, want zeros", got)
	}
}

// TestDeviceErrors: the driver's failures are errors naming the call,
// and misuse is refused before the driver sees it.
func TestDeviceErrors(t *testing.T) {
	r, ctx, _ := emuContext(t)
	if _, err := ctx.LoadModule(nil); err == nil || err.Error() != "cuda: cuModuleLoadData failed: CUDA_ERROR_INVALID_PTX (218) (0 bytes of PTX on Fake GPU): the driver's PTX JIT rejects the PTX" {
		t.Errorf("empty PTX: %v", err)
	}
	mod, err := ctx.LoadModule([]byte("// a module without kernels"))
	if err != nil {
		t.Fatal(err)
	}
	var ce *cuda.CallError
	if _, err := mod.Kernel("spn_bias_relu"); !errors.As(err, &ce) || err.Error() != "cuda: cuModuleGetFunction failed: CUDA_ERROR_NOT_FOUND (500) (kernel spn_bias_relu)" {
		t.Errorf("kernel not in the module: %v", err)
	}
	if _, err := mod.Kernel("spn_nope"); err == nil || !strings.Contains(err.Error(), `no kernel "spn_nope" in spn's kernel table`) {
		t.Errorf("kernel not in the table: %v", err)
	}
	if err := mod.Unload(); err != nil {
		t.Fatal(err)
	}
	if _, err := mod.Kernel("spn_bias_relu"); err == nil || !strings.Contains(err.Error(), "the module is unloaded") {
		t.Errorf("kernel of an unloaded module: %v", err)
	}
	b, err := cuda.NewBuffer(ctx, []float32{1, 2, 3})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		err  error
		want string
	}{
		{"short upload", cuda.Upload(b, []float32{1}), "cuda: copying 1 values into a buffer of 3"},
		{"long download", cuda.Download(make([]float32, 4), b), "cuda: copying from the device: the buffer holds 3 values, want 4"},
		{"wrong type", cuda.Download(make([]int32, 3), b), "cuda: copying from the device: the buffer holds float*, want int*"},
		{"negative alloc", func() error { _, err := cuda.Alloc[float64](ctx, -1); return err }(), "cuda: cannot allocate -1 values of double"},
	} {
		if c.err == nil || c.err.Error() != c.want {
			t.Errorf("%s: %v, want %q", c.name, c.err, c.want)
		}
	}
	blas, err := ctx.NewBLAS()
	if err != nil {
		t.Fatal(err)
	}
	if err := blas.Sgemm(false, false, 2, 2, 1, 1, b, b, 0, b); err == nil || err.Error() != "cuda: Sgemm C: the buffer holds 3 values, want 4" {
		t.Errorf("Sgemm into too small a C: %v", err)
	}
	if err := blas.Sgemm(false, false, 1, 1, 1, 1, b, nil, 0, b); err == nil || err.Error() != "cuda: Sgemm: B is nil" {
		t.Errorf("Sgemm without B: %v", err)
	}
	if err := blas.Destroy(); err != nil {
		t.Fatal(err)
	}
	if err := blas.Sgemm(false, false, 1, 1, 1, 1, b, b, 0, b); err == nil || err.Error() != "cuda: Sgemm: the cuBLAS handle is destroyed" {
		t.Errorf("Sgemm after Destroy: %v", err)
	}
	if err := b.Free(); err != nil {
		t.Fatal(err)
	}
	if err := b.Free(); err != nil {
		t.Errorf("second Free: %v", err)
	}
	if err := cuda.Upload(b, []float32{1, 2, 3}); err == nil || err.Error() != "cuda: copying to the device: the buffer is freed" {
		t.Errorf("upload to a freed buffer: %v", err)
	}

	// A driver without the compute entry points (testdata/fakecuda.c
	// alone) probes, and NewContext names the missing symbol.
	cc, why := kerntest.Compiler()
	if cc == "" {
		t.Skip(why)
	}
	lib := filepath.Join(t.TempDir(), "libfakecuda.so")
	if out, err := exec.Command(cc, "-shared", "-fPIC", "-o", lib, filepath.Join("testdata", "fakecuda.c")).CombinedOutput(); err != nil {
		t.Fatalf("building the fake library: %v\n%s", err, out)
	}
	old, err := cuda.Probe(dirOpener{lib})
	if err != nil {
		t.Fatal(err)
	}
	var se *cuda.SymbolError
	if _, err := old.NewContext(0); !errors.As(err, &se) || se.Symbol != "cuDevicePrimaryCtxRetain" {
		t.Errorf("NewContext on a driver without the compute API: %v", err)
	}
	if _, err := r.NewContext(1); err == nil || !strings.Contains(err.Error(), "no device cuda:1") {
		t.Errorf("NewContext(1): %v", err)
	}
}

// TestContextAcrossGoroutines uses one context from many goroutines that
// do not lock their OS threads: every call makes the context current on
// its own thread (the emulated driver, like the real one, refuses a call
// on a thread without a current context).
func TestContextAcrossGoroutines(t *testing.T) {
	_, ctx, _ := emuContext(t)
	var wg sync.WaitGroup
	errs := make([]error, 16)
	for g := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				x := []int32{int32(g), int32(i)}
				b, err := cuda.NewBuffer(ctx, x)
				if err != nil {
					errs[g] = err
					return
				}
				got := make([]int32, 2)
				if err := cuda.Download(got, b); err != nil || got[0] != x[0] || got[1] != x[1] {
					errs[g] = fmt.Errorf("round trip %v → %v (%v)", x, got, err)
					return
				}
				if err := b.Free(); err != nil {
					errs[g] = err
					return
				}
				runtime.Gosched()
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkLaunch measures the host side of a launch through the typed
// launcher on the emulated device: checking and marshalling six
// arguments, making the context current and the purego call, with a
// kernel of one thread's work (spn_bias_relu on one value).
func BenchmarkLaunch(b *testing.B) {
	lib := emulator(b)
	r, err := cuda.Probe(dirOpener{lib})
	if err != nil {
		b.Fatal(err)
	}
	ctx, err := r.NewContext(0)
	if err != nil {
		b.Fatal(err)
	}
	defer ctx.Close()
	c, err := r.Compiler(ctx.Device)
	if err != nil {
		b.Fatal(err)
	}
	ptx, err := c.Compile(kern.Name, kern.Source(), kern.Options()...)
	if err != nil {
		b.Fatal(err)
	}
	mod, err := ctx.LoadModule(ptx)
	if err != nil {
		b.Fatal(err)
	}
	k, err := mod.Kernel("spn_bias_relu")
	if err != nil {
		b.Fatal(err)
	}
	y, err := cuda.NewBuffer(ctx, []float32{0})
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if err := k.Launch(1, 1, y, y, y, 1, 1, 1); err != nil {
			b.Fatal(err)
		}
	}
}

// TestComputeMode: a GPU's compute mode is part of its Device
// (CU_DEVICE_ATTRIBUTE_COMPUTE_MODE, named in String when not the
// default); Usable refuses a prohibited GPU, and a context that cannot
// be opened says what the mode means: a prohibited GPU fails to retain
// its primary context with CUDA_ERROR_UNKNOWN, one in exclusive-process
// mode that another process holds with CUDA_ERROR_DEVICE_UNAVAILABLE.
// Nothing stays retained.
func TestComputeMode(t *testing.T) {
	lib := emulator(t)
	emu := cudatest.LibOpener{Lib: lib}
	t.Cleanup(func() { emu.SetComputeMode(t, 0) })
	const dev = "Fake GPU (cuda:0, compute capability 9.0, 5.0 GiB, driver CUDA 13.0"
	for _, c := range []struct {
		mode         cuda.ComputeMode
		usable, open string
	}{
		{cuda.ComputeDefault, "", ""},
		{cuda.ComputeExclusiveProcess, "", "cuda: cuDevicePrimaryCtxRetain failed: CUDA_ERROR_DEVICE_UNAVAILABLE (46) (device " + dev + ", compute mode exclusive-process)): its compute mode is exclusive-process and another process holds it (nvidia-smi lists the processes on it); wait for that process, or use another GPU"},
		{cuda.ComputeProhibited,
			"cuda: " + dev + ", compute mode prohibited): its compute mode is prohibited, so no process may use it (nvidia-smi -q -d COMPUTE shows the mode; an administrator changes it with nvidia-smi -c)",
			"cuda: cuDevicePrimaryCtxRetain failed: CUDA_ERROR_UNKNOWN (999) (device " + dev + ", compute mode prohibited)): its compute mode is prohibited, so no process may use it (nvidia-smi -q -d COMPUTE shows the mode; an administrator changes it with nvidia-smi -c)"},
	} {
		emu.SetComputeMode(t, int(c.mode))
		r, d := device0(t, lib)
		if d.ComputeMode != c.mode {
			t.Errorf("mode %v: the device reports %v", c.mode, d.ComputeMode)
		}
		if got := errString(d.Usable()); got != c.usable {
			t.Errorf("mode %v: Usable %q, want %q", c.mode, got, c.usable)
		}
		ctx, err := r.NewContext(0)
		if got := errString(err); got != c.open {
			t.Errorf("mode %v: NewContext %q, want %q", c.mode, got, c.open)
		}
		if err == nil {
			if err := ctx.Close(); err != nil {
				t.Fatal(err)
			}
		}
		if n := emu.Live(t, 3); n != 0 {
			t.Errorf("mode %v: %d primary context references left", c.mode, n)
		}
	}
}

// errString is err's message, "" for nil.
func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestBLASAfterFault: when a kernel has faulted and the first call to
// meet the sticky error is a cuBLAS product, whose status is
// CUBLAS_STATUS_EXECUTION_FAILED whatever the driver said, the error
// joins the stream's (cuStreamSynchronize's CUDA_ERROR_ILLEGAL_ADDRESS),
// so it is cuda.ErrContextLost, as a launch meeting it first would be;
// a product refused for its operands is not.
func TestBLASAfterFault(t *testing.T) {
	r, ctx, lib := emuContext(t)
	emu := cudatest.LibOpener{Lib: lib}
	t.Cleanup(func() { emu.SetFault(t, 0) })
	k := loadKernels(t, r, ctx, "spn_bias_relu")[0]
	y, err := cuda.NewBuffer(ctx, []float32{1, 2})
	if err != nil {
		t.Fatal(err)
	}
	blas, err := ctx.NewBLAS()
	if err != nil {
		t.Fatal(err)
	}
	if err := blas.Sgemm(false, false, 1, 1, 1, 1, y, y, 0, y); err != nil {
		t.Fatalf("Sgemm before the fault: %v", err)
	}
	emu.SetFault(t, 1)
	if err := k.Launch(1, 2, y, y, y, int32(2), 1, 1); err != nil {
		t.Fatalf("the faulting launch: %v (it should succeed, as on a GPU)", err)
	}
	err = blas.Sgemm(false, false, 1, 1, 1, 1, y, y, 0, y)
	const want = "cuda: cublasSgemm_v2 failed: CUBLAS_STATUS_EXECUTION_FAILED (13); the stream: cuda: cuStreamSynchronize failed: CUDA_ERROR_ILLEGAL_ADDRESS (700)"
	if got := errString(err); got != want {
		t.Errorf("Sgemm after the fault: %q, want %q", got, want)
	}
	if !errors.Is(err, cuda.ErrContextLost) {
		t.Errorf("Sgemm after the fault: %v is not cuda.ErrContextLost", err)
	}
	err = blas.SgemmStridedBatched(false, false, 1, 1, 1, 1, y, 1, 0, y, 1, 0, 0, y, 1, 1, 2)
	if !errors.Is(err, cuda.ErrContextLost) || !strings.Contains(err.Error(), "cublasSgemmStridedBatched failed: CUBLAS_STATUS_EXECUTION_FAILED (13); the stream:") {
		t.Errorf("SgemmStridedBatched after the fault: %v, want cuda.ErrContextLost naming both calls", err)
	}
	var ce *cuda.CallError
	if !errors.As(err, &ce) || ce.Call != "cublasSgemmStridedBatched" {
		t.Errorf("SgemmStridedBatched after the fault: errors.As finds %+v, want the cuBLAS call first", ce)
	}
}

// TestView: cuda.View carves values of another type from a buffer's
// bytes (float64 from float32 memory, as the engine's arena does); they
// read and write that memory, and a view past the buffer, at a negative
// or misaligned offset, or of a negative length is refused.
func TestView(t *testing.T) {
	_, ctx, _ := emuContext(t)
	b, err := cuda.Alloc[float32](ctx, 64) // 256 bytes
	if err != nil {
		t.Fatal(err)
	}
	d, err := cuda.View[float64](b, 8, 3)
	if err != nil {
		t.Fatal(err)
	}
	if d.Len() != 3 || d.Kind() != kern.F64Ptr {
		t.Fatalf("a view of 3 doubles is %v", d)
	}
	if err := cuda.Upload(d, []float64{1.5, -2, 1e300}); err != nil {
		t.Fatal(err)
	}
	got := make([]float64, 3)
	if err := cuda.Download(got, d); err != nil || got[0] != 1.5 || got[1] != -2 || got[2] != 1e300 {
		t.Errorf("the view's values back: %v, %v", got, err)
	}
	f := make([]float32, 64)
	if err := cuda.Download(f, b); err != nil {
		t.Fatal(err)
	}
	if bits := math.Float64bits(-2); math.Float32bits(f[4]) != uint32(bits) || math.Float32bits(f[5]) != uint32(bits>>32) {
		t.Errorf("the buffer's values 4 and 5 are %v, %v: not the view's second double", f[4], f[5])
	}
	if _, err := cuda.View[float64](b, 248, 1); err != nil {
		t.Errorf("the buffer's last double: %v", err)
	}
	for _, c := range []struct{ off, n int }{{256, 1}, {248, 2}, {-8, 1}, {4, 1}, {0, -1}, {0, 1 << 60}} {
		if _, err := cuda.View[float64](b, c.off, c.n); err == nil {
			t.Errorf("%d doubles from byte %d of 256: no error", c.n, c.off)
		}
	}
	if _, err := cuda.View[float64](b, 4, 1); err == nil || err.Error() != "cuda: 1 values of double from byte 4 of a buffer of 256 bytes" {
		t.Errorf("a misaligned view: %v", err)
	}
}
