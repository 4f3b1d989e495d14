package cuda_test

import (
	"errors"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/spn-project/spn/models/cuda"
	"github.com/spn-project/spn/models/cuda/cudatest"
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

// driverChildEnv marks the child process of TestNVIDIADriverWithoutGPU.
const driverChildEnv = "SPN_TEST_NVIDIA_DRIVER_CHILD"

// TestNVIDIADriverWithoutGPU loads NVIDIA's driver API (libcuda.so.1 of
// cudatest.NVIDIALibsEnv; Debian's driver 535, CUDA 12.2) on a machine
// without a GPU: every driver entry point spn binds anywhere binds
// (cuda.BindDriver: discovery's, a context's, profiling's, with
// cuEventElapsedTime where the driver lacks cuEventElapsedTime_v2, as
// 535 does), and Probe fails without a panic, naming
// CUDA_ERROR_NO_DEVICE and wrapping cuda.ErrNoDevice. It runs in a child
// process: once this process had loaded libcuda.so.1 by path, the loader
// would find it by name, and TestSystem expects none.
func TestNVIDIADriverWithoutGPU(t *testing.T) {
	libs := cudatest.RealNVIDIA(t)
	if os.Getenv(driverChildEnv) != "1" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestNVIDIADriverWithoutGPU$", "-test.v", "-test.count=1")
		cmd.Env = append(os.Environ(), driverChildEnv+"=1")
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "--- PASS: TestNVIDIADriverWithoutGPU") {
			t.Fatalf("the child process: %v\n%s", err, out)
		}
		t.Logf("the child process:\n%s", out)
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

// TestNVIDIANVRTC compiles with NVIDIA's NVRTC (cudatest.NVIDIALibsEnv;
// Debian's NVRTC 11.8 standing in for the 12 and 13 spn loads on a GPU),
// opened on its own (cuda.OpenCompiler): PTX for a virtual architecture,
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
