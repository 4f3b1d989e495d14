package cudatest

import (
	"fmt"
	"os"
	"testing"
)

// RequireEnv is the environment variable that makes a missing GPU a test
// failure instead of a skip: scripts/gpu-check.sh sets it to 1, so that
// on a GPU machine a test cannot pass by skipping.
const RequireEnv = "SPN_REQUIRE_GPU"

// NoGPU ends a test that needs a usable GPU and has none: it skips with
// the reason, or fails when RequireEnv is "1".
func NoGPU(t testing.TB, format string, args ...any) {
	t.Helper()
	reason := fmt.Sprintf(format, args...)
	if os.Getenv(RequireEnv) == "1" {
		t.Fatalf("no usable GPU, and %s=1: %s", RequireEnv, reason)
	}
	t.Skipf("no usable GPU: %s", reason)
}

// CacheEnv names the directory of the kernel cache (cuda.Compiler's
// CompileCached) that the GPU tests of every test binary share, so that
// a check compiles the kernels once: scripts/gpu-check.sh sets it for its
// runs of the GPU tests. Unset, each test compiles into a temporary
// directory of its own. It is meant for runs on a GPU only: the emulated
// device's NVRTC names itself as a real one does, so its output must not
// enter a cache a GPU reads.
const CacheEnv = "SPN_CUDA_CACHE"

// KernelCacheDir returns the directory of t's kernel cache: CacheEnv's
// when set, else a temporary directory of t.
func KernelCacheDir(t testing.TB) string {
	if dir := os.Getenv(CacheEnv); dir != "" {
		return dir
	}
	return t.TempDir()
}
