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
