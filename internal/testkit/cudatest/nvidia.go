package cudatest

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spn-project/spn/models/cuda"
)

// NVIDIALibsEnv names the folders, colon-separated, that hold NVIDIA's
// real NVRTC (libnvrtc.so.*, with its libnvrtc-builtins), cuBLAS
// (libcublas.so.12) and driver API (libcuda.so.1) for the tests that use
// them on a machine without a GPU: what scripts/nvidia-libs.sh DIR
// prints, Debian's packages of CUDA 12.4 unpacked into DIR and not
// installed. CI sets it.
const NVIDIALibsEnv = "SPN_NVIDIA_LIBS"

// NVIDIALibs is an opener of NVIDIA's libraries in its folders: the
// system's dynamic loader, given each library's path, so the libraries
// never come from the loader's search path (where the tests of
// models/cuda expect no libcuda.so.1).
//
// A library loaded by path is found by its soname afterwards within the
// process: a process that opened libcuda.so.1 here makes
// cuda.System().Open("libcuda.so.1") succeed too. A test that loads the
// driver so runs in a process of its own.
type NVIDIALibs struct {
	Dirs []string
}

// RealNVIDIA returns the libraries of the folders NVIDIALibsEnv names.
// When the variable is unset it skips t with a line naming
// scripts/nvidia-libs.sh, or fails t when CI=true (CI must run the tests
// with NVIDIA's libraries); a named folder that is not one fails t.
func RealNVIDIA(t testing.TB) NVIDIALibs {
	t.Helper()
	v := os.Getenv(NVIDIALibsEnv)
	if v == "" {
		msg := fmt.Sprintf("%s is unset: export %s=$(scripts/nvidia-libs.sh DIR) to test with NVIDIA's NVRTC, cuBLAS and driver library, no GPU needed", NVIDIALibsEnv, NVIDIALibsEnv)
		if os.Getenv("CI") == "true" {
			t.Fatal("CI must test with NVIDIA's libraries: " + msg)
		}
		t.Skip(msg)
	}
	var l NVIDIALibs
	for _, d := range strings.Split(v, ":") {
		if d == "" {
			continue
		}
		if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
			t.Fatalf("%s=%s: %s is not a folder (%v)", NVIDIALibsEnv, v, d, err)
		}
		l.Dirs = append(l.Dirs, d)
	}
	if len(l.Dirs) == 0 {
		t.Fatalf("%s=%q names no folder", NVIDIALibsEnv, v)
	}
	return l
}

// Open opens the library called name from the first of the folders that
// holds it, by its path. Before an NVRTC it opens the NVRTC builtins of
// the folders (libnvrtc-builtins.so.*), which NVRTC opens by name at its
// first compile, so that the loader finds them loaded.
func (l NVIDIALibs) Open(name string) (cuda.Library, error) {
	path, err := l.find(name)
	if err != nil {
		return nil, err
	}
	if strings.HasPrefix(name, "libnvrtc.so") {
		for _, d := range l.Dirs {
			builtins, _ := filepath.Glob(filepath.Join(d, "libnvrtc-builtins.so.*"))
			for _, b := range builtins {
				if _, err := cuda.System().Open(b); err != nil {
					return nil, fmt.Errorf("%s: opening the NVRTC builtins %s: %w", name, b, err)
				}
			}
		}
	}
	return cuda.System().Open(path)
}

// find returns the path of the first file called name in the folders.
func (l NVIDIALibs) find(name string) (string, error) {
	for _, d := range l.Dirs {
		p := filepath.Join(d, name)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s: cannot open shared object file: not in %s", name, strings.Join(l.Dirs, ":"))
}

// Where names the folders, for error messages.
func (l NVIDIALibs) Where() string {
	return fmt.Sprintf("%s (%s)", NVIDIALibsEnv, strings.Join(l.Dirs, ":"))
}

// NVRTC returns the file name of the NVRTC in the folders (Debian's is
// libnvrtc.so.12, NVRTC 12.4): the shortest name of a libnvrtc.so.*
// file, its soname rather than its full version. It fails t when there
// is none.
func (l NVIDIALibs) NVRTC(t testing.TB) string {
	t.Helper()
	var names []string
	for _, d := range l.Dirs {
		m, _ := filepath.Glob(filepath.Join(d, "libnvrtc.so.*"))
		for _, p := range m {
			names = append(names, filepath.Base(p))
		}
	}
	if len(names) == 0 {
		t.Fatalf("no libnvrtc.so.* in %s", l.Where())
	}
	return slices.MinFunc(names, func(a, b string) int {
		if len(a) != len(b) {
			return len(a) - len(b)
		}
		return strings.Compare(a, b)
	})
}

// LibraryPath returns the LD_LIBRARY_PATH entry ("LD_LIBRARY_PATH=...")
// of a child process that should load the libraries by name as spn
// does: the folders, then the variable's value in this process.
func (l NVIDIALibs) LibraryPath() string {
	p := strings.Join(l.Dirs, ":")
	if old := os.Getenv("LD_LIBRARY_PATH"); old != "" {
		p += ":" + old
	}
	return "LD_LIBRARY_PATH=" + p
}
