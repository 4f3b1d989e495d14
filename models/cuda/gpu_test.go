package cuda_test

import (
	"testing"

	"github.com/spn-project/spn/internal/testkit/cudatest"
	"github.com/spn-project/spn/models/cuda"
)

// TestGPUDevice runs the device tests (exercise) on GPU 0: the kernels
// compiled by the machine's NVRTC through the PTX cache, loaded, launched
// and compared with the CPU code; cuBLAS's Sgemm through the row-major
// wrapper. Without a usable GPU it skips (scripts/gpu-check.sh makes that
// a failure).
func TestGPUDevice(t *testing.T) {
	r, ctx := gpuContext(t)
	ptx := kernelsPTX(t, r, ctx)
	t.Logf("%v; NVRTC %v (%s), cuBLAS %v (%s); %d bytes of PTX", ctx.Device, r.NVRTC.Version, r.NVRTC.Name, r.CuBLAS.Version, r.CuBLAS.Name, len(ptx))
	exercise(t, ctx, ptx)
}

// gpuContext returns the runtime and a context on GPU 0, closed when t
// ends (a failure to close fails t); without a usable GPU it skips t.
func gpuContext(t *testing.T) (*cuda.Runtime, *cuda.Context) {
	t.Helper()
	r, err := cuda.Probe(cuda.System())
	if err != nil {
		cudatest.NoGPU(t, "%v", err)
	}
	ctx, err := r.NewContext(0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := ctx.Close(); err != nil {
			t.Error(err)
		}
	})
	return r, ctx
}
