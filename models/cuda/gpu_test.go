package cuda_test

import (
	"testing"

	"github.com/spn-project/spn/models/cuda"
	"github.com/spn-project/spn/models/cuda/cudatest"
)

// TestGPUDevice runs the device tests (exercise) on GPU 0: the kernels
// compiled by the machine's NVRTC through the PTX cache, loaded, launched
// and compared with the CPU code; cuBLAS's Sgemm through the row-major
// wrapper. Without a usable GPU it skips (scripts/gpu-check.sh makes that
// a failure).
func TestGPUDevice(t *testing.T) {
	r, err := cuda.Probe(cuda.System())
	if err != nil {
		cudatest.NoGPU(t, "%v", err)
	}
	ctx, err := r.NewContext(0)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := ctx.Close(); err != nil {
			t.Error(err)
		}
	}()
	ptx := kernelsPTX(t, r, ctx)
	t.Logf("%v; NVRTC %v (%s), cuBLAS %v (%s); %d bytes of PTX", ctx.Device, r.NVRTC.Version, r.NVRTC.Name, r.CuBLAS.Version, r.CuBLAS.Name, len(ptx))
	exercise(t, ctx, ptx)
}
