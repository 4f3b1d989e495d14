package kern_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/spn-project/spn/internal/testkit/kerntest"
	"github.com/spn-project/spn/models/cuda/kern"
)

// The emulation runs the kernels on the CPU: a C harness defines what
// CUDA provides (kerntest.Prelude: the qualifiers, threadIdx, blockIdx,
// blockDim and gridDim as globals, the bit casts), includes kern.Source()
// and runs a launch by looping over the blocks and threads in order
// (kerntest.Launch). One harness
// process serves one launch: the test writes the kernel's name, the launch
// configuration and the arguments to its stdin (little-endian, arrays with
// their lengths), and the harness writes back every array argument. The
// harness is built with kerntest.Sanitizers where the C compiler has
// them (CI requires them): a launch that reads or writes outside its
// arrays fails its test.

// runtime is the harness's input and output helpers.
const runtime = `
static void rd(void* p, size_t n) { if (n && fread(p, 1, n, stdin) != n) { fprintf(stderr, "short input\n"); exit(3); } }
static void wr(const void* p, size_t n) { if (n && fwrite(p, 1, n, stdout) != n) exit(4); }
static void* rd_array(size_t elem, unsigned long long* count) {
	unsigned char present; rd(&present, 1);
	unsigned long long n; rd(&n, 8); *count = n;
	if (!present) return NULL;
	void* p = calloc(n ? n : 1, elem); rd(p, n * elem); return p;
}
static void wr_array(const void* p, size_t elem, unsigned long long n) { if (p) wr(p, n * elem); }
`

// harness returns the C source of the harness for the kernel table.
func harness(src string) string {
	var b strings.Builder
	b.WriteString(kerntest.Prelude)
	b.WriteString(src)
	b.WriteString("\n#line 1 \"harness.c\"\n") // the harness's own lines
	b.WriteString(kerntest.Launch)
	b.WriteString(runtime)
	b.WriteString("int main(void) {\n\tchar name[64] = {0}; unsigned int len; rd(&len, 4); if (len >= sizeof name) return 5; rd(name, len);\n")
	b.WriteString("\trd(&gridDim.x, 4); rd(&blockDim.x, 4); gridDim.y = gridDim.z = blockDim.y = blockDim.z = 1;\n")
	elem := map[kern.Kind]string{kern.F32Ptr: "float", kern.F64Ptr: "double", kern.I32Ptr: "int"}
	for _, k := range kern.Kernels() {
		fmt.Fprintf(&b, "\tif (strcmp(name, %q) == 0) {\n", k.Name)
		var args []string
		for i, p := range k.Params {
			a := fmt.Sprintf("a%d", i)
			args = append(args, a)
			if p.Kind.Ptr() {
				fmt.Fprintf(&b, "\t\tunsigned long long n%d; %s %s = rd_array(sizeof(%s), &n%d);\n", i, p.Kind.C(), a, elem[p.Kind], i)
			} else {
				fmt.Fprintf(&b, "\t\t%s %s; rd(&%s, sizeof %s);\n", p.Kind.C(), a, a, a)
			}
		}
		fmt.Fprintf(&b, "\t\tLAUNCH(%s(%s));\n", k.Name, strings.Join(args, ", "))
		for i, p := range k.Params {
			if p.Kind.Ptr() {
				fmt.Fprintf(&b, "\t\twr_array(a%d, sizeof(%s), n%d);\n", i, elem[p.Kind], i)
			}
		}
		b.WriteString("\t\treturn 0;\n\t}\n")
	}
	b.WriteString("\treturn 6;\n}\n")
	return b.String()
}

var built struct {
	once      sync.Once
	path, dir string
	skip      string
	err       error
	// unsanitized says why the harness is built without
	// kerntest.Sanitizers ("" when it has them).
	unsanitized string
}

// buildHarness compiles the harness once per test binary.
func buildHarness(t *testing.T) string {
	t.Helper()
	built.once.Do(func() {
		cc, why := kerntest.Compiler()
		if cc == "" {
			built.skip = why
			return
		}
		built.dir, built.err = os.MkdirTemp("", "spn-kern-")
		if built.err != nil {
			return
		}
		c := filepath.Join(built.dir, "harness.c")
		if built.err = os.WriteFile(c, []byte(harness(kern.Source())), 0o644); built.err != nil {
			return
		}
		built.path = filepath.Join(built.dir, "harness")
		flags := append(kerntest.CFlags(), kerntest.Sanitizers()...)
		if err := kerntest.CheckSanitizers(cc, built.dir); err != nil {
			if os.Getenv("CI") == "true" {
				built.err = fmt.Errorf("CI must run the kernels' harness under the sanitizers: %w", err)
				return
			}
			built.unsanitized, flags = err.Error(), kerntest.CFlags()
		}
		cmd := exec.Command(cc, append(flags, "-o", built.path, c, "-lm")...)
		if out, err := cmd.CombinedOutput(); err != nil {
			built.err = fmt.Errorf("%s: %v\n%s", strings.Join(cmd.Args, " "), err, out)
		}
	})
	if built.skip != "" {
		t.Skip(built.skip)
	}
	if built.err != nil {
		t.Fatal(built.err)
	}
	if built.unsanitized != "" {
		t.Logf("the harness runs without sanitizers: %s", built.unsanitized)
	}
	return built.path
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// launch runs kernel name on the CPU over grid×block threads. args follow
// the kernel's parameters: []float32, []float64 or []int32 for pointers
// (a nil slice is a null pointer; the kernel's writes come back into the
// slice), int for int, float32, float64 and uint64 for the scalars.
func launch(t *testing.T, name string, grid, block int, args ...any) {
	t.Helper()
	if err := run(t, name, grid, block, args...); err != nil {
		t.Fatal(err)
	}
}

// run is launch returning the harness's failure (its exit status and
// standard error) instead of failing t; t fails for a call that does not
// match the kernel's parameters.
func run(t *testing.T, name string, grid, block int, args ...any) error {
	t.Helper()
	path := buildHarness(t)
	var k *kern.Kernel
	for _, kk := range kern.Kernels() {
		if kk.Name == name {
			k = &kk
		}
	}
	if k == nil {
		t.Fatalf("no kernel %s", name)
	}
	if len(args) != len(k.Params) {
		t.Fatalf("%s: %d arguments for %d parameters", name, len(args), len(k.Params))
	}
	var in bytes.Buffer
	w := func(v any) { binary.Write(&in, binary.LittleEndian, v) }
	w(uint32(len(name)))
	in.WriteString(name)
	w(uint32(grid))
	w(uint32(block))
	array := func(present bool, n int, data any) {
		w(map[bool]uint8{false: 0, true: 1}[present])
		w(uint64(n))
		if present && n > 0 {
			w(data)
		}
	}
	for i, p := range k.Params {
		a := args[i]
		ok := true
		switch p.Kind {
		case kern.F32Ptr:
			v, isT := a.([]float32)
			ok = isT
			array(v != nil, len(v), v)
		case kern.F64Ptr:
			v, isT := a.([]float64)
			ok = isT
			array(v != nil, len(v), v)
		case kern.I32Ptr:
			v, isT := a.([]int32)
			ok = isT
			array(v != nil, len(v), v)
		case kern.I32:
			v, isT := a.(int)
			ok = isT && v == int(int32(v))
			w(int32(v))
		case kern.F32:
			v, isT := a.(float32)
			ok = isT
			w(v)
		case kern.F64:
			v, isT := a.(float64)
			ok = isT
			w(v)
		case kern.U64:
			v, isT := a.(uint64)
			ok = isT
			w(v)
		}
		if !ok {
			t.Fatalf("%s: argument %d (%s) is %T, want %s", name, i, p.Name, a, p.Kind.C())
		}
	}
	cmd := exec.Command(path)
	cmd.Env = append(os.Environ(), kerntest.SanitizerEnv)
	cmd.Stdin = &in
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: harness: %v %s", name, err, stderr.String())
	}
	for i, p := range k.Params {
		if !p.Kind.Ptr() {
			continue
		}
		var err error
		switch v := args[i].(type) {
		case []float32:
			if v != nil {
				err = binary.Read(&out, binary.LittleEndian, v)
			}
		case []float64:
			if v != nil {
				err = binary.Read(&out, binary.LittleEndian, v)
			}
		case []int32:
			if v != nil {
				err = binary.Read(&out, binary.LittleEndian, v)
			}
		}
		if err != nil {
			t.Fatalf("%s: reading back %s: %v", name, p.Name, err)
		}
	}
	if out.Len() != 0 {
		t.Fatalf("%s: %d bytes of output left over", name, out.Len())
	}
	return nil
}

// TestHarnessSanitizers: a launch that writes past its array (spn_fill of
// 10 values into 8) fails with AddressSanitizer's heap-buffer-overflow in
// the kernel, where the harness has the sanitizers; the same launch within
// its array passes.
func TestHarnessSanitizers(t *testing.T) {
	buildHarness(t)
	if built.unsanitized != "" {
		t.Skip("the harness has no sanitizers here: " + built.unsanitized)
	}
	y := make([]float32, 10)
	if err := run(t, "spn_fill", cover(10, 4), 4, y, float32(1), 10); err != nil {
		t.Fatalf("within the array: %v", err)
	}
	err := run(t, "spn_fill", cover(10, 4), 4, y[:8], float32(1), 10)
	if err == nil {
		t.Fatal("spn_fill wrote 10 values into 8 without a sanitizer's report")
	}
	for _, w := range []string{"AddressSanitizer: heap-buffer-overflow", "WRITE of size 4", "in spn_fill"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("the report lacks %q:\n%v", w, err)
		}
	}
}

// cover returns a grid of blocks of block threads covering n threads, with
// one block more than needed, so that every kernel's bound check runs.
func cover(n, block int) int { return (n+block-1)/block + 1 }

// equalBits fails unless got and want hold the same float32 bits.
func equalBits(t *testing.T, what string, got, want []float32) {
	t.Helper()
	kerntest.EqualBits(t, what, got, want)
}

// near fails unless |got−want| ≤ abs + rel·|want| everywhere.
func near(t *testing.T, what string, got, want []float32, abs, rel float64) {
	t.Helper()
	kerntest.Near(t, what, got, want, abs, rel)
}
