// Package enginetest opens device engines for tests: on the emulated
// device (models/cuda's testdata, built with the system C compiler) or on
// a machine's GPU 0.
package enginetest

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/spn-project/spn/models/cuda"
	"github.com/spn-project/spn/models/cuda/cudatest"
	"github.com/spn-project/spn/models/cuda/engine"
)

// Emulated returns an engine on the emulated device, built for the test
// (it skips without a C compiler or off Linux); the test's cleanup
// closes it.
func Emulated(t testing.TB) *engine.Engine {
	t.Helper()
	testdata, err := testdataDir()
	if err != nil {
		t.Fatal(err)
	}
	lib, skip, err := cudatest.BuildEmulator(t.TempDir(), testdata)
	if skip != "" {
		t.Skip(skip)
	}
	if err != nil {
		t.Fatal(err)
	}
	r, err := cuda.Probe(cudatest.LibOpener{Lib: lib})
	if err != nil {
		t.Fatal(err)
	}
	return Open(t, r)
}

// testdataDir finds models/cuda/testdata from the working directory (a
// test runs in its package's directory, inside the module): the first
// parent holding go.mod is the module root.
func testdataDir() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("enginetest: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, "models", "cuda", "testdata"), nil
		}
		up := filepath.Dir(dir)
		if up == dir {
			return "", fmt.Errorf("enginetest: no go.mod above the working directory: the emulated device is built from the module's models/cuda/testdata")
		}
		dir = up
	}
}

// GPU returns an engine on GPU 0; without a usable GPU it ends the test
// with cudatest.NoGPU.
func GPU(t testing.TB) *engine.Engine {
	t.Helper()
	r, err := cuda.Probe(cuda.System())
	if err != nil {
		cudatest.NoGPU(t, "%v", err)
	}
	return Open(t, r)
}

// Open opens an engine on device 0 of r (engine.Open, with the PTX cache
// in a temporary directory); the test's cleanup closes the engine and the
// context.
func Open(t testing.TB, r *cuda.Runtime) *engine.Engine {
	t.Helper()
	o, err := engine.Open(r, 0, t.TempDir())
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
