package cuda

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
)

// MinDriver is the oldest CUDA version the driver must support: 12.0
// (NVIDIA driver r525). The oldest NVRTC spn loads is CUDA 12's, the PTX
// it writes needs a driver of at least its own CUDA version, and cuBLAS
// 12 needs a CUDA 12 driver.
func MinDriver() Version { return Version{12, 0} }

// Version is a CUDA version, major.minor.
type Version struct{ Major, Minor int }

// versionOf decodes the driver API's 1000·major + 10·minor.
func versionOf(v int32) Version { return Version{int(v) / 1000, int(v) % 1000 / 10} }

func (v Version) String() string { return fmt.Sprintf("%d.%d", v.Major, v.Minor) }

// Less reports whether v is older than w.
func (v Version) Less(w Version) bool {
	return v.Major < w.Major || v.Major == w.Major && v.Minor < w.Minor
}

// Lib is one loaded library: its file name and version.
type Lib struct {
	Name    string
	Version Version
}

// Runtime is a loaded, initialised CUDA driver with NVRTC and cuBLAS.
type Runtime struct {
	Driver Version // the CUDA version the driver supports
	// NVRTC is the newest usable NVRTC, and NVRTCs every usable one,
	// newest first (NVRTCs[0] == NVRTC): a GPU older than the newest
	// NVRTC supports compiles with an older one (Runtime.Compiler).
	NVRTC   Lib
	NVRTCs  []Lib
	CuBLAS  Lib
	Devices int // how many devices the driver sees (at least 1)

	d         driverAPI
	nvrtc     map[string]*nvrtcAPI // the bound NVRTCs by library name
	driverLib Library              // the opened driver API, for NewContext
	cublasLib Library              // the opened cuBLAS, for NewBLAS
}

// driverAPI holds the driver entry points discovery uses.
type driverAPI struct {
	cuInit               func(flags uint32) int32
	cuDriverGetVersion   func(v *int32) int32
	cuDeviceGetCount     func(n *int32) int32
	cuDeviceGet          func(dev *int32, ordinal int32) int32
	cuDeviceGetName      func(name *byte, n int32, dev int32) int32
	cuDeviceGetAttribute func(v *int32, attr int32, dev int32) int32
	cuDeviceTotalMem     func(bytes *uint64, dev int32) int32
}

func (d *driverAPI) bindings() []binding {
	return []binding{
		{"cuInit", &d.cuInit},
		{"cuDriverGetVersion", &d.cuDriverGetVersion},
		{"cuDeviceGetCount", &d.cuDeviceGetCount},
		{"cuDeviceGet", &d.cuDeviceGet},
		{"cuDeviceGetName", &d.cuDeviceGetName},
		{"cuDeviceGetAttribute", &d.cuDeviceGetAttribute},
		{"cuDeviceTotalMem_v2", &d.cuDeviceTotalMem},
	}
}

// Device attributes (CUdevice_attribute).
const (
	attrMultiprocessors = 16
	attrComputeMode     = 20
	attrCCMajor         = 75
	attrCCMinor         = 76
)

// ErrNoDevice is wrapped by Probe's error when the driver loads but sees
// no device: cuInit fails with CUDA_ERROR_NO_DEVICE (NVIDIA's driver on a
// machine without a GPU), or the driver counts none.
var ErrNoDevice = errors.New("no CUDA device")

// Probe opens the driver API, NVRTC and cuBLAS through o, initialises the
// driver and counts its devices. It fails when a library or symbol is
// missing, the driver supports a CUDA older than MinDriver, or there is no
// device.
func Probe(o Opener) (*Runtime, error) {
	r := &Runtime{}
	if _, err := openFirst(o, "the NVIDIA driver API", []string{DriverLib}, func(lib Library, name string) error {
		r.driverLib = lib
		return bindAll(lib, name, r.d.bindings())
	}); err != nil {
		return nil, err
	}
	if res := r.d.cuInit(0); res != 0 {
		return nil, initError(&r.d, res)
	}
	var v, n int32
	if err := check("cuDriverGetVersion", r.d.cuDriverGetVersion(&v)); err != nil {
		return nil, err
	}
	r.Driver = versionOf(v)
	if r.Driver.Less(MinDriver()) {
		return nil, fmt.Errorf("cuda: the NVIDIA driver supports CUDA %v; spn needs CUDA %v or newer (driver r525+): update the driver", r.Driver, MinDriver())
	}
	if err := check("cuDeviceGetCount", r.d.cuDeviceGetCount(&n)); err != nil {
		return nil, err
	}
	if n < 1 {
		return nil, fmt.Errorf("cuda: %w", noDevice(fmt.Sprintf(" (CUDA %v)", r.Driver)))
	}
	r.Devices = int(n)
	var err error
	if err = r.openNVRTC(o); err != nil {
		return nil, err
	}
	if r.CuBLAS, r.cublasLib, err = openCuBLAS(o, r.Driver); err != nil {
		return nil, err
	}
	return r, nil
}

// resultNoDevice is CUDA_ERROR_NO_DEVICE.
const resultNoDevice = 100

// initError is the error of cuInit's failure res. The real driver fails
// cuInit with CUDA_ERROR_NO_DEVICE where it sees no GPU (it never gets to
// count zero devices): that error wraps ErrNoDevice and names the CUDA
// version the driver supports, which it reports without cuInit.
func initError(d *driverAPI, res int32) error {
	err := check("cuInit", res)
	if res != resultNoDevice {
		return err
	}
	version := ""
	var v int32
	if d.cuDriverGetVersion(&v) == 0 {
		version = fmt.Sprintf(" (CUDA %v)", versionOf(v))
	}
	return fmt.Errorf("%w: %w", err, noDevice(version))
}

// noDevice is the error of a driver that loaded but sees no device;
// version is " (CUDA X.Y)", or "" when unknown.
func noDevice(version string) error {
	return fmt.Errorf("the NVIDIA driver%s loaded but sees %w", version, ErrNoDevice)
}

// openNVRTC opens the newest NVRTC the driver can use and binds its
// entry points: a failure there is Probe's. One no newer than the driver
// serves with PTX or a CUBIN; one newer than the driver, of its major
// version, only with a CUBIN for the device's own architecture (the
// driver loads a CUBIN of a newer minor version, not its PTX), which
// Runtime.Compiler asks of it; one of a newer major version is refused.
// The older NVRTCs after it are opened too when they load and bind; they
// serve GPUs the newest no longer targets.
func (r *Runtime) openNVRTC(o Opener) error {
	names := []string{NVRTC13, NVRTC12}
	r.nvrtc = map[string]*nvrtcAPI{}
	accept := func(lib Library, name string) error {
		api, v, err := bindNVRTC(lib, name)
		if err != nil {
			return err
		}
		if r.Driver.Major < v.Major {
			return &skipError{fmt.Sprintf("NVRTC %v writes PTX and CUBINs that a CUDA %v driver cannot load", v, r.Driver)}
		}
		r.nvrtc[name] = api
		r.NVRTCs = append(r.NVRTCs, Lib{name, v})
		return nil
	}
	name, err := openFirst(o, "NVRTC", names, accept)
	if err != nil {
		return err
	}
	r.NVRTC = r.NVRTCs[0]
	for _, n := range names[slices.Index(names, name)+1:] {
		if lib, err := o.Open(n); err == nil {
			_ = accept(lib, n) // an unusable older NVRTC is left out
		}
	}
	return nil
}

// openCuBLAS opens the newest cuBLAS whose major version the driver
// supports (cuBLAS runs on any driver of its own major version).
func openCuBLAS(o Opener, driver Version) (Lib, Library, error) {
	var property func(kind int32, v *int32) int32
	var got Lib
	var opened Library
	name, err := openFirst(o, "cuBLAS", []string{CuBLAS13, CuBLAS12}, func(lib Library, name string) error {
		opened = lib
		if err := bindAll(lib, name, []binding{{"cublasGetProperty", &property}}); err != nil {
			return err
		}
		var major, minor int32
		if err := check("cublasGetProperty", property(0, &major)); err != nil {
			return err
		}
		if err := check("cublasGetProperty", property(1, &minor)); err != nil {
			return err
		}
		got.Version = Version{int(major), int(minor)}
		if got.Version.Major > driver.Major {
			return &skipError{fmt.Sprintf("cuBLAS %v needs a CUDA %d driver, this one is CUDA %v", got.Version, got.Version.Major, driver)}
		}
		return nil
	})
	got.Name = name
	return got, opened, err
}

// Device describes one GPU.
type Device struct {
	Ordinal         int
	Name            string
	Major, Minor    int    // compute capability
	Multiprocessors int    // streaming multiprocessors
	Memory          uint64 // total device memory in bytes
	Driver          Version
	ComputeMode     ComputeMode
}

// ComputeMode is a GPU's compute mode (CUcomputemode), which its
// administrator sets with nvidia-smi -c: which processes may use it.
type ComputeMode int

// The compute modes.
const (
	// ComputeDefault: any process may use the GPU.
	ComputeDefault ComputeMode = 0
	// ComputeProhibited: no process may.
	ComputeProhibited ComputeMode = 2
	// ComputeExclusiveProcess: one process at a time may.
	ComputeExclusiveProcess ComputeMode = 3
)

func (m ComputeMode) String() string {
	switch m {
	case ComputeDefault:
		return "default"
	case ComputeProhibited:
		return "prohibited"
	case ComputeExclusiveProcess:
		return "exclusive-process"
	}
	return fmt.Sprintf("compute mode %d", int(m))
}

// Usable reports a GPU that no process may use (compute mode
// prohibited), before anything tries to, as an error naming the mode.
func (d Device) Usable() error {
	if d.ComputeMode == ComputeProhibited {
		return fmt.Errorf("cuda: %v: %s", d, d.modeHint())
	}
	return nil
}

// UsableDevice describes the device with the given ordinal, as Device,
// and fails as Device.Usable for one that no process may use.
func (r *Runtime) UsableDevice(ordinal int) (Device, error) {
	d, err := r.Device(ordinal)
	if err == nil {
		err = d.Usable()
	}
	return d, err
}

// modeHint says what the device's compute mode means for a process that
// cannot open a context on it ("" for the default mode).
func (d Device) modeHint() string {
	switch d.ComputeMode {
	case ComputeProhibited:
		return "its compute mode is prohibited, so no process may use it (nvidia-smi -q -d COMPUTE shows the mode; an administrator changes it with nvidia-smi -c)"
	case ComputeExclusiveProcess:
		return "its compute mode is exclusive-process and another process holds it (nvidia-smi lists the processes on it); wait for that process, or use another GPU"
	}
	return ""
}

// Arch is the device's virtual architecture for NVRTC, e.g. "compute_90".
func (d Device) Arch() string { return fmt.Sprintf("compute_%d%d", d.Major, d.Minor) }

func (d Device) String() string {
	mode := ""
	if d.ComputeMode != ComputeDefault {
		mode = ", compute mode " + d.ComputeMode.String()
	}
	return fmt.Sprintf("%s (cuda:%d, compute capability %d.%d, %.1f GiB, driver CUDA %v%s)",
		d.Name, d.Ordinal, d.Major, d.Minor, float64(d.Memory)/(1<<30), d.Driver, mode)
}

// Device describes the device with the given ordinal.
func (r *Runtime) Device(ordinal int) (Device, error) {
	if ordinal < 0 || ordinal >= r.Devices {
		return Device{}, fmt.Errorf("cuda: no device cuda:%d: the driver sees %d device(s), cuda:0 to cuda:%d", ordinal, r.Devices, r.Devices-1)
	}
	var dev int32
	if err := check("cuDeviceGet", r.d.cuDeviceGet(&dev, int32(ordinal))); err != nil {
		return Device{}, err
	}
	name := make([]byte, 256)
	if err := check("cuDeviceGetName", r.d.cuDeviceGetName(&name[0], int32(len(name)), dev)); err != nil {
		return Device{}, err
	}
	if i := bytes.IndexByte(name, 0); i >= 0 {
		name = name[:i]
	}
	d := Device{Ordinal: ordinal, Name: string(name), Driver: r.Driver}
	for _, a := range []struct {
		attr int32
		dst  *int
	}{{attrCCMajor, &d.Major}, {attrCCMinor, &d.Minor}, {attrMultiprocessors, &d.Multiprocessors}, {attrComputeMode, (*int)(&d.ComputeMode)}} {
		var v int32
		if err := check("cuDeviceGetAttribute", r.d.cuDeviceGetAttribute(&v, a.attr, dev)); err != nil {
			return Device{}, err
		}
		*a.dst = int(v)
	}
	if err := check("cuDeviceTotalMem_v2", r.d.cuDeviceTotalMem(&d.Memory, dev)); err != nil {
		return Device{}, err
	}
	return d, nil
}

// ErrNoBackend says that a train stage kind has no way to train on a GPU:
// spn's own train stage (stages/train) trains the model kinds with device
// math there, locally, in spn bench and in Slurm jobs; a train kind of
// another package (a test's) does not.
var ErrNoBackend = errors.New("this train stage kind has no CUDA backend (spn's own train stage has, for the model kinds with device math)")
