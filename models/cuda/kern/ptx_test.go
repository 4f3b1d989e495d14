package kern_test

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/spn-project/spn/models/cuda/kern"
)

// entry matches a kernel of PTX with its parameter list.
var entry = regexp.MustCompile(`\.visible \.entry (\w+)\(([^)]*)\)`)

// checkEntries checks that the PTX (what names it in messages) has every
// kernel of the table as an entry point with its number of parameters,
// and no other entry point.
func checkEntries(t *testing.T, what string, ptx []byte) {
	t.Helper()
	params := map[string]int{}
	for _, m := range entry.FindAllStringSubmatch(string(ptx), -1) {
		params[m[1]] = strings.Count(m[2], ".param")
	}
	for _, k := range kern.Kernels() {
		n, ok := params[k.Name]
		switch {
		case !ok:
			t.Errorf("%s: no entry %s", what, k.Name)
		case n != len(k.Params):
			t.Errorf("%s: entry %s has %d parameters, the table %d", what, k.Name, n, len(k.Params))
		}
		delete(params, k.Name)
	}
	for name := range params {
		t.Errorf("%s: entry %s is not in the table", what, name)
	}
}

// ptxasFunc is ptxas's account of one function in an NVRTC log
// (--ptxas-options=-v).
type ptxasFunc struct {
	entry                          bool // a kernel: "Compiling entry function"
	registers                      int  // "Used N registers" (kernels)
	frame                          bool // a stack frame line was read
	stack, spillStores, spillLoads int  // bytes
}

// The lines of ptxas -v that parsePtxas reads; it ignores the others
// ("0 bytes gmem", the constant banks after the registers).
var (
	ptxasEntry = regexp.MustCompile(`^ptxas info\s*: Compiling entry function '(\w+)' for '\w+'$`)
	ptxasProps = regexp.MustCompile(`^ptxas info\s*: Function properties for (\S+)$`)
	ptxasFrame = regexp.MustCompile(`^ptxas\s+\.\s+(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads$`)
	ptxasRegs  = regexp.MustCompile(`^ptxas info\s*: Used (\d+) registers`)
)

// parsePtxas returns ptxas's account of each function of an NVRTC log,
// by name: the kernels ("Compiling entry function", then their
// registers) and every function with properties (kernels and device
// functions not inlined: stack frame, spill stores and loads). A
// register or stack frame line that follows no function is an error.
func parsePtxas(log string) (map[string]*ptxasFunc, error) {
	fns := map[string]*ptxasFunc{}
	get := func(name string) *ptxasFunc {
		if fns[name] == nil {
			fns[name] = &ptxasFunc{}
		}
		return fns[name]
	}
	var compiling, props string // the kernel being compiled, the function whose properties follow
	for i, line := range strings.Split(log, "\n") {
		line = strings.TrimSpace(line)
		atoi := func(s string) int { n, _ := strconv.Atoi(s); return n } // the patterns match digits only
		if m := ptxasEntry.FindStringSubmatch(line); m != nil {
			compiling = m[1]
			get(compiling).entry = true
		} else if m := ptxasProps.FindStringSubmatch(line); m != nil {
			props = m[1]
		} else if m := ptxasFrame.FindStringSubmatch(line); m != nil {
			if props == "" {
				return nil, fmt.Errorf("line %d: %q follows no \"Function properties\" line", i+1, line)
			}
			f := get(props)
			f.frame, f.stack, f.spillStores, f.spillLoads = true, atoi(m[1]), atoi(m[2]), atoi(m[3])
			props = ""
		} else if m := ptxasRegs.FindStringSubmatch(line); m != nil {
			if compiling == "" {
				return nil, fmt.Errorf("line %d: %q follows no \"Compiling entry function\" line", i+1, line)
			}
			get(compiling).registers = atoi(m[1])
			compiling = ""
		}
	}
	return fns, nil
}

// TestParsePtxas reads ptxas -v logs as NVRTC 11.8 and 12.4 write them: kernels
// with their registers, stack frames and spills, a device function
// compiled apart, and lines out of order.
func TestParsePtxas(t *testing.T) {
	const head = "ptxas info    : 0 bytes gmem\n"
	kernelA := "ptxas info    : Compiling entry function 'spn_a' for 'sm_90'\n" +
		"ptxas info    : Function properties for spn_a\n" +
		"ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n" +
		"ptxas info    : Used 40 registers\n"
	kernelB := "ptxas info    : Compiling entry function 'spn_b' for 'sm_80'\n" +
		"ptxas info    : Function properties for spn_b\n" +
		"ptxas         .     16 bytes stack frame, 8 bytes spill stores, 4 bytes spill loads\n" +
		"ptxas info    : Used 255 registers, 380 bytes cmem[0], 8 bytes cmem[2]\n"
	device := "ptxas info    : Function properties for _Z3dotPKfS0_i\n" +
		"ptxas         .     24 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
	for _, c := range []struct {
		name, log string
		want      map[string]ptxasFunc
		wantErr   string
	}{
		{name: "empty", log: "", want: map[string]ptxasFunc{}},
		{name: "kernels", log: head + kernelA + kernelB + "\x00", want: map[string]ptxasFunc{
			"spn_a": {entry: true, registers: 40, frame: true},
			"spn_b": {entry: true, registers: 255, frame: true, stack: 16, spillStores: 8, spillLoads: 4},
		}},
		{name: "a device function", log: head + device + kernelA, want: map[string]ptxasFunc{
			"_Z3dotPKfS0_i": {frame: true, stack: 24},
			"spn_a":         {entry: true, registers: 40, frame: true},
		}},
		{name: "frame without a function", log: "ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n",
			wantErr: `line 1: "ptxas         .     0 bytes stack frame`},
		{name: "registers without a kernel", log: kernelA + "ptxas info    : Used 12 registers\n",
			wantErr: `line 5: "ptxas info    : Used 12 registers" follows no "Compiling entry function" line`},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := parsePtxas(c.log)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("error %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(c.want) {
				t.Errorf("%d functions, want %d", len(got), len(c.want))
			}
			for name, w := range c.want {
				if f := got[name]; f == nil || *f != w {
					t.Errorf("%s: %+v, want %+v", name, f, w)
				}
			}
		})
	}
}
