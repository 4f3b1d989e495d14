package cuda_test

import (
	"os"
	"strings"
	"testing"

	"github.com/spn-project/spn/internal/testkit/cudatest"
	"github.com/spn-project/spn/models/cuda"
)

// TestGPUSystem runs the real loader. Without libcuda.so.1 it asserts the
// message; with one it asserts a device is described, or skips when the
// driver is there but unusable.
func TestGPUSystem(t *testing.T) {
	o := cuda.System()
	if _, err := o.Open(cuda.DriverLib); err != nil {
		_, err := cuda.Probe(o)
		if err == nil {
			t.Fatal("cuda.Probe succeeded without libcuda.so.1")
		}
		for _, w := range []string{"cuda: cannot load the NVIDIA driver API: tried libcuda.so.1 (searched LD_LIBRARY_PATH", "ld.so cache", "libcuda.so.1: "} {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("error %q lacks %q", err, w)
			}
		}
		t.Log(err)
		if os.Getenv(cudatest.RequireEnv) == "1" {
			t.Fatalf("%s=1, but there is no NVIDIA driver", cudatest.RequireEnv)
		}
		return
	}
	r, err := cuda.Probe(o)
	if err != nil {
		cudatest.NoGPU(t, "libcuda.so.1 loads but CUDA is unusable here: %v", err)
	}
	d, err := r.Device(0)
	if err != nil {
		t.Fatal(err)
	}
	if d.Name == "" || d.Major < 5 || d.Memory == 0 {
		t.Fatalf("implausible device %+v", d)
	}
	t.Logf("%v; NVRTC %v (%s), cuBLAS %v (%s)", d, r.NVRTC.Version, r.NVRTC.Name, r.CuBLAS.Version, r.CuBLAS.Name)
}
