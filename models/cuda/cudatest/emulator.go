package cudatest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/spn-project/spn/models/cuda"
	"github.com/spn-project/spn/models/cuda/kern"
	"github.com/spn-project/spn/models/cuda/kern/kerntest"
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

// LibOpener opens the one library Lib for every name asked for: the
// emulated device serves the driver, NVRTC and cuBLAS from one file.
type LibOpener struct{ Lib string }

// Open implements cuda.Opener.
func (o LibOpener) Open(string) (cuda.Library, error) { return cuda.System().Open(o.Lib) }

// Where implements cuda.Opener.
func (o LibOpener) Where() string { return o.Lib }
