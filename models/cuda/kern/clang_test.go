package kern_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spn-project/spn/models/cuda/kern"
)

// clangPrelude declares, for clang's CUDA mode without the CUDA headers
// (-nocudainc), what NVRTC provides built in: the qualifiers, the math
// functions the kernels call and the bit casts. threadIdx and the others
// come from clang's own __clang_cuda_builtin_vars.h.
const clangPrelude = `#include <__clang_cuda_builtin_vars.h>
#define __global__ __attribute__((global))
#define __device__ __attribute__((device))
#define __forceinline__ __inline__ __attribute__((always_inline))
extern "C" __device__ double exp(double);
extern "C" __device__ double log(double);
extern "C" __device__ double log1p(double);
extern "C" __device__ double sqrt(double);
static __device__ __forceinline__ unsigned int __float_as_uint(float f) { return __builtin_bit_cast(unsigned int, f); }
static __device__ __forceinline__ float __uint_as_float(unsigned int u) { return __builtin_bit_cast(float, u); }
`

// TestClangCUDA compiles kern.Source as CUDA C++ to PTX with clang
// (device side only, no CUDA installation needed) and checks that every
// kernel of the table is an entry point with its number of parameters:
// the real CUDA dialect, checked without a GPU and without CUDA.
func TestClangCUDA(t *testing.T) {
	clang, err := exec.LookPath("clang")
	if err != nil {
		t.Skip("no clang on PATH: the CUDA compile check needs it (apt-get install clang)")
	}
	dir := t.TempDir()
	src, pre, ptx := filepath.Join(dir, kern.Name), filepath.Join(dir, "prelude.h"), filepath.Join(dir, "spn.ptx")
	if err := os.WriteFile(src, []byte(kern.Source()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pre, []byte(clangPrelude), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(clang, "-x", "cuda", "--cuda-device-only", "--cuda-gpu-arch=sm_80", "-nocudainc", "-nocudalib",
		"-ffp-contract=off", "-include", pre, "-S", "-o", ptx, src)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(cmd.Args, " "), err, out)
	}
	text, err := os.ReadFile(ptx)
	if err != nil {
		t.Fatal(err)
	}
	checkEntries(t, "clang's PTX for sm_80", text)
}
