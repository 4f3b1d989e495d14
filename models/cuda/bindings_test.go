package cuda_test

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/spn-project/spn/models/cuda"
)

// dirOpener opens every library as one file of dir through the system's
// dynamic loader.
type dirOpener struct{ lib string }

func (o dirOpener) Open(string) (cuda.Library, error) { return cuda.System().Open(o.lib) }
func (o dirOpener) Where() string                     { return o.lib }

// TestSystemBindings builds testdata/fakecuda.c as a shared library with
// the system C compiler and runs discovery and NVRTC through purego and
// the real dynamic loader: the bindings' C signatures, checked without a
// GPU, a CUBIN's entry points (cuda.OpenCompiler) included, and the
// architecture the compiler picks for a GPU newer than NVRTC knows.
func TestSystemBindings(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("spn loads CUDA on Linux only")
	}
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Skip("no C compiler (cc) on PATH: the binding test builds a fake CUDA library with one")
	}
	lib := filepath.Join(t.TempDir(), "libfakecuda.so")
	if out, err := exec.Command(cc, "-shared", "-fPIC", "-O1", "-Wall", "-Werror", "-o", lib, filepath.Join("testdata", "fakecuda.c")).CombinedOutput(); err != nil {
		t.Fatalf("building the fake library: %v\n%s", err, out)
	}
	r, d := device0(t, lib)
	if got := d.String(); got != "Fake GPU (cuda:0, compute capability 9.0, 5.0 GiB, driver CUDA 13.0)" {
		t.Fatalf("device %q", got)
	}
	c, err := r.Compiler(d)
	if err != nil {
		t.Fatal(err)
	}
	// A GPU the fake NVRTC (7.5, 8.0, 9.0) knows gets a CUBIN of its own
	// architecture; one it does not know gets PTX of the newest
	// architecture below it, which the driver compiles for it.
	for _, tc := range []struct {
		major, minor int
		want         string
	}{{9, 0, "sm_90"}, {8, 6, "compute_80"}, {10, 0, "compute_90"}, {12, 1, "compute_90"}} {
		fc, err := r.Compiler(cuda.Device{Name: "GPU", Major: tc.major, Minor: tc.minor})
		if err != nil || fc.Arch != tc.want {
			t.Errorf("compute capability %d.%d: %v, %v; want %s", tc.major, tc.minor, fc, err, tc.want)
		}
	}
	src := "extern \"C\" __global__ void k() {}"
	ptx, err := c.Compile("k.cu", src, "--fmad=false", "-lineinfo")
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("\x7fELF// %d bytes of k.cu, --gpu-architecture=sm_90 --fmad=false -lineinfo\n%s\x00", len(src), src); string(ptx) != want {
		t.Fatalf("CUBIN %q, want %q", ptx, want)
	}
	_, err = c.Compile("bad.cu", "#error x")
	if err == nil || !strings.Contains(err.Error(), "NVRTC_ERROR_COMPILATION (6)\nbad.cu(1): catastrophic error: #error directive") {
		t.Fatalf("compile error: %v", err)
	}
	// A CUBIN, through NVRTC opened on its own.
	sm, err := cuda.OpenCompiler(dirOpener{lib}, cuda.NVRTC13, "sm_90")
	if err != nil {
		t.Fatal(err)
	}
	cubin, log, err := sm.CompileLog("k.cu", src, "--fmad=false")
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("\x7fELF// %d bytes of k.cu, --gpu-architecture=sm_90 --fmad=false\n%s\x00", len(src), src); string(cubin) != want || log != "" {
		t.Fatalf("CUBIN %q, log %q; want %q and no log", cubin, log, want)
	}
}

// TestPickArch: the device's own architecture when NVRTC targets it, else
// the newest below it; none when NVRTC targets only newer ones.
func TestPickArch(t *testing.T) {
	nvrtc13 := []int{75, 80, 86, 87, 88, 89, 90, 100, 103, 110, 120, 121}
	for _, tc := range []struct {
		archs []int
		cc    int
		want  int
		ok    bool
	}{
		{nvrtc13, 90, 90, true},
		{nvrtc13, 89, 89, true},
		{nvrtc13, 130, 121, true}, // a GPU newer than this NVRTC
		{[]int{50, 60, 70, 75, 80, 86, 89, 90}, 100, 90, true},
		{nvrtc13, 70, 0, false}, // Volta: CUDA 13 no longer targets it
		{[]int{90, 80}, 85, 80, true},
	} {
		got, ok := cuda.PickArch(tc.archs, tc.cc)
		if got != tc.want || ok != tc.ok {
			t.Errorf("PickArch(%v, %d) = %d, %v; want %d, %v", tc.archs, tc.cc, got, ok, tc.want, tc.ok)
		}
	}
}

// device0 probes the library lib (a fake or the emulated driver) and
// describes its GPU 0.
func device0(t *testing.T, lib string) (*cuda.Runtime, cuda.Device) {
	t.Helper()
	r, err := cuda.Probe(dirOpener{lib})
	if err != nil {
		t.Fatal(err)
	}
	d, err := r.Device(0)
	if err != nil {
		t.Fatal(err)
	}
	return r, d
}
