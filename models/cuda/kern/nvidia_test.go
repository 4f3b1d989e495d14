package kern_test

import (
	"bytes"
	"cmp"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/spn-project/spn/internal/testkit/cudatest"
	"github.com/spn-project/spn/models/cuda"
	"github.com/spn-project/spn/models/cuda/kern"
)

// TestNVRTCWithoutGPU compiles kern.Source with kern.Options through
// spn's own NVRTC path (cuda.OpenCompiler, Compiler.CompileLog) with
// NVIDIA's NVRTC on a machine without a GPU (cudatest.RealNVIDIA: the
// libraries of scripts/nvidia-libs.sh). That NVRTC is Debian's 12.4
// (libnvrtc.so.12), which spn loads on a GPU machine without CUDA 13's:
// the same compiler front end and ptxas back end as 13.
//
// For every virtual architecture spn may target with it (compute
// capability 5.0 to 9.0) the PTX has every kernel of the table as an
// entry point with its number of parameters, and nothing else. For the
// real architectures sm_75, sm_80 and sm_90 the CUBIN has every kernel as
// a function symbol, and ptxas's report (--ptxas-options=-v) names every
// kernel with its registers and shows no function spilling registers to
// local memory; the registers of each kernel are logged.
func TestNVRTCWithoutGPU(t *testing.T) {
	libs := cudatest.RealNVIDIA(t)
	lib := libs.NVRTC(t)
	for _, arch := range []string{"compute_50", "compute_60", "compute_70", "compute_75", "compute_80", "compute_86", "compute_90"} {
		c, err := cuda.OpenCompiler(libs, lib, arch)
		if err != nil {
			t.Fatal(err)
		}
		ptx, err := c.Compile(kern.Name, kern.Source(), kern.Options()...)
		if err != nil {
			t.Fatal(err)
		}
		checkEntries(t, fmt.Sprintf("NVRTC %v's PTX for %s", c.NVRTC.Version, arch), ptx)
	}
	for _, arch := range []string{"sm_75", "sm_80", "sm_90"} {
		c, err := cuda.OpenCompiler(libs, lib, arch)
		if err != nil {
			t.Fatal(err)
		}
		cubin, log, err := c.CompileLog(kern.Name, kern.Source(), append(kern.Options(), "--ptxas-options=-v")...)
		if err != nil {
			t.Fatal(err)
		}
		checkCUBIN(t, arch, cubin)
		fns, err := parsePtxas(log)
		if err != nil {
			t.Fatalf("%s: ptxas's log: %v\n%s", arch, err, log)
		}
		checkResources(t, arch, fns)
	}
}

// checkCUBIN checks that a CUBIN for arch is an ELF image with every
// kernel of the table as a function symbol.
func checkCUBIN(t *testing.T, arch string, cubin []byte) {
	t.Helper()
	// A CUBIN's ELF header holds NVIDIA's own version in e_version (a
	// 64-bit little-endian ELF: at byte 20), where debug/elf wants
	// EV_CURRENT, as in the identification: read a copy with EV_CURRENT
	// there.
	if len(cubin) < 64 || string(cubin[:4]) != elf.ELFMAG || elf.Class(cubin[elf.EI_CLASS]) != elf.ELFCLASS64 {
		t.Errorf("%s: the CUBIN (%d bytes) is not a 64-bit ELF image", arch, len(cubin))
		return
	}
	img := slices.Clone(cubin)
	binary.LittleEndian.PutUint32(img[20:], uint32(elf.EV_CURRENT))
	f, err := elf.NewFile(bytes.NewReader(img))
	if err != nil {
		t.Errorf("%s: the CUBIN is not an ELF image: %v", arch, err)
		return
	}
	syms, err := f.Symbols()
	if err != nil {
		t.Errorf("%s: the CUBIN's symbols: %v", arch, err)
		return
	}
	funcs := map[string]bool{}
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) == elf.STT_FUNC {
			funcs[s.Name] = true
		}
	}
	for _, k := range kern.Kernels() {
		if !funcs[k.Name] {
			t.Errorf("%s: the CUBIN has no function %s", arch, k.Name)
		}
	}
}

// checkResources checks ptxas's report for arch: every kernel of the
// table, and only those, compiled as an entry with its registers; no
// function spills. It logs the registers, most first, and any stack
// frame.
func checkResources(t *testing.T, arch string, fns map[string]*ptxasFunc) {
	t.Helper()
	type use struct {
		name      string
		registers int
	}
	var uses []use
	var stacks []string
	for _, k := range kern.Kernels() {
		f := fns[k.Name]
		if f == nil || !f.entry || f.registers == 0 || !f.frame {
			t.Errorf("%s: ptxas's report on kernel %s: %+v, want an entry with registers and a stack frame line", arch, k.Name, f)
			continue
		}
		uses = append(uses, use{k.Name, f.registers})
	}
	for name, f := range fns {
		if f.entry && !slices.ContainsFunc(kern.Kernels(), func(k kern.Kernel) bool { return k.Name == name }) {
			t.Errorf("%s: ptxas compiled kernel %s, which is not in the table", arch, name)
		}
		if f.spillStores != 0 || f.spillLoads != 0 {
			t.Errorf("%s: %s spills registers: %d bytes of spill stores, %d of spill loads", arch, name, f.spillStores, f.spillLoads)
		}
		if f.stack != 0 {
			stacks = append(stacks, fmt.Sprintf("%s %d", name, f.stack))
		}
	}
	slices.SortFunc(uses, func(a, b use) int { return cmp.Or(b.registers-a.registers, strings.Compare(a.name, b.name)) })
	list := make([]string, len(uses))
	for i, u := range uses {
		list[i] = fmt.Sprintf("%s %d", u.name, u.registers)
	}
	slices.Sort(stacks)
	stack := "no stack frames"
	if len(stacks) > 0 {
		stack = "stack frames (bytes): " + strings.Join(stacks, ", ")
	}
	t.Logf("%s: %d kernels, no spills, %s; registers: %s", arch, len(uses), stack, strings.Join(list, ", "))
}
