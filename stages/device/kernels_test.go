package device

import (
	"strings"
	"testing"

	"github.com/spn-project/spn/internal/testkit/cudatest"
	"github.com/spn-project/spn/models/cuda"
)

// TestCompileAndLoadKernels: the kernels compile to a CUBIN for the GPU's
// architecture; on the fake driver, which has discovery only, their load
// fails with the driver's error, on the emulated device it succeeds.
func TestCompileAndLoadKernels(t *testing.T) {
	h200 := cudatest.FakeGPU{Name: "NVIDIA H200", Major: 9, Minor: 0, SMs: 132, Memory: 140 << 30}
	for _, tc := range []struct {
		name    string
		o       func(t *testing.T) cuda.Opener
		loadErr string // "" when the load succeeds
	}{
		{"fake driver", func(*testing.T) cuda.Opener { return cudatest.FakeMachine(h200) }, "cuDevicePrimaryCtxRetain"},
		{"emulator", func(t *testing.T) cuda.Opener { return cudatest.Emulator(t) }, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt, err := cuda.Probe(tc.o(t))
			if err != nil {
				t.Fatal(err)
			}
			d, err := rt.Device(0)
			if err != nil {
				t.Fatal(err)
			}
			image, c, err := CompileKernels(rt, d)
			if err != nil || len(image) == 0 || c.Arch != "sm_90" || !c.CUBIN() {
				t.Fatalf("compile: %d bytes, %v; compiler %+v", len(image), err, c)
			}
			err = LoadKernels(rt, d.Ordinal, image)
			switch {
			case tc.loadErr == "" && err != nil:
				t.Errorf("load: %v", err)
			case tc.loadErr != "" && (err == nil || !strings.Contains(err.Error(), tc.loadErr)):
				t.Errorf("load: %v, want an error with %q", err, tc.loadErr)
			}
		})
	}
}

// TestLoadKernelsEmulated: on the emulated device the module is loaded
// (an empty image is refused) and unloaded again, the context released.
func TestLoadKernelsEmulated(t *testing.T) {
	o := cudatest.Emulator(t)
	rt, err := cuda.Probe(o)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		image []byte
		ok    bool
	}{
		{"image", []byte("// PTX\n.version 8.0\n"), true},
		{"empty image", []byte{0}, false},
	} {
		if err := LoadKernels(rt, 0, tc.image); (err == nil) != tc.ok {
			t.Errorf("%s: %v, want success %v", tc.name, err, tc.ok)
		}
		o.CheckReleased(t)
	}
}
