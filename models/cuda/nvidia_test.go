package cuda_test

import (
	"errors"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/spn-project/spn/internal/testkit/cudatest"
	"github.com/spn-project/spn/models/cuda"
	"github.com/spn-project/spn/models/cuda/kern"
)

// recorder is a library that records the names it bound.
type recorder struct {
	cuda.Library
	bound []string
}

func (r *recorder) Bind(fptr any, name string) error {
	err := r.Library.Bind(fptr, name)
	if err == nil {
		r.bound = append(r.bound, name)
	}
	return err
}

// childEnv marks the child process of a test that runs in one of its own
// (inChild); its value is the test's name.
const childEnv = "SPN_TEST_NVIDIA_CHILD"

// inChild reports whether t runs in the child process of its own that a
// test loading NVIDIA's libraries by path needs: once a process has
// loaded libcuda.so.1 by path, the loader finds it by name, and
// TestGPUSystem expects none. In the parent it runs t alone in a child
// process, fails t when the child does not pass, logs the child's
// output and returns false.
func inChild(t *testing.T) bool {
	t.Helper()
	if os.Getenv(childEnv) == t.Name() {
		return true
	}
	cmd := exec.Command(os.Args[0], "-test.run=^"+t.Name()+"$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), childEnv+"="+t.Name())
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: "+t.Name()) {
		t.Fatalf("the child process: %v\n%s", err, out)
	}
	t.Logf("the child process:\n%s", out)
	return false
}

// TestNVIDIADriverWithoutGPU loads NVIDIA's driver API (libcuda.so.1 of
// cudatest.NVIDIALibsEnv; Debian's driver 550, CUDA 12.4) on a machine
// without a GPU: every driver entry point spn binds anywhere binds
// (cuda.BindDriver: discovery's, a context's, profiling's, with
// cuEventElapsedTime where the driver lacks cuEventElapsedTime_v2, as
// 550 does), and Probe fails without a panic, naming
// CUDA_ERROR_NO_DEVICE and wrapping cuda.ErrNoDevice. In a child
// process (inChild).
func TestNVIDIADriverWithoutGPU(t *testing.T) {
	libs := cudatest.RealNVIDIA(t)
	if !inChild(t) {
		return
	}
	lib, err := libs.Open(cuda.DriverLib)
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{Library: lib}
	names, err := cuda.BindDriver(rec)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if !slices.Contains(rec.bound, n) {
			t.Errorf("%s was not bound", n)
		}
	}
	var elapsed []string
	for _, n := range rec.bound {
		if strings.HasPrefix(n, "cuEventElapsedTime") {
			elapsed = append(elapsed, n)
		}
	}
	if len(elapsed) != 1 {
		t.Errorf("bound %v, want one of cuEventElapsedTime_v2 and cuEventElapsedTime", elapsed)
	}
	t.Logf("%d driver entry points bound, among them %v", len(rec.bound), elapsed)

	_, err = cuda.Probe(libs)
	if err == nil {
		t.Fatal("cuda.Probe succeeded without a GPU")
	}
	for _, w := range []string{"cuda: cuInit failed: CUDA_ERROR_NO_DEVICE (100): the NVIDIA driver (CUDA ", ") loaded but sees no CUDA device"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q lacks %q", err, w)
		}
	}
	if !errors.Is(err, cuda.ErrNoDevice) {
		t.Errorf("error %v does not wrap cuda.ErrNoDevice", err)
	}
	t.Log(err)
}

// TestNVIDIACuBLASWithoutGPU loads NVIDIA's cuBLAS (libcublas.so.12 of
// cudatest.NVIDIALibsEnv; Debian's cuBLAS 12.4) on a machine without a
// GPU, as Probe does after the driver: the cuBLAS a CUDA 12.4 driver gets
// is libcublas.so.12, version 12.4 (cublasGetProperty), after
// libcublas.so.13 was looked for; a CUDA 11.8 driver gets none, told why;
// every entry point a BLAS handle uses binds; and cublasCreate_v2, with
// the driver loaded and no GPU, fails with a cuBLAS status that spn
// names, no panic. In a child process (inChild).
func TestNVIDIACuBLASWithoutGPU(t *testing.T) {
	libs := cudatest.RealNVIDIA(t)
	if !inChild(t) {
		return
	}
	got, lib, err := cuda.OpenCuBLAS(libs, cuda.Version{Major: 12, Minor: 4})
	if err != nil {
		t.Fatal(err)
	}
	if want := (cuda.Lib{Name: cuda.CuBLAS12, Version: cuda.Version{Major: 12, Minor: 4}}); got != want {
		t.Errorf("opened %+v, want %+v", got, want)
	}
	_, _, err = cuda.OpenCuBLAS(libs, cuda.Version{Major: 11, Minor: 8})
	var le *cuda.LoadError
	if !errors.As(err, &le) || !slices.Equal(le.Tried, []string{cuda.CuBLAS13, cuda.CuBLAS12}) || !strings.Contains(err.Error(), "; libcublas.so.12: cuBLAS 12.4 needs a CUDA 12 driver, this one is CUDA 11.8") {
		t.Errorf("a CUDA 11.8 driver: error %v, want a *cuda.LoadError having tried %s and %s, saying cuBLAS 12.4 needs a CUDA 12 driver", err, cuda.CuBLAS13, cuda.CuBLAS12)
	}
	rec := &recorder{Library: lib}
	names, err := cuda.BindBLAS(rec, got.Name)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rec.bound, names) {
		t.Errorf("bound %v, want %v", rec.bound, names)
	}
	if _, err := libs.Open(cuda.DriverLib); err != nil {
		t.Fatal(err)
	}
	err = cuda.CreateBLAS(lib, got.Name)
	var ce *cuda.CallError
	if !errors.As(err, &ce) || ce.Call != "cublasCreate_v2" || !strings.HasPrefix(err.Error(), "cuda: cublasCreate_v2 failed: CUBLAS_STATUS_") {
		t.Errorf("cublasCreate_v2 without a GPU: error %v, want a *cuda.CallError naming a CUBLAS_STATUS", err)
	}
	t.Logf("cuBLAS %v (%s): %d entry points bound; %v", got.Version, got.Name, len(rec.bound), err)
}

// TestNVIDIANVRTC compiles with NVIDIA's NVRTC (cudatest.NVIDIALibsEnv;
// Debian's NVRTC 12.4, libnvrtc.so.12, the NVRTC spn loads on a GPU where
// CUDA 13's is missing), opened on its own (cuda.OpenCompiler): the
// architectures it targets (nvrtcGetSupportedArchs) include 5.0 to 9.0,
// and PickArch takes 9.0 for an H100 or H200 and for a GPU newer than
// any of them (10.0); PTX for a virtual architecture,
// NUL-terminated; a CUBIN (an ELF image) for a real one, with ptxas's
// resource lines in its log; and the errors the fakes imitate, with
// NVIDIA's own words: a compile error's log names the file and line of a
// #line directive, and an unknown option is NVRTC_ERROR_INVALID_OPTION.
func TestNVIDIANVRTC(t *testing.T) {
	libs := cudatest.RealNVIDIA(t)
	name := libs.NVRTC(t)
	open := func(arch string) *cuda.Compiler {
		t.Helper()
		c, err := cuda.OpenCompiler(libs, name, arch)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	src := `extern "C" __global__ void k(float* x, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] *= 2; }`

	ptxc := open("compute_90")
	archs, err := ptxc.SupportedArchs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range []int{50, 60, 70, 75, 80, 86, 90} {
		if !slices.Contains(archs, a) {
			t.Errorf("NVRTC %v targets %v, not %d", ptxc.NVRTC.Version, archs, a)
		}
	}
	if !slices.IsSorted(archs) || archs[len(archs)-1] != 90 {
		t.Errorf("NVRTC %v targets %v: want them ascending, the newest 90", ptxc.NVRTC.Version, archs)
	}
	for _, cc := range []int{90, 100} {
		if a, ok := cuda.PickArch(archs, cc); !ok || a != 90 {
			t.Errorf("PickArch(%v, %d) = %d, %v; want 90", archs, cc, a, ok)
		}
	}
	t.Logf("NVRTC %v targets %v", ptxc.NVRTC.Version, archs)
	ptx, err := ptxc.Compile("k.cu", src, "--fmad=false")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(ptx), ".target sm_90") || !strings.Contains(string(ptx), ".visible .entry k(") || ptx[len(ptx)-1] != 0 {
		t.Errorf("PTX %q: want .target sm_90, the entry k, NUL-terminated", ptx)
	}

	cubin, log, err := open("sm_90").CompileLog("k.cu", src, "--fmad=false", "--ptxas-options=-v")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(cubin), "\x7fELF") {
		t.Errorf("CUBIN %.16q is not an ELF image", cubin)
	}
	for _, w := range []string{"Compiling entry function 'k' for 'sm_90'", "bytes spill stores", "registers"} {
		if !strings.Contains(log, w) {
			t.Errorf("log %q lacks %q", log, w)
		}
	}

	_, err = ptxc.Compile(kern.Name, kern.Source()+"#line 1 \"broken.cu\"\n__device__ int x;\n\n#error boom\n")
	var ce *cuda.CompileError
	if !errors.As(err, &ce) {
		t.Fatalf("error %v is not a *cuda.CompileError", err)
	}
	for _, w := range []string{"cannot compile spn_kernels.cu for compute_90: NVRTC_ERROR_COMPILATION (6)", "\nbroken.cu(3): catastrophic error: #error directive: boom"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q lacks %q", err, w)
		}
	}
	if _, err := ptxc.Compile("k.cu", src, "--no-such-option"); err == nil || !strings.Contains(err.Error(), "NVRTC_ERROR_INVALID_OPTION (5)\nnvrtc: error: unrecognized option --no-such-option found") {
		t.Errorf("unknown option: %v", err)
	}
	t.Logf("NVRTC %v (%s): %d bytes of PTX, %d bytes of CUBIN; %v", ptxc.NVRTC.Version, ptxc.NVRTC.Name, len(ptx), len(cubin), err)
}
