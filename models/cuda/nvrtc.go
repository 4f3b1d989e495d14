package cuda

import (
	"fmt"
	"regexp"
	"runtime"
	"slices"
	"strings"
)

// nvrtcAPI holds the NVRTC entry points spn uses. An nvrtcProgram is a
// pointer, held as a uintptr; size_t is 64 bits on the platforms spn
// loads CUDA on (Linux on amd64 and arm64).
//
// nvrtcGetCUBINSize and nvrtcGetCUBIN (the image of a real architecture,
// sm_XX) and nvrtcGetNumSupportedArchs and nvrtcGetSupportedArchs are
// bound like the others, not optionally: every NVRTC since CUDA 11.2 has
// them, so no NVRTC that Probe accepts (CUDA 12 and 13) or that
// OpenCompiler can use lacks them, and a library without them is refused
// naming the symbol ([SymbolError]) rather than failing later.
type nvrtcAPI struct {
	version   func(major, minor *int32) int32
	create    func(prog *uintptr, src, name *byte, numHeaders int32, headers, includeNames **byte) int32
	compile   func(prog uintptr, numOptions int32, options **byte) int32
	ptxSize   func(prog uintptr, size *uint64) int32
	ptx       func(prog uintptr, out *byte) int32
	cubinSize func(prog uintptr, size *uint64) int32
	cubin     func(prog uintptr, out *byte) int32
	logSize   func(prog uintptr, size *uint64) int32
	log       func(prog uintptr, out *byte) int32
	destroy   func(prog *uintptr) int32
	// numArchs and archs list the compute capabilities (10·major +
	// minor) the library targets, ascending.
	numArchs func(n *int32) int32
	archs    func(out *int32) int32
}

func (a *nvrtcAPI) bindings() []binding {
	return []binding{
		{"nvrtcVersion", &a.version},
		{"nvrtcCreateProgram", &a.create},
		{"nvrtcCompileProgram", &a.compile},
		{"nvrtcGetPTXSize", &a.ptxSize},
		{"nvrtcGetPTX", &a.ptx},
		{"nvrtcGetCUBINSize", &a.cubinSize},
		{"nvrtcGetCUBIN", &a.cubin},
		{"nvrtcGetProgramLogSize", &a.logSize},
		{"nvrtcGetProgramLog", &a.log},
		{"nvrtcDestroyProgram", &a.destroy},
		{"nvrtcGetNumSupportedArchs", &a.numArchs},
		{"nvrtcGetSupportedArchs", &a.archs},
	}
}

// bindNVRTC binds the NVRTC entry points of lib (called name in errors)
// and returns them with the library's version.
func bindNVRTC(lib Library, name string) (*nvrtcAPI, Version, error) {
	api := &nvrtcAPI{}
	if err := bindAll(lib, name, api.bindings()); err != nil {
		return nil, Version{}, err
	}
	var major, minor int32
	if err := nvrtcCheck(name, "nvrtcVersion", api.version(&major, &minor)); err != nil {
		return nil, Version{}, err
	}
	return api, Version{int(major), int(minor)}, nil
}

// NVRTCResult is an nvrtcResult status code.
type NVRTCResult int32

var nvrtcResultNames = [...]string{
	"NVRTC_SUCCESS",
	"NVRTC_ERROR_OUT_OF_MEMORY",
	"NVRTC_ERROR_PROGRAM_CREATION_FAILURE",
	"NVRTC_ERROR_INVALID_INPUT",
	"NVRTC_ERROR_INVALID_PROGRAM",
	"NVRTC_ERROR_INVALID_OPTION",
	"NVRTC_ERROR_COMPILATION",
	"NVRTC_ERROR_BUILTIN_OPERATION_FAILURE",
	"NVRTC_ERROR_NO_NAME_EXPRESSIONS_AFTER_COMPILATION",
	"NVRTC_ERROR_NO_LOWERED_NAMES_BEFORE_COMPILATION",
	"NVRTC_ERROR_NAME_EXPRESSION_NOT_VALID",
	"NVRTC_ERROR_INTERNAL_ERROR",
}

func (r NVRTCResult) String() string {
	if r >= 0 && int(r) < len(nvrtcResultNames) {
		return fmt.Sprintf("%s (%d)", nvrtcResultNames[r], int32(r))
	}
	return fmt.Sprintf("nvrtcResult %d", int32(r))
}

// nvrtcCheck turns an NVRTC status code from call into an error.
func nvrtcCheck(lib, call string, r int32) error {
	if r == 0 {
		return nil
	}
	return fmt.Errorf("cuda: %s: %s failed: %v", lib, call, NVRTCResult(r))
}

// CompileError is a program NVRTC could not compile; Log is NVRTC's
// program log, whose messages name the source file and line.
type CompileError struct {
	Name   string // the program's name, e.g. "spn_kernels.cu"
	Arch   string // the architecture, e.g. "compute_90" or "sm_90"
	NVRTC  Lib
	Result NVRTCResult
	Log    string
}

func (e *CompileError) Error() string {
	return fmt.Sprintf("cuda: NVRTC %v (%s) cannot compile %s for %s: %v\n%s",
		e.NVRTC.Version, e.NVRTC.Name, e.Name, e.Arch, e.Result, strings.TrimRight(e.Log, "\n"))
}

// MinComputeCapability returns the oldest compute capability (major,
// minor) the PTX of an NVRTC of version v can target: 7.5 from CUDA 13
// (which dropped Maxwell, Pascal and Volta), 5.0 for CUDA 12.
func MinComputeCapability(v Version) (major, minor int) {
	if v.Major >= 13 {
		return 7, 5
	}
	return 5, 0
}

// ChooseNVRTC returns the newest of the loaded NVRTC libraries that
// compiles for d's compute capability, or an error naming what d needs.
func ChooseNVRTC(d Device, loaded []Lib) (Lib, error) {
	var best Lib
	found := false
	for _, l := range loaded {
		ma, mi := MinComputeCapability(l.Version)
		if d.Major < ma || d.Major == ma && d.Minor < mi {
			continue
		}
		if !found || best.Version.Less(l.Version) {
			best, found = l, true
		}
	}
	if found {
		return best, nil
	}
	var have []string
	for _, l := range loaded {
		ma, mi := MinComputeCapability(l.Version)
		have = append(have, fmt.Sprintf("NVRTC %v (%s) targets compute capability %d.%d and newer", l.Version, l.Name, ma, mi))
	}
	if len(have) == 0 {
		have = append(have, "no NVRTC is loaded")
	}
	return Lib{}, fmt.Errorf("cuda: %s has compute capability %d.%d, which no loaded NVRTC compiles for: %s; install CUDA 12's NVRTC (%s) for this GPU",
		d.Name, d.Major, d.Minor, strings.Join(have, "; "), NVRTC12)
}

// Compiler compiles CUDA C with one NVRTC library for one architecture:
// a virtual one (compute_XX) gives PTX, which the driver compiles for its
// device when it loads it; a real one (sm_XX) gives a CUBIN, machine code
// for that GPU generation (OpenCompiler). Context.LoadModule loads either.
type Compiler struct {
	NVRTC Lib
	Arch  string // e.g. "compute_90" (PTX), or "sm_90" (a CUBIN)
	api   *nvrtcAPI
}

// Compiler returns the compiler for device d: the NVRTC ChooseNVRTC picks
// among the loaded ones, writing a CUBIN for d's own architecture
// (sm_XX: machine code the driver loads as it is, without its PTX JIT)
// when that NVRTC targets it, else PTX of the newest virtual
// architecture it targets below d's (PickArch; compute_XX), which the
// driver compiles for the device when it loads it, as it does for any
// GPU newer than the PTX. An NVRTC newer than the driver (of the
// driver's major version: Runtime.NVRTCs) serves only through a CUBIN,
// since the driver's JIT cannot read its PTX (CUDA_ERROR_UNSUPPORTED_PTX_VERSION);
// ChooseNVRTC passes over it for a device it writes no CUBIN for.
func (r *Runtime) Compiler(d Device) (*Compiler, error) {
	var usable []Lib
	archsOf := map[string][]int{}
	var why []string
	for _, l := range r.NVRTCs {
		archs, err := supportedArchs(r.nvrtc[l.Name], l.Name)
		if err != nil {
			return nil, err
		}
		archsOf[l.Name] = archs
		if r.Driver.Less(l.Version) && !slices.Contains(archs, 10*d.Major+d.Minor) {
			why = append(why, fmt.Sprintf("NVRTC %v (%s) is newer than the driver (CUDA %v), whose JIT cannot load its PTX, and writes no CUBIN for compute capability %d.%d", l.Version, l.Name, r.Driver, d.Major, d.Minor))
			continue
		}
		usable = append(usable, l)
	}
	lib, err := ChooseNVRTC(d, usable)
	if err != nil {
		if len(why) > 0 {
			err = fmt.Errorf("%w (%s)", err, strings.Join(why, "; "))
		}
		return nil, err
	}
	archs := archsOf[lib.Name]
	cc, ok := PickArch(archs, 10*d.Major+d.Minor)
	if !ok {
		return nil, fmt.Errorf("cuda: %s has compute capability %d.%d; NVRTC %v (%s) targets only %v", d.Name, d.Major, d.Minor, lib.Version, lib.Name, archs)
	}
	arch := fmt.Sprintf("compute_%d", cc)
	if cc == 10*d.Major+d.Minor {
		arch = fmt.Sprintf("sm_%d", cc)
	}
	return &Compiler{NVRTC: lib, Arch: arch, api: r.nvrtc[lib.Name]}, nil
}

// supportedArchs returns the compute capabilities (10·major + minor) an
// NVRTC targets, ascending.
func supportedArchs(api *nvrtcAPI, lib string) ([]int, error) {
	var n int32
	if err := nvrtcCheck(lib, "nvrtcGetNumSupportedArchs", api.numArchs(&n)); err != nil {
		return nil, err
	}
	if n < 1 || n > 256 {
		return nil, fmt.Errorf("cuda: %s: nvrtcGetNumSupportedArchs says %d architectures", lib, n)
	}
	raw := make([]int32, n)
	if err := nvrtcCheck(lib, "nvrtcGetSupportedArchs", api.archs(&raw[0])); err != nil {
		return nil, err
	}
	out := make([]int, n)
	for i, a := range raw {
		out[i] = int(a)
	}
	return out, nil
}

// PickArch returns the architecture to compile for a device of compute
// capability cc (10·major + minor) with an NVRTC that targets archs: cc
// itself when archs has it, else the newest of archs below cc (PTX for
// it runs on the newer device); ok is false when every one of archs is
// newer than cc.
func PickArch(archs []int, cc int) (arch int, ok bool) {
	for _, a := range archs {
		if a <= cc && (!ok || a > arch) {
			arch, ok = a, true
		}
	}
	return arch, ok
}

// archPattern matches the architectures NVRTC's --gpu-architecture
// takes: compute_XX or sm_XX, with an optional feature suffix (sm_90a).
var archPattern = regexp.MustCompile(`^(compute|sm)_[1-9][0-9]+[af]?$`)

// OpenCompiler opens the NVRTC library lib (a file name such as NVRTC12,
// looked up the way o does) through o on its own, without the driver,
// and returns its compiler for arch: a virtual architecture (compute_XX)
// compiles to PTX, a real one (sm_XX) to a CUBIN, whose NVRTC log
// (CompileLog) can hold ptxas's resource use of each kernel
// (--ptxas-options=-v: registers, stack frame, spill stores and loads).
//
// It is for checking kernels where no GPU is (the tests of
// models/cuda/kern with NVIDIA's NVRTC and no GPU) and for tooling. Code
// that runs on a GPU uses Runtime.Compiler, which picks the NVRTC the
// driver can load and the device's architecture; OpenCompiler takes any
// NVRTC that has the entry points spn binds (CUDA 11.2 and newer), since
// no driver bounds its version here.
func OpenCompiler(o Opener, lib, arch string) (*Compiler, error) {
	if !archPattern.MatchString(arch) {
		return nil, fmt.Errorf("cuda: NVRTC architecture %q: want compute_XX (PTX) or sm_XX (a CUBIN), e.g. compute_90", arch)
	}
	c := &Compiler{Arch: arch}
	name, err := openFirst(o, "NVRTC", []string{lib}, func(l Library, name string) error {
		var err error
		c.api, c.NVRTC.Version, err = bindNVRTC(l, name)
		return err
	})
	if err != nil {
		return nil, err
	}
	c.NVRTC.Name = name
	return c, nil
}

// CUBIN reports whether the compiler writes a CUBIN (its Arch is a real
// architecture, sm_XX) rather than PTX.
func (c *Compiler) CUBIN() bool { return strings.HasPrefix(c.Arch, "sm_") }

// cstring returns s as a NUL-terminated C string.
func cstring(s string) []byte { return append([]byte(s), 0) }

// Compile compiles the CUDA C program src, called name in NVRTC's
// messages, for the compiler's architecture with the extra NVRTC options
// opts, and returns its image: for a virtual architecture its PTX as
// NVRTC writes it (NUL-terminated, as the driver's module loader takes
// it), for a real one its CUBIN. A compile error is a *CompileError with
// NVRTC's log.
func (c *Compiler) Compile(name, src string, opts ...string) ([]byte, error) {
	image, _, err := c.CompileLog(name, src, opts...)
	return image, err
}

// CompileLog is Compile that also returns NVRTC's program log of the
// compilation that succeeded: its warnings, and for a real architecture
// with --ptxas-options=-v ptxas's lines on each kernel's registers, stack
// frame and spill stores and loads. The log has no trailing NULs; it is
// often empty.
func (c *Compiler) CompileLog(name, src string, opts ...string) (image []byte, log string, err error) {
	lib := c.NVRTC.Name
	csrc, cname := cstring(src), cstring(name)
	var prog uintptr
	if err := nvrtcCheck(lib, "nvrtcCreateProgram", c.api.create(&prog, &csrc[0], &cname[0], 0, nil, nil)); err != nil {
		return nil, "", fmt.Errorf("%w (compiling %s)", err, name)
	}
	runtime.KeepAlive(csrc)
	runtime.KeepAlive(cname)
	defer c.api.destroy(&prog)
	all := append([]string{"--gpu-architecture=" + c.Arch}, opts...)
	keep := make([][]byte, len(all))
	ptrs := make([]*byte, len(all))
	for i, o := range all {
		keep[i] = cstring(o)
		ptrs[i] = &keep[i][0]
	}
	r := c.api.compile(prog, int32(len(ptrs)), &ptrs[0])
	runtime.KeepAlive(keep)
	runtime.KeepAlive(ptrs)
	log, logErr := c.programLog(prog)
	if r != 0 {
		if logErr != nil {
			log = "(no log: " + logErr.Error() + ")"
		}
		return nil, "", &CompileError{Name: name, Arch: c.Arch, NVRTC: c.NVRTC, Result: NVRTCResult(r), Log: log}
	}
	if logErr != nil {
		return nil, "", fmt.Errorf("%w (compiling %s)", logErr, name)
	}
	if c.CUBIN() {
		image, err = c.text(prog, "nvrtcGetCUBINSize", c.api.cubinSize, "nvrtcGetCUBIN", c.api.cubin)
	} else {
		image, err = c.text(prog, "nvrtcGetPTXSize", c.api.ptxSize, "nvrtcGetPTX", c.api.ptx)
	}
	if err == nil && len(image) == 0 {
		err = fmt.Errorf("cuda: %s wrote an empty image for %s", lib, c.Arch)
	}
	if err != nil {
		return nil, "", fmt.Errorf("%w (compiling %s)", err, name)
	}
	return image, log, nil
}

// programLog returns NVRTC's log of the program, without trailing NULs.
func (c *Compiler) programLog(prog uintptr) (string, error) {
	log, err := c.text(prog, "nvrtcGetProgramLogSize", c.api.logSize, "nvrtcGetProgramLog", c.api.log)
	return strings.TrimRight(string(log), "\x00"), err
}

// text reads one of a program's outputs (its PTX, CUBIN or log) through
// the size call and the copy call of NVRTC.
func (c *Compiler) text(prog uintptr, sizeCall string, size func(uintptr, *uint64) int32, getCall string, get func(uintptr, *byte) int32) ([]byte, error) {
	var n uint64
	if err := nvrtcCheck(c.NVRTC.Name, sizeCall, size(prog, &n)); err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, nil
	}
	if n > 1<<31 {
		return nil, fmt.Errorf("cuda: %s: %s says %d bytes", c.NVRTC.Name, sizeCall, n)
	}
	buf := make([]byte, n)
	if err := nvrtcCheck(c.NVRTC.Name, getCall, get(prog, &buf[0])); err != nil {
		return nil, err
	}
	return buf, nil
}
