package cudatest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/spn-project/spn/internal/testkit/kerntest"
	"github.com/spn-project/spn/models/cuda"
	"github.com/spn-project/spn/models/cuda/kern"
)

// BuildEmulator builds the emulated CUDA device as one shared library in
// dir, from models/cuda's testdata directory (testdata: fakecuda.c for
// discovery and NVRTC, emudevice.c for contexts, memory, modules,
// launches and cuBLAS's Sgemm on the host) and a generated unit holding
// kern.Source() behind kerntest's prelude and dispatcher. It returns the
// library's path, or a reason to skip (not Linux, no C compiler), or the
// compiler's error.
func BuildEmulator(dir, testdata string) (lib, skip string, err error) {
	if runtime.GOOS != "linux" {
		return "", "spn loads CUDA on Linux only", nil
	}
	cc, why := kerntest.Compiler()
	if cc == "" {
		return "", why, nil
	}
	gen := filepath.Join(dir, "kernels.c")
	src := kerntest.Prelude + kern.Source() + "\n#line 1 \"dispatch.c\"\n" + kerntest.Launch + kerntest.Dispatch(kern.Kernels())
	if err := os.WriteFile(gen, []byte(src), 0o644); err != nil {
		return "", "", err
	}
	lib = filepath.Join(dir, "libemucuda.so")
	args := append(kerntest.CFlags(), "-D_POSIX_C_SOURCE=200809L", "-shared", "-fPIC", "-o", lib,
		filepath.Join(testdata, "fakecuda.c"), filepath.Join(testdata, "emudevice.c"), gen, "-lm")
	cmd := exec.Command(cc, args...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", "", fmt.Errorf("%s: %v\n%s", strings.Join(cmd.Args, " "), err, out)
	}
	return lib, "", nil
}

// Emulator builds the emulated device for the test t (BuildEmulator in a
// temporary directory, from the module's models/cuda/testdata) and returns
// its opener; it skips t off Linux or without a C compiler.
func Emulator(t testing.TB) LibOpener {
	t.Helper()
	testdata, err := testdataDir()
	if err != nil {
		t.Fatal(err)
	}
	lib, skip, err := BuildEmulator(t.TempDir(), testdata)
	if skip != "" {
		t.Skip(skip)
	}
	if err != nil {
		t.Fatal(err)
	}
	return LibOpener{Lib: lib}
}

// testdataDir finds models/cuda/testdata from the working directory (a
// test runs in its package's directory, inside the module): the first
// parent holding go.mod is the module root.
func testdataDir() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("cudatest: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, "models", "cuda", "testdata"), nil
		}
		up := filepath.Dir(dir)
		if up == dir {
			return "", fmt.Errorf("cudatest: no go.mod above the working directory: the emulated device is built from the module's models/cuda/testdata")
		}
		dir = up
	}
}

// LibOpener opens the one library Lib for every name asked for: the
// emulated device serves the driver, NVRTC and cuBLAS from one file.
type LibOpener struct{ Lib string }

// Open implements cuda.Opener.
func (o LibOpener) Open(string) (cuda.Library, error) { return cuda.System().Open(o.Lib) }

// SetMemory makes the emulated device's memory bytes (0: the host's):
// an allocation past it fails with CUDA_ERROR_OUT_OF_MEMORY, as on a
// full device. It holds for the library's life (every context).
func (o LibOpener) SetMemory(t testing.TB, bytes uint64) {
	t.Helper()
	o.setting(t, "spn_emu_set_memory")(bytes)
}

// SetDevices makes the emulated driver see n GPUs (1 at the start), all
// alike ("Fake GPU", compute capability 9.0), each with a primary
// context; they share the emulated memory. It holds for the library's
// life.
func (o LibOpener) SetDevices(t testing.TB, n int) {
	t.Helper()
	o.setting(t, "spn_emu_set_devices")(uint64(n))
}

// SetComputeMode makes the emulated devices report compute mode m (0
// default, 2 prohibited, 3 exclusive-process): with 2 retaining a
// primary context fails with CUDA_ERROR_UNKNOWN, as on a GPU, and with 3
// with CUDA_ERROR_DEVICE_UNAVAILABLE, as though another process held the
// GPU. It holds for the library's life.
func (o LibOpener) SetComputeMode(t testing.TB, m int) {
	t.Helper()
	o.setting(t, "spn_emu_set_compute_mode")(uint64(m))
}

// SetFault makes the n-th launch from now fault, as a kernel reading an
// illegal address does on a GPU: the launch succeeds without running,
// and the device's later calls fail with CUDA_ERROR_ILLEGAL_ADDRESS (a
// sticky error) until every reference to its primary context is
// released. 0 cancels a fault not yet made. It holds for the library's
// life.
func (o LibOpener) SetFault(t testing.TB, n int) {
	t.Helper()
	o.setting(t, "spn_emu_set_fault")(uint64(n))
}

// SetNoExec makes the emulated device's launches and products return at
// once, computing and checking nothing (on), or run again (off): their
// results are garbage, and what is left of a device step is the host's
// side of it, for a benchmark. It holds for the library's life.
func (o LibOpener) SetNoExec(t testing.TB, on bool) {
	t.Helper()
	o.flag(t, "spn_emu_set_noexec", on)
}

// SetReverse makes the emulated device run each launch's threads last to
// first (on) or first to last (off, the start), for the check that a
// kernel's result does not depend on their order (kerntest.Launch). It
// holds for the library's life.
func (o LibOpener) SetReverse(t testing.TB, on bool) {
	t.Helper()
	o.flag(t, "spn_emu_set_reverse", on)
}

// Live returns the emulated device's count of live objects of one kind,
// for a leak check: what is 0 for allocations of device memory, 1
// modules, 2 cuBLAS handles, 3 references to the primary context, 4
// events, 5 allocations of page-locked host memory, 6 asynchronous
// copies the host has not waited for, 7 streams; and 8, how many
// launches, cuBLAS products, asynchronous copies and event records went
// on the legacy default stream so far (a count, not a leak: spn's work
// goes on its Contexts' streams).
func (o LibOpener) Live(t testing.TB, what int) int {
	t.Helper()
	var live func(int32) int32
	o.bind(t, "spn_emu_live", &live)
	return int(live(int32(what)))
}

// CheckReleased fails t, naming each, for the kinds of object that Live
// counts (0 to 7) of which the emulated device still holds any: after
// the last Context's Close, a leak.
func (o LibOpener) CheckReleased(t testing.TB) {
	t.Helper()
	for what, name := range [...]string{"device allocations", "modules", "cuBLAS handles", "primary context references",
		"events", "page-locked allocations", "pending copies", "streams"} {
		if n := o.Live(t, what); n != 0 {
			t.Errorf("%d %s left on the emulated device", n, name)
		}
	}
}

// flag sets the emulated device's switch name (a setter of one integer
// argument) to 1 (on) or 0.
func (o LibOpener) flag(t testing.TB, name string, on bool) {
	t.Helper()
	v := uint64(0)
	if on {
		v = 1
	}
	o.setting(t, name)(v)
}

// setting binds the emulated device's setter name (a C function of one
// integer argument).
func (o LibOpener) setting(t testing.TB, name string) func(uint64) {
	t.Helper()
	var set func(uint64)
	o.bind(t, name, &set)
	return set
}

// bind binds the emulated device's function name to *fptr.
func (o LibOpener) bind(t testing.TB, name string, fptr any) {
	t.Helper()
	l, err := cuda.System().Open(o.Lib)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Bind(fptr, name); err != nil {
		t.Fatal(err)
	}
}

// Where implements cuda.Opener.
func (o LibOpener) Where() string { return o.Lib }
