package cuda_test

import (
	"errors"
	"fmt"
	"github.com/spn-project/spn/internal/testkit/cudatest"
	"github.com/spn-project/spn/models/cuda"
	"strings"
	"testing"
)

var h200 = cudatest.FakeGPU{Name: "NVIDIA H200", Major: 9, Minor: 0, SMs: 132, Memory: 143771336704}

func TestProbeFindsDevice(t *testing.T) {
	r, err := cuda.Probe(cudatest.FakeMachine(h200))
	if err != nil {
		t.Fatal(err)
	}
	if r.Driver != (cuda.Version{13, 0}) || r.NVRTC != (cuda.Lib{cuda.NVRTC13, cuda.Version{13, 0}}) || r.CuBLAS != (cuda.Lib{cuda.CuBLAS13, cuda.Version{13, 0}}) || r.Devices != 1 {
		t.Fatalf("runtime %+v", r)
	}
	d, err := r.Device(0)
	if err != nil {
		t.Fatal(err)
	}
	want := cuda.Device{Ordinal: 0, Name: "NVIDIA H200", Major: 9, Minor: 0, Multiprocessors: 132, Memory: 143771336704, Driver: cuda.Version{13, 0}}
	if d != want {
		t.Fatalf("device %+v, want %+v", d, want)
	}
	if got, w := d.String(), "NVIDIA H200 (cuda:0, compute capability 9.0, 133.9 GiB, driver CUDA 13.0)"; got != w {
		t.Errorf("String() = %q, want %q", got, w)
	}
	if d.Arch() != "compute_90" {
		t.Errorf("Arch() = %q", d.Arch())
	}
}

// TestProbeErrors covers every way discovery fails: each case edits the
// fake machine and names the words the error must hold.
func TestProbeErrors(t *testing.T) {
	for _, c := range []struct {
		name string
		edit func(cudatest.FakeOpener)
		want []string
	}{
		{"no libcuda", func(o cudatest.FakeOpener) { delete(o, cuda.DriverLib) },
			[]string{"cannot load the NVIDIA driver API", "tried libcuda.so.1", "searched the fake path", "No such file"}},
		{"missing driver symbol", func(o cudatest.FakeOpener) { delete(o[cuda.DriverLib], "cuDeviceTotalMem_v2") },
			[]string{"libcuda.so.1 has no symbol cuDeviceTotalMem_v2", "undefined symbol"}},
		{"cuInit sees no device", func(o cudatest.FakeOpener) { o[cuda.DriverLib] = cudatest.FakeDriver(13000, 100, h200) },
			[]string{"cuda: cuInit failed: CUDA_ERROR_NO_DEVICE (100): the NVIDIA driver (CUDA 13.0) loaded but sees no CUDA device"}},
		{"cuInit fails", func(o cudatest.FakeOpener) { o[cuda.DriverLib] = cudatest.FakeDriver(13000, 999, h200) },
			[]string{"cuda: cuInit failed: CUDA_ERROR_UNKNOWN (999)"}},
		{"driver too old", func(o cudatest.FakeOpener) { o[cuda.DriverLib] = cudatest.FakeDriver(11080, 0, h200) },
			[]string{"driver supports CUDA 11.8", "needs CUDA 12.0 or newer"}},
		{"no devices", func(o cudatest.FakeOpener) { o[cuda.DriverLib] = cudatest.FakeDriver(13000, 0) },
			[]string{"driver (CUDA 13.0) loaded but sees no CUDA device"}},
		{"no nvrtc", func(o cudatest.FakeOpener) { delete(o, cuda.NVRTC13); delete(o, cuda.NVRTC12) },
			[]string{"cannot load NVRTC: tried libnvrtc.so.13, libnvrtc.so.12", "; libnvrtc.so.12: cannot open"}},
		{"nvrtc newer than driver, no 12", func(o cudatest.FakeOpener) {
			o[cuda.DriverLib] = cudatest.FakeDriver(12040, 0, h200)
			delete(o, cuda.NVRTC12)
		},
			[]string{"libnvrtc.so.13: NVRTC 13.0 writes PTX and CUBINs that a CUDA 12.4 driver cannot load", "; libnvrtc.so.12: cannot open"}},
		{"nvrtc symbol missing", func(o cudatest.FakeOpener) { o[cuda.NVRTC13] = cudatest.FakeLib{} },
			[]string{"libnvrtc.so.13 has no symbol nvrtcVersion"}},
		{"no cublas", func(o cudatest.FakeOpener) { delete(o, cuda.CuBLAS13); delete(o, cuda.CuBLAS12) },
			[]string{"cannot load cuBLAS: tried libcublas.so.13, libcublas.so.12"}},
		{"cublas too new", func(o cudatest.FakeOpener) {
			o[cuda.DriverLib] = cudatest.FakeDriver(12080, 0, h200)
			delete(o, cuda.CuBLAS12)
		},
			[]string{"cuBLAS 13.0 needs a CUDA 13 driver, this one is CUDA 12.8"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := cudatest.FakeMachine(h200) // fresh maps: edits stay in this case
			c.edit(o)
			r, err := cuda.Probe(o)
			if err == nil {
				t.Fatalf("cuda.Probe succeeded: %+v", r)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func TestProbeFallsBackToCUDA12(t *testing.T) {
	o := cudatest.FakeMachine(h200)
	o[cuda.DriverLib] = cudatest.FakeDriver(12040, 0, h200)
	o[cuda.NVRTC12] = cudatest.FakeNVRTC(12, 4)
	r, err := cuda.Probe(o)
	if err != nil {
		t.Fatal(err)
	}
	if r.NVRTC != (cuda.Lib{cuda.NVRTC12, cuda.Version{12, 4}}) || r.CuBLAS != (cuda.Lib{cuda.CuBLAS12, cuda.Version{12, 8}}) {
		t.Fatalf("loaded %+v and %+v, want the CUDA 12 libraries", r.NVRTC, r.CuBLAS)
	}
}

// TestProbeNoDeviceIs: Probe's error wraps cuda.ErrNoDevice when the
// driver counts no device and when cuInit fails with
// CUDA_ERROR_NO_DEVICE (what NVIDIA's driver does without a GPU; the
// CallError is wrapped too), and only then.
func TestProbeNoDeviceIs(t *testing.T) {
	for _, c := range []struct {
		name       string
		driver     cudatest.FakeLib
		noDevice   bool
		callResult cuda.Result // the wrapped CallError's, 0 for none
	}{
		{"no device counted", cudatest.FakeDriver(13000, 0), true, 0},
		{"cuInit CUDA_ERROR_NO_DEVICE", cudatest.FakeDriver(13000, 100, h200), true, 100},
		{"cuInit CUDA_ERROR_UNKNOWN", cudatest.FakeDriver(13000, 999, h200), false, 999},
	} {
		o := cudatest.FakeMachine(h200)
		o[cuda.DriverLib] = c.driver
		_, err := cuda.Probe(o)
		if err == nil {
			t.Fatalf("%s: cuda.Probe succeeded", c.name)
		}
		if errors.Is(err, cuda.ErrNoDevice) != c.noDevice {
			t.Errorf("%s: errors.Is(%v, cuda.ErrNoDevice) = %v", c.name, err, !c.noDevice)
		}
		var ce *cuda.CallError
		if got := errors.As(err, &ce); got != (c.callResult != 0) || got && (ce.Call != "cuInit" || ce.Result != c.callResult) {
			t.Errorf("%s: error %v wraps CallError %v (%+v), want result %d", c.name, err, got, ce, c.callResult)
		}
	}
}

func TestDeviceOrdinal(t *testing.T) {
	o := cudatest.FakeMachine(h200)
	o[cuda.DriverLib] = cudatest.FakeDriver(13000, 0, h200, cudatest.FakeGPU{Name: "NVIDIA A100-SXM4-80GB", Major: 8, Minor: 0, SMs: 108, Memory: 85899345920})
	r, err := cuda.Probe(o)
	if err != nil {
		t.Fatal(err)
	}
	d, err := r.Device(1)
	if err != nil || d.Name != "NVIDIA A100-SXM4-80GB" || d.Arch() != "compute_80" {
		t.Fatalf("Device(1) = %+v, %v", d, err)
	}
	for _, n := range []int{-1, 2} {
		_, err := r.Device(n)
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("no device cuda:%d: the driver sees 2 device(s), cuda:0 to cuda:1", n)) {
			t.Errorf("Device(%d): %v", n, err)
		}
	}
}

// TestCallError: a failed call names the entry point and its code, by
// name where the code is known (CUresult, or cublasStatus_t for cuBLAS).
func TestCallError(t *testing.T) {
	for _, c := range []struct {
		err  cuda.CallError
		want string
	}{
		{cuda.CallError{Call: "cuLaunchKernel", Result: 719}, "cuda: cuLaunchKernel failed: CUDA_ERROR_LAUNCH_FAILED (719)"},
		{cuda.CallError{Call: "cuMemAlloc_v2", Result: 2}, "cuda: cuMemAlloc_v2 failed: CUDA_ERROR_OUT_OF_MEMORY (2)"},
		{cuda.CallError{Call: "cuCtxSynchronize", Result: 12345}, "cuda: cuCtxSynchronize failed: CUresult 12345"},
		{cuda.CallError{Call: "cublasSgemm_v2", Result: 7}, "cuda: cublasSgemm_v2 failed: CUBLAS_STATUS_INVALID_VALUE (7)"},
		{cuda.CallError{Call: "cublasCreate_v2", Result: 99}, "cuda: cublasCreate_v2 failed: cublasStatus 99"},
	} {
		if got := c.err.Error(); got != c.want {
			t.Errorf("%q, want %q", got, c.want)
		}
	}
}

// TestCallErrorIs: a driver call's CUDA_ERROR_OUT_OF_MEMORY is
// cuda.ErrOutOfMemory, its sticky errors (a kernel's fault, an
// uncorrectable ECC error) cuda.ErrContextLost; a cuBLAS status of the
// same number is neither.
func TestCallErrorIs(t *testing.T) {
	for _, c := range []struct {
		call      string
		result    cuda.Result
		oom, lost bool
	}{
		{"cuMemAlloc_v2", 2, true, false},
		{"cublasCreate_v2", 2, false, false},
		{"cuLaunchKernel", 700, false, true},
		{"cuStreamSynchronize", 719, false, true},
		{"cuEventSynchronize", 716, false, true},
		{"cuMemcpyDtoH_v2", 214, false, true},
		{"cuLaunchKernel", 701, false, false}, // too many resources: not sticky
		{"cuModuleLoadData", 218, false, false},
		{"cublasSgemm_v2", 13, false, false},
	} {
		err := error(&cuda.CallError{Call: c.call, Result: c.result})
		if got := errors.Is(err, cuda.ErrOutOfMemory); got != c.oom {
			t.Errorf("%v: errors.Is ErrOutOfMemory %v, want %v", err, got, c.oom)
		}
		if got := errors.Is(err, cuda.ErrContextLost); got != c.lost {
			t.Errorf("%v: errors.Is ErrContextLost %v, want %v", err, got, c.lost)
		}
	}
}

// TestJITResultNames: the results a module load can fail with are named
// as cuda.h names them (CUresult 209, 218, 220 to 223).
func TestJITResultNames(t *testing.T) {
	for r, want := range map[cuda.Result]string{
		209: "CUDA_ERROR_NO_BINARY_FOR_GPU (209)",
		218: "CUDA_ERROR_INVALID_PTX (218)",
		220: "CUDA_ERROR_NVLINK_UNCORRECTABLE (220)",
		221: "CUDA_ERROR_JIT_COMPILER_NOT_FOUND (221)",
		222: "CUDA_ERROR_UNSUPPORTED_PTX_VERSION (222)",
		223: "CUDA_ERROR_JIT_COMPILATION_DISABLED (223)",
	} {
		if got := r.String(); got != want {
			t.Errorf("CUresult %d reads %q, want %q", int32(r), got, want)
		}
	}
}
