package kern_test

import (
	"fmt"
	"testing"

	"github.com/spn-project/spn/internal/testkit/cudatest"
	"github.com/spn-project/spn/models/cuda"
	"github.com/spn-project/spn/models/cuda/kern"
)

// TestGPUNVRTCCompiles compiles kern.Source with the machine's real NVRTC for
// device 0's architecture, through the PTX cache: every kernel of the
// table is a PTX entry with its number of parameters, and a second compile
// is a cache hit with the same PTX. It needs an NVIDIA GPU (skips without
// one; scripts/gpu-check.sh makes that a failure).
func TestGPUNVRTCCompiles(t *testing.T) {
	rt, err := cuda.Probe(cuda.System())
	if err != nil {
		cudatest.NoGPU(t, "%v", err)
	}
	d, err := rt.Device(0)
	if err != nil {
		t.Fatal(err)
	}
	c, err := rt.Compiler(d)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ptx, hit, err := c.CompileCached(dir, kern.Name, kern.Source(), kern.Options()...)
	if err != nil {
		t.Fatalf("%v: %v", d, err)
	}
	if hit {
		t.Error("first compile reported a cache hit")
	}
	checkEntries(t, fmt.Sprintf("NVRTC's PTX for %s", c.Arch), ptx)
	again, hit, err := c.CompileCached(dir, kern.Name, kern.Source(), kern.Options()...)
	if err != nil || !hit || string(again) != string(ptx) {
		t.Errorf("second compile: hit %v, same PTX %v, err %v", hit, string(again) == string(ptx), err)
	}
	t.Logf("%v: NVRTC %v (%s), %d bytes of PTX for %s", d, c.NVRTC.Version, c.NVRTC.Name, len(ptx), c.Arch)
}
