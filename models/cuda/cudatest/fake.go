// Package cudatest serves fake NVIDIA libraries (driver, NVRTC, cuBLAS)
// made of Go functions, for the tests of models/cuda and of the commands.
package cudatest

import (
	"fmt"
	"github.com/spn-project/spn/models/cuda"
	"reflect"
	"unsafe"
)

// NVIDIA's CUdevice_attribute values (cuda.h), stated here apart from
// models/cuda's own so that a wrong constant there fails its tests.
const (
	attrMultiprocessors = 16
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
			default:
				return 1
			}
			return 0
		},
		"cuDeviceTotalMem_v2": func(m *uint64, d int32) int32 { *m = gpus[d].Memory; return 0 },
	}
}

// FakeNVRTC is a libnvrtc of the given version.
func FakeNVRTC(major, minor int32) FakeLib {
	return FakeLib{"nvrtcVersion": func(a, b *int32) int32 { *a, *b = major, minor; return 0 }}
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
