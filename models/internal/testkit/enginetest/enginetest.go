// Package enginetest opens device engines for tests: on the emulated
// device (models/cuda's testdata, built with the system C compiler) or on
// a machine's GPU 0.
package enginetest

import (
	"testing"

	"github.com/spn-project/spn/internal/testkit/cudatest"
	"github.com/spn-project/spn/models/cuda"
	"github.com/spn-project/spn/models/cuda/engine"
)

// Emulated returns an engine on the emulated device, built for the test
// (it skips without a C compiler or off Linux); the test's cleanup
// closes it.
func Emulated(t testing.TB) *engine.Engine {
	t.Helper()
	e, _ := EmulatedReversible(t)
	return e
}

// EmulatedReversible is Emulated, with a function that makes the
// emulated device run each launch's threads last to first (on) or first
// to last (off; cudatest.LibOpener.SetReverse).
func EmulatedReversible(t testing.TB) (*engine.Engine, func(on bool)) {
	t.Helper()
	lib := cudatest.Emulator(t)
	r, err := cuda.Probe(lib)
	if err != nil {
		t.Fatal(err)
	}
	return Open(t, r), func(on bool) { lib.SetReverse(t, on) }
}

// GPU returns an engine on GPU 0, its kernels through the kernel cache
// the GPU tests share (cudatest.KernelCacheDir); without a usable GPU it
// ends the test with cudatest.NoGPU.
func GPU(t testing.TB) *engine.Engine {
	t.Helper()
	r, err := cuda.Probe(cuda.System())
	if err != nil {
		cudatest.NoGPU(t, "%v", err)
	}
	return OpenIn(t, r, cudatest.KernelCacheDir(t))
}

// Open opens an engine on device 0 of r (engine.Open, with the PTX cache
// in a temporary directory); the test's cleanup closes the engine and the
// context.
func Open(t testing.TB, r *cuda.Runtime) *engine.Engine {
	t.Helper()
	return OpenIn(t, r, t.TempDir())
}

// OpenIn is Open with the PTX cache in dir.
func OpenIn(t testing.TB, r *cuda.Runtime, dir string) *engine.Engine {
	t.Helper()
	o, err := engine.Open(r, 0, dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := o.Close(); err != nil {
			t.Error(err)
		}
	})
	return o.Engine
}
