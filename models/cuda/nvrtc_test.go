package cuda_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spn-project/spn/internal/testkit/cudatest"
	"github.com/spn-project/spn/models/cuda"
	"github.com/spn-project/spn/models/cuda/kern"
)

var (
	a100 = cudatest.FakeGPU{Name: "NVIDIA A100-SXM4-80GB", Major: 8, Minor: 0, SMs: 108, Memory: 85899345920}
	v100 = cudatest.FakeGPU{Name: "Tesla V100-SXM2-32GB", Major: 7, Minor: 0, SMs: 80, Memory: 34359738368}
)

// machine returns a fake machine with the GPUs whose NVRTC 13 and 12 are
// the returned fake compilers.
func machine(gpus ...cudatest.FakeGPU) (cudatest.FakeOpener, *cudatest.FakeCompiler, *cudatest.FakeCompiler) {
	o := cudatest.FakeMachine(gpus...)
	c13, c12 := cudatest.NewFakeCompiler(13, 0), cudatest.NewFakeCompiler(12, 8)
	o[cuda.NVRTC13], o[cuda.NVRTC12] = c13.Lib(), c12.Lib()
	return o, c13, c12
}

// compiler probes o and returns the compiler of device ordinal.
func compiler(t *testing.T, o cuda.Opener, ordinal int) *cuda.Compiler {
	t.Helper()
	r, err := cuda.Probe(o)
	if err != nil {
		t.Fatal(err)
	}
	d, err := r.Device(ordinal)
	if err != nil {
		t.Fatal(err)
	}
	c, err := r.Compiler(d)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestProbeLoadsEveryNVRTC(t *testing.T) {
	o, _, _ := machine(h200)
	r, err := cuda.Probe(o)
	if err != nil {
		t.Fatal(err)
	}
	want := []cuda.Lib{{cuda.NVRTC13, cuda.Version{13, 0}}, {cuda.NVRTC12, cuda.Version{12, 8}}}
	if len(r.NVRTCs) != 2 || r.NVRTCs[0] != want[0] || r.NVRTCs[1] != want[1] || r.NVRTC != want[0] {
		t.Fatalf("NVRTC %+v, NVRTCs %+v; want %+v", r.NVRTC, r.NVRTCs, want)
	}
	delete(o, cuda.NVRTC12)
	if r, err = cuda.Probe(o); err != nil || len(r.NVRTCs) != 1 {
		t.Fatalf("without NVRTC 12: %+v, %v", r, err)
	}
	o[cuda.NVRTC12] = cudatest.FakeLib{"nvrtcVersion": func(a, b *int32) int32 { return 0 }} // an NVRTC 12 that cannot compile
	if r, err = cuda.Probe(o); err != nil || len(r.NVRTCs) != 1 {
		t.Fatalf("with a broken NVRTC 12: %+v, %v (want it left out)", r, err)
	}
}

// TestChooseNVRTC: NVRTC 13 targets compute capability 7.5 and newer,
// NVRTC 12 5.0 and newer; the newest that targets the device wins.
func TestChooseNVRTC(t *testing.T) {
	n13, n12 := cuda.Lib{Name: cuda.NVRTC13, Version: cuda.Version{13, 0}}, cuda.Lib{Name: cuda.NVRTC12, Version: cuda.Version{12, 8}}
	dev := func(name string, major, minor int) cuda.Device {
		return cuda.Device{Name: name, Major: major, Minor: minor}
	}
	for _, c := range []struct {
		name    string
		d       cuda.Device
		loaded  []cuda.Lib
		want    cuda.Lib
		wantErr []string
	}{
		{"H200", dev("H200", 9, 0), []cuda.Lib{n13, n12}, n13, nil},
		{"order", dev("H200", 9, 0), []cuda.Lib{n12, n13}, n13, nil},
		{"T4 is 7.5", dev("T4", 7, 5), []cuda.Lib{n13, n12}, n13, nil},
		{"V100", dev("V100", 7, 0), []cuda.Lib{n13, n12}, n12, nil},
		{"P100 only 12", dev("P100", 6, 0), []cuda.Lib{n12}, n12, nil},
		{"V100 without 12", dev("V100", 7, 0), []cuda.Lib{n13}, cuda.Lib{},
			[]string{"V100 has compute capability 7.0, which no loaded NVRTC compiles for: NVRTC 13.0 (libnvrtc.so.13) targets compute capability 7.5 and newer", "install CUDA 12's NVRTC (libnvrtc.so.12)"}},
		{"Kepler", dev("K80", 3, 7), []cuda.Lib{n13, n12}, cuda.Lib{},
			[]string{"K80 has compute capability 3.7", "NVRTC 12.8 (libnvrtc.so.12) targets compute capability 5.0 and newer"}},
		{"none", dev("H200", 9, 0), nil, cuda.Lib{}, []string{"no NVRTC is loaded"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := cuda.ChooseNVRTC(c.d, c.loaded)
			if c.wantErr == nil {
				if err != nil || got != c.want {
					t.Fatalf("ChooseNVRTC = %+v, %v; want %+v", got, err, c.want)
				}
				return
			}
			if err == nil {
				t.Fatalf("ChooseNVRTC = %+v, want an error", got)
			}
			for _, w := range c.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func TestCompile(t *testing.T) {
	o, c13, c12 := machine(h200, v100)
	c := compiler(t, o, 0)
	if c.NVRTC.Name != cuda.NVRTC13 || c.Arch != "sm_90" || !c.CUBIN() {
		t.Fatalf("compiler %+v for the H200: want a CUBIN for sm_90", c)
	}
	ptx, err := c.Compile(kern.Name, kern.Source(), kern.Options()...)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(ptx), ".target sm_90\n") || ptx[len(ptx)-1] != 0 {
		t.Errorf("PTX %q: want .target sm_90, NUL-terminated", ptx)
	}
	if got := strings.Join(c13.Options[0], " "); got != "--gpu-architecture=sm_90 --fmad=false" {
		t.Errorf("options %q", got)
	}
	if c13.Live != 0 {
		t.Errorf("%d programs not destroyed", c13.Live)
	}
	// The V100 compiles with NVRTC 12.
	cv := compiler(t, o, 1)
	if cv.NVRTC.Name != cuda.NVRTC12 || cv.Arch != "sm_70" {
		t.Fatalf("compiler %+v for the V100", cv)
	}
	if _, err := cv.Compile(kern.Name, kern.Source()); err != nil || c12.Compiles != 1 {
		t.Fatalf("V100: %v, %d compiles by NVRTC 12", err, c12.Compiles)
	}
}

func TestCompileError(t *testing.T) {
	o, c13, _ := machine(h200)
	c := compiler(t, o, 0)
	src := kern.Source() + "#line 1 \"broken.cu\"\nint x;\n\n#error boom\n"
	_, err := c.Compile(kern.Name, src)
	var ce *cuda.CompileError
	if !errors.As(err, &ce) {
		t.Fatalf("error %v is not a *cuda.CompileError", err)
	}
	for _, w := range []string{"cuda: NVRTC 13.0 (libnvrtc.so.13) cannot compile spn_kernels.cu for sm_90: NVRTC_ERROR_COMPILATION (6)", "\nbroken.cu(3): catastrophic error: #error directive: boom"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q lacks %q", err, w)
		}
	}
	if strings.Contains(ce.Log, "\x00") {
		t.Errorf("log %q keeps NVRTC's NUL", ce.Log)
	}
	if _, err := c.Compile(kern.Name, "int x;", "bad-option"); err == nil || !strings.Contains(err.Error(), "NVRTC_ERROR_INVALID_OPTION (5)") || !strings.Contains(err.Error(), "nvrtc: error: unrecognized option bad-option found") {
		t.Errorf("bad option: %v", err)
	}
	if c13.Live != 0 {
		t.Errorf("%d programs not destroyed", c13.Live)
	}
}

// TestOpenCompiler opens a fake NVRTC on its own, without a driver: a
// virtual architecture compiles to PTX, a real one to a CUBIN (and the
// options name it); a bad architecture, a missing library and a library
// without the CUBIN entry points are errors naming them.
func TestOpenCompiler(t *testing.T) {
	for _, c := range []struct {
		name, arch string
		edit       func(cudatest.FakeOpener)
		cubin      bool
		wantErr    string
	}{
		{name: "PTX", arch: "compute_80"},
		{name: "CUBIN", arch: "sm_90", cubin: true},
		{name: "CUBIN with a feature suffix", arch: "sm_90a", cubin: true},
		{name: "no prefix", arch: "90", wantErr: `cuda: NVRTC architecture "90": want compute_XX (PTX) or sm_XX (a CUBIN), e.g. compute_90`},
		{name: "one digit", arch: "compute_9", wantErr: `NVRTC architecture "compute_9"`},
		{name: "no underscore", arch: "sm90", wantErr: `NVRTC architecture "sm90"`},
		{name: "no library", arch: "sm_90", edit: func(o cudatest.FakeOpener) { delete(o, cuda.NVRTC12) },
			wantErr: "cuda: cannot load NVRTC: tried libnvrtc.so.12 (searched the fake path); libnvrtc.so.12: cannot open shared object file"},
		{name: "no CUBIN entry point", arch: "compute_90", edit: func(o cudatest.FakeOpener) { delete(o[cuda.NVRTC12], "nvrtcGetCUBIN") },
			wantErr: "cuda: libnvrtc.so.12 has no symbol nvrtcGetCUBIN"},
	} {
		t.Run(c.name, func(t *testing.T) {
			fc := cudatest.NewFakeCompiler(12, 8)
			o := cudatest.FakeOpener{cuda.NVRTC12: fc.Lib()}
			if c.edit != nil {
				c.edit(o)
			}
			comp, err := cuda.OpenCompiler(o, cuda.NVRTC12, c.arch)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("error %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if want := (cuda.Lib{Name: cuda.NVRTC12, Version: cuda.Version{12, 8}}); comp.NVRTC != want || comp.Arch != c.arch || comp.CUBIN() != c.cubin {
				t.Fatalf("compiler %+v, CUBIN %v; want %+v for %s, CUBIN %v", comp, comp.CUBIN(), want, c.arch, c.cubin)
			}
			image, log, err := comp.CompileLog(kern.Name, kern.Source(), kern.Options()...)
			if err != nil {
				t.Fatal(err)
			}
			if isCUBIN := strings.HasPrefix(string(image), cudatest.FakeCUBIN); isCUBIN != c.cubin {
				t.Errorf("image %.40q: CUBIN %v, want %v", image, isCUBIN, c.cubin)
			}
			if log != "" {
				t.Errorf("log %q, want none", log)
			}
			if got, want := strings.Join(fc.Options[0], " "), "--gpu-architecture="+c.arch+" --fmad=false"; got != want {
				t.Errorf("options %q, want %q", got, want)
			}
			if fc.Live != 0 {
				t.Errorf("%d programs not destroyed", fc.Live)
			}
		})
	}
}

// entries lists the files under dir (temporary files included).
func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

func TestPTXCache(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ptx")
	o, c13, _ := machine(h200, a100)
	c := compiler(t, o, 0)
	src, opts := kern.Source(), kern.Options()
	cached := func(c *cuda.Compiler, src string, opts []string, wantHit bool, wantCompiles int) []byte {
		t.Helper()
		ptx, hit, err := c.CompileCached(dir, kern.Name, src, opts...)
		if err != nil {
			t.Fatal(err)
		}
		if hit != wantHit || c13.Compiles != wantCompiles {
			t.Fatalf("hit %v after %d compiles; want %v after %d", hit, c13.Compiles, wantHit, wantCompiles)
		}
		return ptx
	}
	first := cached(c, src, opts, false, 1)
	if again := cached(c, src, opts, true, 1); string(again) != string(first) {
		t.Fatalf("cached PTX %q, compiled %q", again, first)
	}
	path := cuda.PTXPath(dir, c.Arch, cuda.PTXKey(c.NVRTC, c.Arch, kern.Name, src, opts))
	if _, err := os.Stat(path); err != nil {
		t.Fatal(err)
	}
	// Another architecture, source or option set misses.
	cached(compiler(t, o, 1), src, opts, false, 2)
	cached(c, src+"\n", opts, false, 3)
	cached(c, src, nil, false, 4)
	if n := len(entries(t, dir)); n != 4 {
		t.Fatalf("%d cache entries, want 4: %v", n, entries(t, dir))
	}
	// Another NVRTC version misses.
	o2, c131, _ := machine(h200)
	o2[cuda.DriverLib] = cudatest.FakeDriver(13010, 0, h200)
	c131.Minor = 1
	ptx, hit, err := compiler(t, o2, 0).CompileCached(dir, kern.Name, src, opts...)
	if err != nil || hit || c131.Compiles != 1 || string(ptx) == string(first) {
		t.Fatalf("NVRTC 13.1: hit %v, %d compiles, %v", hit, c131.Compiles, err)
	}
	// A damaged entry is compiled again and replaced.
	whole, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	flip := append([]byte(nil), whole...)
	flip[len(flip)-3] ^= 1
	compiles := c13.Compiles
	for _, bad := range [][]byte{whole[:len(whole)-1], whole[:10], nil, []byte("garbage"), flip} {
		if err := os.WriteFile(path, bad, 0o644); err != nil {
			t.Fatal(err)
		}
		compiles++
		if got := cached(c, src, opts, false, compiles); string(got) != string(first) {
			t.Fatalf("recompiled PTX %q, want %q", got, first)
		}
		if now, _ := os.ReadFile(path); string(now) != string(whole) {
			t.Fatalf("entry not replaced: %q", now)
		}
	}
	cached(c, src, opts, true, compiles)
}

func TestPTXCacheFailedCompileWritesNothing(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ptx")
	o, _, _ := machine(h200)
	c := compiler(t, o, 0)
	_, _, err := c.CompileCached(dir, kern.Name, "#line 1 \"hops.cu\"\n#error no\n")
	if err == nil || !strings.Contains(err.Error(), "hops.cu(1): catastrophic error: #error directive: no") {
		t.Fatalf("error %v", err)
	}
	if es := entries(t, dir); len(es) != 0 {
		t.Fatalf("a failed compile left %v", es)
	}
	// An unwritable cache is an error naming the program, with no file left.
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.CompileCached(filepath.Join(file, "ptx"), kern.Name, "int x;"); err == nil || !strings.Contains(err.Error(), "cuda: caching the PTX of spn_kernels.cu") {
		t.Fatalf("cache under a file: %v", err)
	}
}

// TestPTXKey: every part of the key changes it.
func TestPTXKey(t *testing.T) {
	lib := cuda.Lib{Name: cuda.NVRTC13, Version: cuda.Version{13, 0}}
	base := cuda.PTXKey(lib, "compute_90", "a.cu", "src", []string{"--fmad=false"})
	seen := map[string]string{base: "base"}
	for name, k := range map[string]string{
		"library": cuda.PTXKey(cuda.Lib{Name: cuda.NVRTC12, Version: cuda.Version{13, 0}}, "compute_90", "a.cu", "src", []string{"--fmad=false"}),
		"version": cuda.PTXKey(cuda.Lib{Name: cuda.NVRTC13, Version: cuda.Version{13, 1}}, "compute_90", "a.cu", "src", []string{"--fmad=false"}),
		"arch":    cuda.PTXKey(lib, "compute_80", "a.cu", "src", []string{"--fmad=false"}),
		"name":    cuda.PTXKey(lib, "compute_90", "b.cu", "src", []string{"--fmad=false"}),
		"source":  cuda.PTXKey(lib, "compute_90", "a.cu", "src ", []string{"--fmad=false"}),
		"options": cuda.PTXKey(lib, "compute_90", "a.cu", "src", nil),
		"split":   cuda.PTXKey(lib, "compute_90", "a.cu", "src", []string{"--fmad", "=false"}),
	} {
		if prev, dup := seen[k]; dup {
			t.Errorf("changing the %s gives the key of %s", name, prev)
		}
		seen[k] = name
	}
	if len(base) != 64 || base != cuda.PTXKey(lib, "compute_90", "a.cu", "src", []string{"--fmad=false"}) {
		t.Errorf("key %q: want 64 hex digits, the same every time", base)
	}
}

// TestCompilerArchFallback: a GPU newer than the NVRTC that compiles for
// it gets PTX of the newest architecture that NVRTC targets (the driver
// compiles it for the GPU), and a CUBIN of its own where NVRTC knows it.
func TestCompilerArchFallback(t *testing.T) {
	b200 := cudatest.FakeGPU{Name: "NVIDIA B200", Major: 10, Minor: 0, SMs: 148, Memory: 192 << 30}
	o, _, _ := machine(b200)
	if c := compiler(t, o, 0); c.Arch != "sm_100" || c.NVRTC.Name != cuda.NVRTC13 {
		t.Errorf("B200 with NVRTC 13: %s by %s, want sm_100 by NVRTC 13", c.Arch, c.NVRTC.Name)
	}
	delete(o, cuda.NVRTC13)
	c12 := cudatest.NewFakeCompiler(12, 4) // before Blackwell
	o[cuda.NVRTC12] = c12.Lib()
	if c := compiler(t, o, 0); c.Arch != "compute_90" {
		t.Errorf("B200 with NVRTC 12.4: %s, want compute_90 (PTX the driver compiles for the B200)", c.Arch)
	}
}

// TestNVRTCNewerThanDriver: an NVRTC newer than the driver, of its
// major version (12.8 on a CUDA 12.4 driver), is not refused: it writes
// the CUBIN of a device whose architecture it targets (the driver loads
// that, not its PTX); for a device it writes no CUBIN for, the compiler
// is an older NVRTC's or an error saying why.
func TestNVRTCNewerThanDriver(t *testing.T) {
	o, _, _ := machine(h200)
	o[cuda.DriverLib] = cudatest.FakeDriver(12040, 0, h200)
	delete(o, cuda.NVRTC13)
	if c := compiler(t, o, 0); c.NVRTC.Version != (cuda.Version{12, 8}) || c.Arch != "sm_90" {
		t.Errorf("H200, driver CUDA 12.4, NVRTC 12.8: %s by NVRTC %v, want sm_90 by 12.8", c.Arch, c.NVRTC.Version)
	}
	r, err := cuda.Probe(o)
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.Compiler(cuda.Device{Name: "GPU", Major: 12, Minor: 1})
	if err == nil || !strings.Contains(err.Error(), "NVRTC 12.8 (libnvrtc.so.12) is newer than the driver (CUDA 12.4), whose JIT cannot load its PTX, and writes no CUBIN for compute capability 12.1") {
		t.Errorf("a device NVRTC 12.8 writes no CUBIN for, on a CUDA 12.4 driver: %v", err)
	}
}
