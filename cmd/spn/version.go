package main

import (
	"fmt"
	"runtime"
	"strings"
	"time"

	"github.com/spn-project/spn/models/cuda"
	"github.com/spn-project/spn/models/cuda/kern"
	"github.com/spn-project/spn/models/kernels"
	"github.com/spn-project/spn/stages/device"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

const versionUsage = `version [--cuda]

Prints spn's version. With --cuda it also reports what --device cuda
would find on this machine: the Go toolchain and the CPU's matrix-multiply
build; the NVIDIA driver's CUDA version, the NVRTC and cuBLAS libraries
spn loaded (from $SPN_CUDA_LIBS, else through the dynamic loader) and
every GPU; and whether NVRTC compiles spn's kernels for GPU 0 (a CUBIN
for its architecture where NVRTC targets it, else PTX) and the driver
loads them there, in how long. It exits 1 when any of that fails, with the loader's or the
compiler's message: a check to run on a new GPU machine or in a job.`

func cmdVersion(a *app, args []string) error {
	fs := a.newFlagSet("version", versionUsage)
	withCUDA := fs.Bool("cuda", false, "also report the CUDA driver, NVRTC, cuBLAS and GPUs spn finds, and compile its kernels for GPU 0 and load them there")
	rest, err := parseArgs(fs, args)
	if err != nil {
		return usageErr("version", err)
	}
	if len(rest) > 0 {
		return usageErrf("version", "unexpected argument %q", rest[0])
	}
	fmt.Fprintf(a.stdout, "spn %s\n", version)
	if !*withCUDA {
		return nil
	}
	fmt.Fprintf(a.stdout, "%s %s/%s, GEMM %s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH, gemmName(kernels.GEMM, kernels.GEMMKernels()))
	if err := a.reportCUDA(); err != nil {
		return runtimeErr("version", err)
	}
	return nil
}

// reportCUDA prints the CUDA libraries and GPUs spn finds, compiles the
// kernels for GPU 0 and loads them there; the first failure is its
// error.
func (a *app) reportCUDA() error {
	rt, err := cuda.Probe(a.cudaOpener())
	if err != nil {
		return err
	}
	nvrtc := make([]string, len(rt.NVRTCs))
	for i, l := range rt.NVRTCs {
		nvrtc[i] = fmt.Sprintf("NVRTC %v (%s)", l.Version, l.Name)
	}
	fmt.Fprintf(a.stdout, "cuda: driver CUDA %v; %s; cuBLAS %v (%s)\n", rt.Driver, strings.Join(nvrtc, ", "), rt.CuBLAS.Version, rt.CuBLAS.Name)
	var first cuda.Device
	for i := range rt.Devices {
		d, err := rt.Device(i)
		if err != nil {
			return err
		}
		if i == 0 {
			first = d
		}
		fmt.Fprintf(a.stdout, "%v\n", d)
	}
	start := time.Now()
	ptx, c, err := device.CompileKernels(rt, first)
	if err != nil {
		return err
	}
	what := "PTX"
	if c.CUBIN() {
		what = "CUBIN"
	}
	fmt.Fprintf(a.stdout, "kernels: %d compiled for %s by NVRTC %v in %.2f s (%d bytes of %s)\n",
		len(kern.Kernels()), c.Arch, c.NVRTC.Version, time.Since(start).Seconds(), len(ptx), what)
	start = time.Now()
	if err := device.LoadKernels(rt, first.Ordinal, ptx); err != nil {
		return err
	}
	fmt.Fprintf(a.stdout, "kernels: loaded on cuda:%d in %.2f s\n", first.Ordinal, time.Since(start).Seconds())
	return nil
}
