// Package cudatest serves fake NVIDIA libraries (driver, NVRTC with a fake
// compiler, cuBLAS) made of Go functions, for the tests of models/cuda and of the commands.
package cudatest

import (
	"crypto/sha256"
	"fmt"
	"reflect"
	"strings"
	"unsafe"

	"github.com/spn-project/spn/models/cuda"
)

// NVIDIA's CUdevice_attribute values (cuda.h), stated here apart from
// models/cuda's own so that a wrong constant there fails its tests.
const (
	attrMultiprocessors = 16
	attrComputeMode     = 20
	attrCCMajor         = 75
	attrCCMinor         = 76
)

// FakeOpener serves libraries made of Go functions; a name it lacks fails
// to open the way dlopen does.
type FakeOpener map[string]FakeLib

// FakeLib maps symbol names to Go functions of the C signatures.
type FakeLib map[string]any

func (o FakeOpener) Open(name string) (cuda.Library, error) {
	l, ok := o[name]
	if !ok {
		return nil, fmt.Errorf("%s: cannot open shared object file: No such file or directory", name)
	}
	return l, nil
}

func (FakeOpener) Where() string { return "the fake path" }

func (l FakeLib) Bind(fptr any, name string) error {
	f, ok := l[name]
	if !ok {
		return fmt.Errorf("undefined symbol: %s", name)
	}
	dst := reflect.ValueOf(fptr).Elem()
	src := reflect.ValueOf(f)
	if src.Type() != dst.Type() {
		return fmt.Errorf("fake %s is %v, bound as %v", name, src.Type(), dst.Type())
	}
	dst.Set(src)
	return nil
}

// FakeGPU is one device of FakeDriver.
type FakeGPU struct {
	Name         string
	Major, Minor int32 // compute capability
	SMs          int32
	Memory       uint64
	ComputeMode  int32 // CUcomputemode: 0 default, 2 prohibited, 3 exclusive-process
}

// FakeDriver is a libcuda.so.1 with the given CUDA version, devices and cuInit
// result.
func FakeDriver(version int32, initResult int32, gpus ...FakeGPU) FakeLib {
	return FakeLib{
		"cuInit":             func(uint32) int32 { return initResult },
		"cuDriverGetVersion": func(v *int32) int32 { *v = version; return 0 },
		"cuDeviceGetCount":   func(n *int32) int32 { *n = int32(len(gpus)); return 0 },
		"cuDeviceGet": func(d *int32, i int32) int32 {
			if i < 0 || int(i) >= len(gpus) {
				return 101
			}
			*d = i
			return 0
		},
		"cuDeviceGetName": func(b *byte, n int32, d int32) int32 {
			copy(unsafe.Slice(b, int(n)), gpus[d].Name+"\x00")
			return 0
		},
		"cuDeviceGetAttribute": func(v *int32, a int32, d int32) int32 {
			switch a {
			case attrCCMajor:
				*v = gpus[d].Major
			case attrCCMinor:
				*v = gpus[d].Minor
			case attrMultiprocessors:
				*v = gpus[d].SMs
			case attrComputeMode:
				*v = gpus[d].ComputeMode
			default:
				return 1
			}
			return 0
		},
		"cuDeviceTotalMem_v2": func(m *uint64, d int32) int32 { *m = gpus[d].Memory; return 0 },
	}
}

// FakeNVRTC is a libnvrtc of the given version (FakeCompiler's library).
func FakeNVRTC(major, minor int32) FakeLib { return NewFakeCompiler(major, minor).Lib() }

// FakeCompiler is an NVRTC made of Go functions. Its "PTX" names the
// version, the architecture, the options and the SHA-256 of the source;
// for a real architecture (sm_XX) it also writes a "CUBIN": FakeCUBIN
// then that PTX. As NVRTC does, it has no CUBIN (size 0) for a virtual
// architecture (compute_XX).
// A source line "#error TEXT" fails the compilation with a log naming the
// file and line in NVRTC's words (following #line directives); an option
// that does not start with "-" fails with NVRTC_ERROR_INVALID_OPTION, as
// an unknown one does in NVRTC. (TestNVIDIANVRTC of models/cuda checks
// those words against NVIDIA's NVRTC.)
type FakeCompiler struct {
	Major, Minor int32
	// Compiles counts nvrtcCompileProgram calls, Options holds the
	// options of each.
	Compiles int
	Options  [][]string
	// Live counts the programs created and not yet destroyed.
	Live int
	// Archs are the compute capabilities (10·major + minor) the library
	// targets (nvrtcGetSupportedArchs), NVIDIA's for its version by
	// default.
	Archs []int32

	next  uintptr
	progs map[uintptr]*fakeProgram
}

type fakeProgram struct {
	name, src       string
	ptx, cubin, log []byte
}

// FakeCUBIN starts every CUBIN of FakeCompiler: an ELF header's magic, as
// a real CUBIN's.
const FakeCUBIN = "\x7fELF fake CUBIN\n"

// NewFakeCompiler returns an NVRTC of the given version.
func NewFakeCompiler(major, minor int32) *FakeCompiler {
	archs := []int32{50, 52, 53, 60, 61, 62, 70, 72, 75, 80, 86, 87, 89, 90} // CUDA 12.0 to 12.7
	switch {
	case major >= 13:
		archs = []int32{75, 80, 86, 87, 88, 89, 90, 100, 103, 110, 120, 121}
	case major == 12 && minor >= 8:
		archs = append(archs, 100, 101, 120)
	}
	return &FakeCompiler{Major: major, Minor: minor, Archs: archs, progs: map[uintptr]*fakeProgram{}}
}

// goString reads the NUL-terminated C string at p.
func goString(p *byte) string {
	if p == nil {
		return ""
	}
	var b []byte
	for q := unsafe.Pointer(p); *(*byte)(q) != 0; q = unsafe.Add(q, 1) {
		b = append(b, *(*byte)(q))
	}
	return string(b)
}

// compile is the fake compilation of p with the options opts.
func (c *FakeCompiler) compile(p *fakeProgram, opts []string) int32 {
	arch := ""
	for _, o := range opts {
		if !strings.HasPrefix(o, "-") {
			p.log = []byte(fmt.Sprintf("nvrtc: error: unrecognized option %s found\n\x00", o))
			return 5
		}
		if a, ok := strings.CutPrefix(o, "--gpu-architecture="); ok {
			arch = a
		}
	}
	file, line := p.name, 0
	for _, l := range strings.Split(p.src, "\n") {
		line++
		var n int
		var f string
		if _, err := fmt.Sscanf(l, "#line %d %q", &n, &f); err == nil {
			file, line = f, n-1
			continue
		}
		if msg, ok := strings.CutPrefix(l, "#error "); ok {
			p.log = []byte(fmt.Sprintf("%s(%d): catastrophic error: #error directive: %s\n\n1 catastrophic error detected in the compilation of %q.\nCompilation terminated.\n\x00", file, line, msg, p.name))
			return 6
		}
	}
	sum := sha256.Sum256([]byte(p.src))
	p.ptx = []byte(fmt.Sprintf("//\n// fake NVRTC %d.%d\n// options %s\n// source sha256 %x\n//\n\n.version 9.0\n.target %s\n.address_size 64\n\x00",
		c.Major, c.Minor, strings.Join(opts, " "), sum, strings.Replace(arch, "compute_", "sm_", 1)))
	if strings.HasPrefix(arch, "sm_") {
		p.cubin = append([]byte(FakeCUBIN), p.ptx...)
	}
	p.log = []byte{0}
	return 0
}

// Lib returns the library's entry points.
func (c *FakeCompiler) Lib() FakeLib {
	get := func(prog uintptr) *fakeProgram { return c.progs[prog] }
	out := func(b []byte, dst *byte) { copy(unsafe.Slice(dst, len(b)), b) }
	return FakeLib{
		"nvrtcVersion":              func(a, b *int32) int32 { *a, *b = c.Major, c.Minor; return 0 },
		"nvrtcGetNumSupportedArchs": func(n *int32) int32 { *n = int32(len(c.Archs)); return 0 },
		"nvrtcGetSupportedArchs": func(a *int32) int32 {
			copy(unsafe.Slice(a, len(c.Archs)), c.Archs)
			return 0
		},
		"nvrtcCreateProgram": func(prog *uintptr, src, name *byte, n int32, headers, names **byte) int32 {
			if src == nil || n != 0 {
				return 3
			}
			c.next++
			c.progs[c.next] = &fakeProgram{name: goString(name), src: goString(src)}
			c.Live++
			*prog = c.next
			return 0
		},
		"nvrtcCompileProgram": func(prog uintptr, n int32, options **byte) int32 {
			p := get(prog)
			if p == nil {
				return 4
			}
			var opts []string
			if n > 0 {
				for _, o := range unsafe.Slice(options, n) {
					opts = append(opts, goString(o))
				}
			}
			c.Compiles++
			c.Options = append(c.Options, opts)
			return c.compile(p, opts)
		},
		"nvrtcGetPTXSize": func(prog uintptr, n *uint64) int32 {
			p := get(prog)
			if p == nil || p.ptx == nil {
				return 4
			}
			*n = uint64(len(p.ptx))
			return 0
		},
		"nvrtcGetPTX": func(prog uintptr, dst *byte) int32 {
			p := get(prog)
			if p == nil || p.ptx == nil {
				return 4
			}
			out(p.ptx, dst)
			return 0
		},
		"nvrtcGetCUBINSize": func(prog uintptr, n *uint64) int32 {
			p := get(prog)
			if p == nil || p.ptx == nil {
				return 4
			}
			*n = uint64(len(p.cubin))
			return 0
		},
		"nvrtcGetCUBIN": func(prog uintptr, dst *byte) int32 {
			p := get(prog)
			if p == nil || p.ptx == nil {
				return 4
			}
			out(p.cubin, dst)
			return 0
		},
		"nvrtcGetProgramLogSize": func(prog uintptr, n *uint64) int32 {
			p := get(prog)
			if p == nil {
				return 4
			}
			*n = uint64(len(p.log))
			return 0
		},
		"nvrtcGetProgramLog": func(prog uintptr, dst *byte) int32 {
			p := get(prog)
			if p == nil {
				return 4
			}
			out(p.log, dst)
			return 0
		},
		"nvrtcDestroyProgram": func(prog *uintptr) int32 {
			if get(*prog) == nil {
				return 4
			}
			delete(c.progs, *prog)
			c.Live--
			*prog = 0
			return 0
		},
	}
}

// FakeCuBLAS is a libcublas of the given version.
func FakeCuBLAS(major, minor int32) FakeLib {
	return FakeLib{"cublasGetProperty": func(k int32, v *int32) int32 {
		*v = [...]int32{major, minor}[k]
		return 0
	}}
}

// FakeMachine is a machine with the given GPUs and CUDA 13 everywhere
// (driver, NVRTC and cuBLAS), and CUDA 12.8 copies of NVRTC and cuBLAS.
func FakeMachine(gpus ...FakeGPU) FakeOpener {
	return FakeOpener{
		cuda.DriverLib: FakeDriver(13000, 0, gpus...),
		cuda.NVRTC13:   FakeNVRTC(13, 0),
		cuda.NVRTC12:   FakeNVRTC(12, 8),
		cuda.CuBLAS13:  FakeCuBLAS(13, 0),
		cuda.CuBLAS12:  FakeCuBLAS(12, 8),
	}
}
