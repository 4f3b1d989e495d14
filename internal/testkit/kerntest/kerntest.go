// Package kerntest runs the kernels of models/cuda/kern on the CPU, for
// tests: the C prelude that lets a C compiler build kern.Source (CUDA's
// qualifiers, threadIdx, blockIdx, blockDim and gridDim as globals, the
// bit casts), the loop that runs a launch over its blocks and threads, a
// dispatcher that calls a kernel by its index in kern.Kernels with its
// arguments given as CUDA's kernel-params array, and the comparisons the
// tests make with the CPU ops.
//
// The kernels' own test (models/cuda/kern) runs each launch in a harness
// process; the emulated CUDA device of models/cuda's tests links the same
// kernels into a fake libcuda. Both build on Prelude and Launch.
package kerntest

import (
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spn-project/spn/models/cuda/kern"
)

// Prelude is what a C translation unit defines before kern.Source in
// place of what CUDA provides.
const Prelude = `#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
typedef struct { unsigned int x, y, z; } spn_dim3;
static spn_dim3 threadIdx, blockIdx, blockDim, gridDim;
#define __global__
#define __device__
#define __forceinline__ inline
#define SPN_KERNEL
static inline unsigned int __float_as_uint(float f) { unsigned int u; memcpy(&u, &f, 4); return u; }
static inline float __uint_as_float(unsigned int u) { float f; memcpy(&f, &u, 4); return f; }
`

// Launch defines LAUNCH(call), which runs call once per thread of a
// one-dimensional launch of gridDim.x blocks of blockDim.x threads,
// setting blockIdx and threadIdx: blocks and threads in order, or, after
// spn_emu_set_reverse(1), last to first. A GPU runs a launch's threads
// at once, so a kernel whose result depends on their order (a thread
// reading what another writes, two writing one value) is wrong there
// however it fares in order; running the same work both ways and
// comparing the bits finds it on the CPU.
const Launch = `
static int spn_emu_reverse;
void spn_emu_set_reverse(unsigned long long on) { spn_emu_reverse = on != 0; }
#define LAUNCH(call) \
	for (unsigned long long k = 0, n = (unsigned long long)gridDim.x * blockDim.x; k < n; k++) { \
		unsigned long long g = spn_emu_reverse ? n - 1 - k : k; \
		blockIdx.x = (unsigned int)(g / blockDim.x); threadIdx.x = (unsigned int)(g % blockDim.x); call; }
`

// CFlags are the options a C compiler builds the kernels with: C11, no
// contraction into fused multiply-adds (NVRTC's --fmad=false), and a call
// whose argument types do not match the kernel's is an error (other
// warnings, which vary between compilers, are not).
func CFlags() []string {
	return []string{"-std=c11", "-O2", "-ffp-contract=off", "-Werror=incompatible-pointer-types",
		"-Werror=int-conversion", "-Werror=implicit-function-declaration"}
}

// Sanitizers are the options that build the kernels' test harness (a
// process of its own per launch, its arrays each allocated to their
// exact length) with AddressSanitizer and UndefinedBehaviorSanitizer,
// stopping at the first finding: a kernel that reads or writes outside
// its arrays, which a GPU may let pass inside a pooled allocation, or
// that hits undefined behaviour (a signed overflow, a shift too far)
// fails its test with the sanitizer's report naming the kernel. The
// harness exits without freeing its arrays, so it runs with
// SanitizerEnv.
func Sanitizers() []string {
	return []string{"-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-fno-omit-frame-pointer", "-g"}
}

// SanitizerEnv is the environment entry a harness built with Sanitizers
// runs with: no leak report at exit.
const SanitizerEnv = "ASAN_OPTIONS=detect_leaks=0"

// CheckSanitizers builds and runs, in dir, a C program with the C
// compiler cc and Sanitizers, and returns why that failed (a compiler
// without the sanitizers' runtime libraries, say) or nil.
func CheckSanitizers(cc, dir string) error {
	src, bin := filepath.Join(dir, "sanitizers.c"), filepath.Join(dir, "sanitizers")
	if err := os.WriteFile(src, []byte("#include <stdlib.h>\nint main(void) { int* p = calloc(4, sizeof *p); return p[3]; }\n"), 0o644); err != nil {
		return err
	}
	cmd := exec.Command(cc, append(Sanitizers(), "-o", bin, src)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s: %v\n%s", strings.Join(cmd.Args, " "), err, out)
	}
	run := exec.Command(bin)
	run.Env = append(os.Environ(), SanitizerEnv)
	if out, err := run.CombinedOutput(); err != nil {
		return fmt.Errorf("a program built with %s: %v\n%s", strings.Join(Sanitizers(), " "), err, out)
	}
	return nil
}

// Compiler returns the system C compiler, or "" with the reason there is
// none (for a test's skip message).
func Compiler() (path, why string) {
	for _, c := range []string{"cc", "gcc", "clang"} {
		if p, err := exec.LookPath(c); err == nil {
			return p, ""
		}
	}
	return "", "no C compiler (cc, gcc or clang) on PATH: the kernels' CPU emulation needs one"
}

// KindCode is the one-letter code of a parameter kind in Dispatch's
// signature strings: f, d, i for pointers to float, double and int; I, F,
// D, U for int, float, double and unsigned long long.
func KindCode(k kern.Kind) byte { return "fdiIFDU"[k] }

// Dispatch returns C source, to follow Prelude, kern.Source and Launch in
// one translation unit, that defines
//
//	int spn_emu_count(void);              // the number of kernels
//	const char* spn_emu_name(int i);      // kernel i's name
//	const char* spn_emu_signature(int i); // its parameters' KindCodes
//	void spn_emu_run(int i, unsigned grid, unsigned block, void** params);
//
// for the kernels ks (kern.Kernels()) in order. spn_emu_run reads kernel
// i's arguments from params as cuLaunchKernel does (params[j] points to
// the value of argument j) and runs the launch with LAUNCH.
func Dispatch(ks []kern.Kernel) string {
	var b strings.Builder
	b.WriteString("\nint spn_emu_count(void) { return ")
	fmt.Fprintf(&b, "%d; }\n", len(ks))
	b.WriteString("static const char* const spn_emu_names[] = {")
	for _, k := range ks {
		fmt.Fprintf(&b, "%q, ", k.Name)
	}
	b.WriteString("};\nstatic const char* const spn_emu_signatures[] = {")
	for _, k := range ks {
		sig := make([]byte, len(k.Params))
		for j, p := range k.Params {
			sig[j] = KindCode(p.Kind)
		}
		fmt.Fprintf(&b, "%q, ", sig)
	}
	b.WriteString("};\n")
	b.WriteString("const char* spn_emu_name(int i) { return spn_emu_names[i]; }\n")
	b.WriteString("const char* spn_emu_signature(int i) { return spn_emu_signatures[i]; }\n")
	b.WriteString("void spn_emu_run(int i, unsigned grid, unsigned block, void** params) {\n")
	b.WriteString("\tgridDim.x = grid; blockDim.x = block; gridDim.y = gridDim.z = blockDim.y = blockDim.z = 1;\n")
	b.WriteString("\tblockIdx.y = blockIdx.z = threadIdx.y = threadIdx.z = 0;\n\tswitch (i) {\n")
	for i, k := range ks {
		var args []string
		for j, p := range k.Params {
			args = append(args, fmt.Sprintf("*(%s*)params[%d]", p.Kind.C(), j))
		}
		fmt.Fprintf(&b, "\tcase %d: LAUNCH(%s(%s)); break;\n", i, k.Name, strings.Join(args, ", "))
	}
	b.WriteString("\t}\n}\n")
	return b.String()
}

// EqualBits fails unless got and want hold the same float32 bits.
func EqualBits(t testing.TB, what string, got, want []float32) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range got {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("%s[%d] = %v (%#08x), CPU %v (%#08x)", what, i, got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
		}
	}
}

// Near fails unless |got−want| ≤ abs + rel·|want| everywhere.
func Near(t testing.TB, what string, got, want []float32, abs, rel float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range got {
		if d := math.Abs(float64(got[i]) - float64(want[i])); !(d <= abs+rel*math.Abs(float64(want[i]))) {
			t.Fatalf("%s[%d] = %v, CPU %v (|Δ| = %g > %g + %g·|CPU|)", what, i, got[i], want[i], d, abs, rel)
		}
	}
}
