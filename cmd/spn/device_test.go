package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spn-project/spn/internal/testkit/cudatest"
	"github.com/spn-project/spn/internal/testkit/golden"
	"github.com/spn-project/spn/models/cuda"
	"github.com/spn-project/spn/stages"
	"github.com/spn-project/spn/stages/cache"
	"github.com/spn-project/spn/stages/exec"
	"github.com/spn-project/spn/stages/plan"
)

var testH200 = cudatest.FakeGPU{Name: "NVIDIA H200", Major: 9, Minor: 0, SMs: 132, Memory: 143771336704}

// spnOn runs one command of the test engine on a machine whose CUDA
// libraries o serves (nil: the system's loader), with SPN_CACHE set to
// cacheDir.
func spnOn(o cuda.Opener, en *engine, cacheDir string, args ...string) result {
	var out, errb syncBuffer
	a := &app{stdout: &out, stderr: &errb, cuda: o, getenv: func(k string) string {
		if k == cache.EnvVar {
			return cacheDir
		}
		return ""
	}}
	var err error
	switch args[0] {
	case "plan":
		err = a.plan(en, args[1:])
	case "run":
		err = a.run(en, args[1:])
	case "table":
		err = a.table(en, args[1:])
	case "stage":
		err = a.stage(en, args[1:])
	case "bench":
		err = cmdBench(a, args[1:])
	case "calibrate":
		err = a.calibrate(en, args[1:])
	case "cache":
		err = a.cache(en, args[1:])
	case "status":
		err = a.status(en, args[1:])
	default:
		err = fmt.Errorf("spnOn: command %q is not wired into the test helper", args[0])
	}
	return result{a.exit(err), out.String(), errb.String()}
}

// gpuPlanFile plans the spec file for device cuda:0 and writes the plan
// file into dir: it returns the train stages' keys, in plan order, and the
// plan file's path (what spn stage run reads).
func gpuPlanFile(t *testing.T, en *engine, file, dir string) ([]string, string) {
	t.Helper()
	a := &app{stdout: &syncBuffer{}, stderr: &syncBuffer{}, getenv: func(string) string { return "" }}
	spec, err := a.loadSpec(en, "test", file, &envOpts{})
	if err != nil {
		t.Fatal(err)
	}
	spec.Device = "cuda:0"
	p, err := plan.Build(spec, en.reg)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, n := range p.Nodes {
		if n.Kind == stages.KindTrain {
			keys = append(keys, n.Key)
		}
	}
	pf, err := exec.NewPlanFile(spec.Name, p.Nodes).Write(dir)
	if err != nil {
		t.Fatal(err)
	}
	return keys, pf
}

// specWithDevice writes testdata/small.cue with the given device line.
func specWithDevice(t *testing.T, device string) string {
	t.Helper()
	src, err := os.ReadFile("testdata/small.cue")
	if err != nil {
		t.Fatal(err)
	}
	s := strings.Replace(string(src), "name: \"small\"\n", "name: \"small\"\ndevice: \""+device+"\"\n", 1)
	f := filepath.Join(t.TempDir(), "small.cue")
	if err := os.WriteFile(f, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

// TestDeviceErrors: a CUDA device fails with exit 2 before any stage
// runs, on a machine without a GPU with the loader's message, on one
// with a GPU naming it, and on one whose GPU no process may use (compute
// mode prohibited) naming the mode; the messages are in
// device_errors.golden.
func TestDeviceErrors(t *testing.T) {
	noGPU := cudatest.FakeOpener{}
	gpu := cudatest.FakeMachine(testH200)
	prohibited := testH200
	prohibited.ComputeMode = 2
	var report strings.Builder
	for _, c := range []struct {
		name string
		o    cuda.Opener
		args []string
	}{
		{"no GPU, --device cuda", noGPU, []string{"run", "testdata/small.cue", "--device", "cuda"}},
		{"no GPU, spec device cuda:1", noGPU, []string{"run", "SPEC:cuda:1"}},
		{"GPU, --device cuda", gpu, []string{"run", "testdata/small.cue", "--device", "cuda"}},
		{"GPU, --device cuda:1", gpu, []string{"run", "testdata/small.cue", "--device", "cuda:1"}},
		{"bad --device", gpu, []string{"run", "testdata/small.cue", "--device", "gpu:0"}},
		{"bench, GPU, kind graphormer", gpu, []string{"bench", "--device", "cuda:0", "--kind", "graphormer", "prox"}},
		{"bench, GPU, --jobs 2 --kernel-times", gpu, []string{"bench", "--device", "cuda", "--jobs", "2", "--kernel-times", "prox"}},
		{"bench, no GPU", noGPU, []string{"bench", "--device", "cuda", "prox"}},
		{"GPU prohibited, --device cuda", cudatest.FakeMachine(prohibited), []string{"run", "testdata/small.cue", "--device", "cuda"}},
		{"GPU prohibited, bench", cudatest.FakeMachine(prohibited), []string{"bench", "--device", "cuda", "prox"}},
		{"GPU prohibited, --gpus all", cudatest.FakeMachine(testH200, prohibited), []string{"run", "testdata/small.cue", "--device", "cuda", "--gpus", "all"}},
	} {
		args := append([]string{}, c.args...)
		if d, ok := strings.CutPrefix(args[1], "SPEC:"); ok {
			args[1] = specWithDevice(t, d)
		}
		cacheDir := filepath.Join(t.TempDir(), "cache")
		en := testEngine()
		if slices.Contains(args, "--gpus") { // spreadGPUs needs spn's own train kind, which has a CUDA backend
			en = realEngine()
		}
		r := spnOn(c.o, en, cacheDir, args...)
		if r.code != exitUsage {
			t.Errorf("%s: exit %d, want %d: %s", c.name, r.code, exitUsage, r.stderr)
		}
		if r.stdout != "" {
			t.Errorf("%s: printed %q", c.name, r.stdout)
		}
		if _, err := os.Stat(cacheDir); err == nil {
			t.Errorf("%s: the cache %s was created", c.name, cacheDir)
		}
		report.WriteString(c.name + ": " + r.stderr)
	}
	golden.Check(t, "testdata/device_errors.golden", []byte(report.String()))
}

// TestDeviceNVIDIADriver runs the spn binary with NVIDIA's driver
// library on LD_LIBRARY_PATH (cudatest.RealNVIDIA; Debian's driver 550)
// on a machine without a GPU: `run` and `bench` on device cuda exit 2
// before any stage runs, naming the device and CUDA_ERROR_NO_DEVICE, and
// write nothing (no cache, no results folder); `plan --device auto`
// plans the CPU's stages. A child process: the loader reads
// LD_LIBRARY_PATH when a process starts.
func TestDeviceNVIDIADriver(t *testing.T) {
	libs := cudatest.RealNVIDIA(t)
	bin := buildSpn(t)
	spec := testdataPath(t, "small.cue")
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"run", []string{"run", spec, "--device", "cuda"}, "spn run: device cuda:0: "},
		{"run cuda:1", []string{"run", spec, "--device", "cuda:1", "--out", "OUT"}, "spn run: device cuda:1: "},
		{"bench", []string{"bench", "--device", "cuda", "prox"}, "spn bench: device cuda:0: "},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			args := slices.Clone(c.args)
			for i, a := range args {
				if a == "OUT" {
					args[i] = filepath.Join(dir, "out")
				}
			}
			env := []string{libs.LibraryPath(), cache.EnvVar + "=" + filepath.Join(dir, "cache")}
			stdout, stderr, code := spnCmdEnv(t, bin, dir, env, args...)
			if code != exitUsage || stdout != "" {
				t.Errorf("exit %d, stdout %q; want exit %d and nothing printed", code, stdout, exitUsage)
			}
			want := c.want + "cuda: cuInit failed: CUDA_ERROR_NO_DEVICE (100): the NVIDIA driver (CUDA "
			if !strings.HasPrefix(stderr, want) || !strings.HasSuffix(stderr, ") loaded but sees no CUDA device\n") {
				t.Errorf("stderr %q, want %q…) loaded but sees no CUDA device", stderr, want)
			}
			if es, err := os.ReadDir(dir); err != nil || len(es) != 0 {
				t.Errorf("spn wrote %v in its folder (%v)", es, err)
			}
			t.Log(strings.TrimSpace(stderr))
		})
	}
	t.Run("auto", func(t *testing.T) {
		dir := t.TempDir()
		env := []string{libs.LibraryPath(), cache.EnvVar + "=" + filepath.Join(dir, "cache")}
		auto, stderr, code := spnCmdEnv(t, bin, dir, env, "plan", spec, "--device", "auto")
		if code != exitOK {
			t.Fatalf("plan --device auto: exit %d: %s", code, stderr)
		}
		cpu, stderr, code := spnCmdEnv(t, bin, dir, env, "plan", spec, "--device", "cpu")
		if code != exitOK || auto != cpu {
			t.Errorf("plan --device cpu: exit %d: %s\nplans %q (auto) and %q (cpu), want the same", code, stderr, auto, cpu)
		}
	})
}

// TestDeviceKeys: "cpu" gives the keys of a spec without a device, on a
// machine with a GPU too; "cuda" gives other train keys, and spn plan
// shows them without looking for a GPU. "auto" gives the CPU's keys on a
// machine without a GPU, the GPU's on one with a GPU, and the CPU's there
// too when a model of the spec has no device math (graphormer).
func TestDeviceKeys(t *testing.T) {
	cacheDir := filepath.Join(t.TempDir(), "cache")
	gpu, noGPU := cudatest.FakeMachine(testH200), cudatest.FakeOpener{}
	plan := func(o cuda.Opener, file string) string {
		t.Helper()
		r := spnOn(o, testEngine(), cacheDir, "plan", "--json", file)
		if r.code != exitOK {
			t.Fatalf("plan %s: exit %d: %s", file, r.code, r.stderr)
		}
		return r.stdout
	}
	base := plan(gpu, "testdata/small.cue")
	onGPU := plan(noGPU, specWithDevice(t, "cuda"))
	withGraphormer := func(device string) string {
		src, err := os.ReadFile(specWithDevice(t, device))
		if err != nil {
			t.Fatal(err)
		}
		f := filepath.Join(t.TempDir(), "graphormer.cue")
		if err := os.WriteFile(f, []byte(strings.Replace(string(src), `model: kind: "gin"`, `model: {kind: "graphormer", max_dist: 3}`, 1)), 0o644); err != nil {
			t.Fatal(err)
		}
		return f
	}
	for _, c := range []struct {
		what string
		got  string
		want string
	}{
		{"cpu, machine with a GPU", plan(gpu, specWithDevice(t, "cpu")), base},
		{"auto, machine without a GPU", plan(noGPU, specWithDevice(t, "auto")), base},
		{"auto, machine with a GPU", plan(gpu, specWithDevice(t, "auto")), onGPU},
		{"auto, machine with a GPU, a graphormer experiment", plan(gpu, withGraphormer("auto")), plan(gpu, withGraphormer("cpu"))},
	} {
		if c.got != c.want {
			t.Errorf("%s: not the plan it should resolve to", c.what)
		}
	}
	if onGPU == base {
		t.Fatal("the cuda plan is the CPU's")
	}
	type stage struct{ Key, Kind string }
	var a, b []stage
	if err := json.Unmarshal([]byte(base), &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(onGPU), &b); err != nil {
		t.Fatal(err)
	}
	if len(a) == 0 || len(a) != len(b) {
		t.Fatalf("%d and %d stages", len(a), len(b))
	}
	for i := range a {
		same := a[i].Key == b[i].Key
		if a[i].Kind == stages.KindTrain && same {
			t.Errorf("stage %d (train) has its CPU key on cuda", i)
		}
		if (a[i].Kind == stages.KindGenerate || a[i].Kind == stages.KindPrecompute) && !same {
			t.Errorf("stage %d (%s) changed key on cuda", i, a[i].Kind)
		}
	}
}

// TestStageRunDevice: spn stage run of a train stage planned for a GPU
// refuses --device cpu and, without --device, fails naming the GPU and
// the missing backend, running nothing.
func TestStageRunDevice(t *testing.T) {
	dir := t.TempDir()
	en := testEngine()
	keys, pf := gpuPlanFile(t, en, "testdata/small.cue", dir)
	train := keys[0]
	cacheDir := filepath.Join(dir, "cache")
	gpu := cudatest.FakeMachine(testH200)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--device", "cpu"}, "spn stage run: --device cpu: the stages were planned for a GPU (device cuda); give --device cuda:N\n"},
		{nil, "spn stage run: device cuda:0: found NVIDIA H200 (cuda:0, compute capability 9.0, 133.9 GiB, driver CUDA 13.0), but this train stage kind has no CUDA backend (spn's own train stage has, for the model kinds with device math)\n"},
		{[]string{"--device", "cuda:1"}, "spn stage run: device cuda:1: cuda: no device cuda:1: the driver sees 1 device(s), cuda:0 to cuda:0\n"},
	} {
		args := append([]string{"stage", "run", train, "--plan", pf}, c.args...)
		r := spnOn(gpu, en, cacheDir, args...)
		if r.code != exitUsage || r.stderr != c.want {
			t.Errorf("%v: exit %d, stderr %q; want exit 2, %q", c.args, r.code, r.stderr, c.want)
		}
	}
	if entries, _ := os.ReadDir(cacheDir); len(entries) != 0 {
		t.Errorf("the cache holds %d entries", len(entries))
	}
	// In an existing cache (a Slurm job's), the stage's failure says why,
	// for spn status and spn run --wait.
	c, err := cache.Open(cacheDir)
	if err != nil {
		t.Fatal(err)
	}
	spnOn(gpu, en, cacheDir, "stage", "run", train, "--plan", pf, "--device", "cuda:1")
	if f, ok := c.LastFailure(train); !ok || !strings.Contains(f.Error, "no device cuda:1") {
		t.Errorf("the failure recorded for the stage: %+v, %v; want the missing device", f, ok)
	}
	if ok, _ := c.Has(stages.KindTrain, train); ok {
		t.Error("the stage is in the cache")
	}
}

// TestDeviceOverrideFollowUp: a spec for a GPU run with --device cpu has
// its tables, status and plan under the same --device, and spn cache gc
// keeps its stages (any spec may have run on either device).
func TestDeviceOverrideFollowUp(t *testing.T) {
	dir := t.TempDir()
	cacheDir := filepath.Join(dir, "cache")
	spec := specWithDevice(t, "cuda")
	out := filepath.Join(dir, "out")
	if r := spn(testEngine(), cacheDir, "run", spec, "--device", "cpu", "--out", out, "--log-level", "error"); r.code != exitOK {
		t.Fatalf("run --device cpu: exit %d: %s", r.code, r.stderr)
	}
	if r := spn(testEngine(), cacheDir, "table", spec, "--device", "cpu", "--out", out, "--log-level", "error"); r.code != exitOK {
		t.Errorf("table --device cpu: exit %d: %s", r.code, r.stderr)
	}
	r := spn(testEngine(), cacheDir, "plan", spec, "--device", "cpu", "--log-level", "error")
	if r.code != exitOK || !strings.Contains(r.stdout, "0 to run") || strings.Contains(r.stdout, "GPU") {
		t.Errorf("plan --device cpu: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	var stdout, stderr syncBuffer
	a := &app{stdout: &stdout, stderr: &stderr, getenv: func(string) string { return "" }}
	if err := a.cache(testEngine(), []string{"gc", "--cache", cacheDir, spec}); err != nil {
		t.Fatalf("cache gc: %v\n%s", err, stderr.String())
	}
	if r := spn(testEngine(), cacheDir, "plan", spec, "--device", "cpu", "--log-level", "error"); !strings.Contains(r.stdout, "0 to run") {
		t.Errorf("after cache gc, plan --device cpu: %s%s\ngc: %s%s", r.stdout, r.stderr, stdout.String(), stderr.String())
	}
}

// TestSlurmDryRunGPU: spn run --executor slurm with a CUDA device submits
// from a machine without a GPU (the jobs train on their nodes' GPUs): the
// train stages' jobs ask for one GPU and run their stages on cuda:0, the
// other jobs ask for none.
func TestSlurmDryRunGPU(t *testing.T) {
	dir := t.TempDir()
	r := spnOn(cudatest.FakeOpener{}, testEngine(), filepath.Join(dir, "cache"),
		"run", "testdata/small.cue", "--device", "cuda", "--executor", "slurm", "--dry-run", "--spn-binary", "/shared/spn")
	if r.code != exitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	trains := 0
	for _, l := range lines {
		train := strings.Contains(l, "--job-name=spn-train ")
		if train {
			trains++
		}
		if strings.Contains(l, " --gres=gpu:1 ") != train {
			t.Errorf("sbatch line %q: asks for a GPU %v, want %v", l, !train, train)
		}
	}
	if trains == 0 || len(lines) == trains {
		t.Errorf("%d train jobs among %d:\n%s", trains, len(lines), r.stdout)
	}
}
