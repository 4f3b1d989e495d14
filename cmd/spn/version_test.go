package main

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/spn-project/spn/internal/testkit/cudatest"
	"github.com/spn-project/spn/models/cuda"
)

// TestVersionCUDA: spn version --cuda reports the driver, the loaded
// NVRTCs and cuBLAS, every GPU and the kernels' compile on a machine of
// fake libraries; without a driver, or with no GPU, it prints the
// version and exits 1 with the loader's message. Plain spn version
// looks at no CUDA library.
func TestVersionCUDA(t *testing.T) {
	h200 := cudatest.FakeGPU{Name: "NVIDIA H200", Major: 9, Minor: 0, SMs: 132, Memory: 140 << 30}
	v100 := cudatest.FakeGPU{Name: "Tesla V100", Major: 7, Minor: 0, SMs: 80, Memory: 16 << 30}
	for _, tc := range []struct {
		name   string
		o      cuda.Opener
		args   []string
		code   int
		stdout []string // regular expressions, one per line, in order
		stderr string
	}{
		{"plain", cudatest.FakeOpener{}, nil, exitOK, []string{`^spn dev$`}, ""},
		// The fake driver has discovery only: the kernels compile (a
		// CUBIN for the H200) and their load is tried, and fails.
		{"two GPUs", cudatest.FakeMachine(h200, v100), []string{"--cuda"}, exitFail, []string{
			`^spn dev$`,
			`^go1\.\d+.* linux/amd64, GEMM .+$`,
			`^cuda: driver CUDA 13\.0; NVRTC 13\.0 \(libnvrtc\.so\.13\), NVRTC 12\.8 \(libnvrtc\.so\.12\); cuBLAS 13\.0 \(libcublas\.so\.13\)$`,
			`^NVIDIA H200 \(cuda:0, compute capability 9\.0, 140\.0 GiB, driver CUDA 13\.0\)$`,
			`^Tesla V100 \(cuda:1, compute capability 7\.0, 16\.0 GiB, driver CUDA 13\.0\)$`,
			`^kernels: \d+ compiled for sm_90 by NVRTC 13\.0 in \d+\.\d\d s \(\d+ bytes of CUBIN\)$`,
		}, "spn version: cuda: libcuda.so.1 has no symbol cuDevicePrimaryCtxRetain"},
		{"no driver", cudatest.FakeOpener{}, []string{"--cuda"}, exitFail, []string{`^spn dev$`, `^go1`},
			"spn version: cuda: cannot load the NVIDIA driver API: tried libcuda.so.1 (searched the fake path); libcuda.so.1: cannot open shared object file: No such file or directory\n"},
		{"no GPU", cudatest.FakeMachine(), []string{"--cuda"}, exitFail, []string{`^spn dev$`, `^go1`},
			"spn version: cuda: the NVIDIA driver (CUDA 13.0) loaded but sees no CUDA device\n"},
		{"argument", cudatest.FakeOpener{}, []string{"x"}, exitUsage, nil, "spn version: unexpected argument \"x\"\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			a := &app{stdout: &out, stderr: &errb, cuda: tc.o, getenv: func(string) string { return "" }}
			code := a.main(append([]string{"version"}, tc.args...))
			if code != tc.code || !strings.HasPrefix(errb.String(), tc.stderr) || (tc.stderr == "") != (errb.Len() == 0) {
				t.Fatalf("exit %d, stderr %q; want exit %d, %q", code, errb.String(), tc.code, tc.stderr)
			}
			lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
			if out.Len() == 0 {
				lines = nil
			}
			if len(lines) != len(tc.stdout) {
				t.Fatalf("stdout has %d lines, want %d:\n%s", len(lines), len(tc.stdout), out.String())
			}
			for i, re := range tc.stdout {
				if !regexp.MustCompile(re).MatchString(lines[i]) {
					t.Errorf("line %d %q does not match %s", i+1, lines[i], re)
				}
			}
		})
	}
}

// TestVersionCUDALoads: on the emulated device spn version --cuda
// compiles the kernels (a CUBIN for its compute capability 9.0) and
// loads them as a module on GPU 0, and says so.
func TestVersionCUDALoads(t *testing.T) {
	var out, errb bytes.Buffer
	a := &app{stdout: &out, stderr: &errb, cuda: cudatest.Emulator(t), getenv: func(string) string { return "" }}
	if code := a.main([]string{"version", "--cuda"}); code != exitOK {
		t.Fatalf("exit %d, stderr %q", code, errb.String())
	}
	for _, re := range []string{`(?m)^kernels: \d+ compiled for sm_90 by NVRTC \S+ in \d+\.\d\d s \(\d+ bytes of CUBIN\)$`, `(?m)^kernels: loaded on cuda:0 in \d+\.\d\d s$`} {
		if !regexp.MustCompile(re).MatchString(out.String()) {
			t.Errorf("stdout does not match %s:\n%s", re, out.String())
		}
	}
}
