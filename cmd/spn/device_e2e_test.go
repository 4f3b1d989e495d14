package main

import (
	"encoding/json"
	"fmt"
	"github.com/spn-project/spn/stages/report"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/spn-project/spn/internal/testkit/cudatest"
	"github.com/spn-project/spn/internal/testkit/golden"
	"github.com/spn-project/spn/models/cuda"
	"github.com/spn-project/spn/stages"
	"github.com/spn-project/spn/stages/cache"
	"github.com/spn-project/spn/stages/device"
	"github.com/spn-project/spn/stages/exec"
	"github.com/spn-project/spn/stages/train"
)

// emulatedOpener returns the opener of the emulated device (built for
// the test; it skips without a C compiler or off Linux).
func emulatedOpener(t *testing.T) cudatest.LibOpener { return cudatest.Emulator(t) }

// readTables returns the files of a run's --out directory by name.
func readTables(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() == report.FileName {
			return err // the report shows timings, which differ between runs (sameFiles)
		}
		b, err := os.ReadFile(p)
		out[strings.TrimPrefix(p, dir)] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestRunOnEmulatedDevice runs a tiny spec (48 3-Prox graphs, GIN and
// SPN k = 2, three epochs) with spn run --device cuda --jobs 2 on the
// emulated device (the scheduler starts the train stages on the GPU one
// at a time): it completes, every train result
// records cuda:0 and the GPU, a second run in a fresh cache writes the
// same table bytes, and (the run being that small) the tables are those
// of the CPU run.
func TestRunOnEmulatedDevice(t *testing.T) {
	o := emulatedOpener(t)
	run := func(device string) (map[string]string, string) {
		dir := t.TempDir()
		cacheDir, out := filepath.Join(dir, "cache"), filepath.Join(dir, "out")
		r := spnOn(o, realEngine(), cacheDir, "run", "testdata/device_e2e.cue", "--device", device, "--out", out, "--log-level", "error", "--jobs", "2", "--threads", "1")
		if r.code != exitOK {
			t.Fatalf("run --device %s: exit %d: %s", device, r.code, r.stderr)
		}
		return readTables(t, out), cacheDir
	}
	dev, cacheDir := run("cuda")
	again, _ := run("cuda")
	cpu, _ := run("cpu")
	if len(dev) == 0 || dev["/main.csv"] == "" {
		t.Fatalf("the device run wrote %d files, no main.csv", len(dev))
	}
	if !reflect.DeepEqual(dev, again) {
		t.Errorf("two device runs write different tables:\n%v\n%v", dev, again)
	}
	if !reflect.DeepEqual(dev, cpu) {
		t.Errorf("the device run's tables differ from the CPU run's:\n%s\n%s", dev["/main.csv"], cpu["/main.csv"])
	}
	files, computes := trainComputes(t, cacheDir, 2)
	for i, c := range computes {
		f := files[i]
		if c == nil || c.Device != "cuda:0" || c.GPU == "" || c.Capability == "" || c.Driver == "" {
			t.Errorf("%s: compute %+v, want cuda:0 and the GPU", f, c)
		}
	}
	if ptx, _ := filepath.Glob(filepath.Join(cacheDir, "ptx", "*.ptx")); len(ptx) != 1 {
		t.Errorf("the cache's ptx folder holds %v, want the compiled kernels", ptx)
	}
}

// TestRunOutOfDeviceMemory runs the tiny spec on an emulated device of
// 2 MiB, too small for its first model: the train stage fails, exit 1,
// with the error of the allocation (what was asked for, what is free,
// what spn holds) and what to change, without the tape machine's
// framing (testdata/device_oom.golden); the cache holds no train result
// and the device no allocation. On a device with room the same cache
// then runs what is missing and reuses the rest.
func TestRunOutOfDeviceMemory(t *testing.T) {
	o := emulatedOpener(t)
	o.SetMemory(t, 2<<20)
	t.Cleanup(func() { o.SetMemory(t, 0) })
	dir := t.TempDir()
	r := runE2E(o, dir)
	if r.code != exitFail || r.stdout != "" {
		t.Fatalf("run on a device of 2 MiB: exit %d, stdout %q; want exit 1 and no table\n%s", r.code, r.stdout, r.stderr)
	}
	golden.Check(t, "testdata/device_oom.golden", []byte(r.stderr))
	if results := trainResults(dir); len(results) != 0 {
		t.Errorf("the failed run left train results %v", results)
	}
	if live := o.Live(t, 0); live != 0 {
		t.Errorf("the failed run left %d allocations on the device", live)
	}
	o.SetMemory(t, 0)
	r = runE2E(o, dir)
	if r.code != exitOK {
		t.Fatalf("the run again with room: exit %d: %s", r.code, r.stderr)
	}
	if first, _, _ := strings.Cut(r.stderr, "\n"); !strings.Contains(first, "7 stages, 2 cached, 5 to run") {
		t.Errorf("the run again with room: %q, want the generate and precompute stages cached", first)
	}
}

// runE2E runs testdata/device_e2e.cue on the emulated device of o, one
// stage at a time, with dir's cache and out folders and the flags extra.
func runE2E(o cudatest.LibOpener, dir string, extra ...string) result {
	return spnOn(o, realEngine(), filepath.Join(dir, "cache"), append([]string{"run", "testdata/device_e2e.cue", "--device", "cuda", "--out", filepath.Join(dir, "out"), "--log-level", "error", "--jobs", "1", "--threads", "1"}, extra...)...)
}

// trainResults returns the train results in the cache of runE2E's dir.
func trainResults(dir string) []string {
	results, _ := filepath.Glob(filepath.Join(dir, "cache", stages.KindTrain, "*", "*", stages.FileResult))
	return results
}

// TestRunDeviceUnavailable runs on an emulated GPU in exclusive-process
// compute mode that another process holds: the first train stage fails
// to open the GPU with CUDA_ERROR_DEVICE_UNAVAILABLE and the mode's
// meaning (testdata/device_unavailable.golden), exit 1, no train result
// written and no context left retained.
func TestRunDeviceUnavailable(t *testing.T) {
	o := emulatedOpener(t)
	o.SetComputeMode(t, 3)
	t.Cleanup(func() { o.SetComputeMode(t, 0) })
	dir := t.TempDir()
	r := runE2E(o, dir)
	if r.code != exitFail || r.stdout != "" {
		t.Fatalf("exit %d, stdout %q; want exit 1 and no table\n%s", r.code, r.stdout, r.stderr)
	}
	golden.Check(t, "testdata/device_unavailable.golden", []byte(r.stderr))
	if results := trainResults(dir); len(results) != 0 {
		t.Errorf("the failed run left train results %v", results)
	}
	if n := o.Live(t, 3); n != 0 {
		t.Errorf("%d primary context references left", n)
	}
}

// TestRunKernelFault makes the first kernel launch on the emulated GPU
// fault (a sticky error, as an illegal address is on a GPU) in a run
// with --keep-going: the first train stage fails with the driver's
// error and what it means (testdata/device_fault.golden), nothing of it
// is written, and the next train stage gets a fresh context and trains,
// as does its evaluation (the table shows SPN alone); no allocation or
// context reference is left.
func TestRunKernelFault(t *testing.T) {
	o := emulatedOpener(t)
	o.SetFault(t, 1)
	t.Cleanup(func() { o.SetFault(t, 0) })
	dir := t.TempDir()
	r := runE2E(o, dir, "--keep-going")
	if r.code != exitFail || !strings.Contains(r.stdout, "Incomplete: cells shown as -- are experiments that did not finish (gin)") {
		t.Fatalf("exit %d, stdout %q; want exit 1 and the table without GIN\n%s", r.code, r.stdout, r.stderr)
	}
	golden.Check(t, "testdata/device_fault.golden", []byte(strings.ReplaceAll(r.stderr, dir, "DIR")))
	if results := trainResults(dir); len(results) != 1 {
		t.Errorf("train results %v, want the second train stage's alone", results)
	}
	if n, refs := o.Live(t, 0), o.Live(t, 3); n != 0 || refs != 0 {
		t.Errorf("%d allocations and %d primary context references left", n, refs)
	}
}

// TestRunOnTwoGPUs runs a spec of four train stages (GIN once, SPN three
// runs) on two emulated GPUs with --gpus all: the stages train on both
// (each result records its GPU), never two on one GPU (the executor's
// tests check that), and the tables are the bytes of the same spec run
// on GPU 0 alone, in a fresh cache.
func TestRunOnTwoGPUs(t *testing.T) {
	o := emulatedOpener(t)
	o.SetDevices(t, 2)
	t.Cleanup(func() { o.SetDevices(t, 1) })
	two, one := runGPUs(t, o, "--jobs", "2", "--gpus", "all"), runGPUs(t, o, "--jobs", "2")
	if !reflect.DeepEqual(two.tables, one.tables) {
		t.Errorf("the tables on two GPUs differ from those on one:\n%s\n%s", two.tables["/main.csv"], one.tables["/main.csv"])
	}
	_, computes := trainComputes(t, two.cache, 4)
	used := map[string]int{}
	for _, c := range computes {
		used[c.Device]++
	}
	if len(used) != 2 || used["cuda:0"] == 0 || used["cuda:1"] == 0 {
		t.Errorf("the train stages ran on %v, want both cuda:0 and cuda:1", used)
	}
}

// gpuRun is what runGPUs returns: the run's tables, its cache dir and
// its log (warnings and errors).
type gpuRun struct {
	tables        map[string]string
	cache, stderr string
}

// runGPUs runs testdata/device_gpus.cue on the emulated device of o
// with the flags extra, in a fresh cache, and fails t unless it
// succeeds.
func runGPUs(t *testing.T, o cudatest.LibOpener, extra ...string) gpuRun {
	t.Helper()
	dir := t.TempDir()
	cacheDir, out := filepath.Join(dir, "cache"), filepath.Join(dir, "out")
	r := spnOn(o, realEngine(), cacheDir, append([]string{"run", "testdata/device_gpus.cue", "--device", "cuda", "--out", out, "--log-level", "warn", "--threads", "1"}, extra...)...)
	if r.code != exitOK {
		t.Fatalf("run %v: exit %d: %s", extra, r.code, r.stderr)
	}
	return gpuRun{readTables(t, out), cacheDir, r.stderr}
}

// TestRunStagesPerGPU runs the four train stages of testdata/device_gpus.cue
// two at a time on one emulated GPU (--stages-per-gpu 2): the tables are
// the bytes of the run one stage at a time, every result records cuda:0,
// and the device holds no allocation after.
func TestRunStagesPerGPU(t *testing.T) {
	o := emulatedOpener(t)
	shared, alone := runGPUs(t, o, "--jobs", "3", "--stages-per-gpu", "2"), runGPUs(t, o, "--jobs", "3")
	if !reflect.DeepEqual(shared.tables, alone.tables) {
		t.Errorf("the tables of two stages per GPU differ from one's:\n%s\n%s", shared.tables["/main.csv"], alone.tables["/main.csv"])
	}
	_, computes := trainComputes(t, shared.cache, 4)
	for _, c := range computes {
		if c.Device != "cuda:0" {
			t.Errorf("a train stage ran on %s, want cuda:0", c.Device)
		}
	}
	if live := o.Live(t, 0); live != 0 {
		t.Errorf("%d allocations left on the device", live)
	}
}

// TestRunStagesPerGPUOutOfMemory runs the four train stages of
// testdata/device_gpus.cue two at a time on an emulated GPU of 7 MiB,
// where one fits and two do not: the run succeeds, its tables are the
// bytes of the run one stage at a time, and nothing is left on the
// device. How many stages ran out of memory beside another and ran again
// alone depends on how the stages happen to overlap, so it is logged,
// not asserted (exec.TestOutOfGPUMemoryRunsAlone checks the rule without
// timing).
func TestRunStagesPerGPUOutOfMemory(t *testing.T) {
	o := emulatedOpener(t)
	o.SetMemory(t, 7<<20)
	t.Cleanup(func() { o.SetMemory(t, 0) })
	shared, alone := runGPUs(t, o, "--jobs", "3", "--stages-per-gpu", "2"), runGPUs(t, o, "--jobs", "3")
	t.Logf("%d stages ran again alone", strings.Count(shared.stderr, "stage ran out of GPU memory beside other stages; running it again alone on a GPU"))
	if !reflect.DeepEqual(shared.tables, alone.tables) {
		t.Errorf("the tables differ from one stage at a time:\n%s\n%s", shared.tables["/main.csv"], alone.tables["/main.csv"])
	}
	if live := o.Live(t, 0); live != 0 {
		t.Errorf("%d allocations left on the device", live)
	}
}

// TestGPUsErrors: --gpus names GPUs of this machine, distinct, and
// --stages-per-gpu a positive count, for a local run on a GPU device;
// anything else is exit 2 before any stage runs, with the message of
// testdata/device_gpus_errors.golden.
func TestGPUsErrors(t *testing.T) {
	o := emulatedOpener(t)
	o.SetDevices(t, 2)
	t.Cleanup(func() { o.SetDevices(t, 1) })
	var all strings.Builder
	for _, args := range [][]string{
		{"--device", "cpu", "--gpus", "0"},
		{"--device", "cuda", "--gpus", "0,0"},
		{"--device", "cuda", "--gpus", "0,x"},
		{"--device", "cuda", "--gpus", "-1"},
		{"--device", "cuda", "--gpus", "2"},
		{"--device", "cuda", "--gpus", "0,1", "--executor", "slurm", "--dry-run"},
		{"--device", "cpu", "--stages-per-gpu", "2"},
		{"--device", "cuda", "--stages-per-gpu", "0"},
		{"--device", "cuda", "--stages-per-gpu", "2", "--executor", "slurm", "--dry-run"},
	} {
		cacheDir := filepath.Join(t.TempDir(), "cache")
		r := spnOn(o, realEngine(), cacheDir, append([]string{"run", "testdata/device_gpus.cue", "--out", filepath.Join(t.TempDir(), "out")}, args...)...)
		if r.code != exitUsage || r.stdout != "" {
			t.Errorf("%v: exit %d, stdout %q; want exit 2 and nothing", args, r.code, r.stdout)
		}
		if _, err := os.Stat(cacheDir); err == nil {
			t.Errorf("%v: the cache was created", args)
		}
		fmt.Fprintf(&all, "$ spn run %s\n%s", strings.Join(args, " "), r.stderr)
	}
	golden.Check(t, "testdata/device_gpus_errors.golden", []byte(all.String()))
}

// TestRunOnDeviceRefusesKind: a spec with a kind without device math
// (graphormer) fails with exit 2 before any stage runs, naming the kind and the
// device, and creates no cache; on Slurm too, before submitting.
func TestRunOnDeviceRefusesKind(t *testing.T) {
	o := emulatedOpener(t)
	src, err := os.ReadFile("testdata/device_e2e.cue")
	if err != nil {
		t.Fatal(err)
	}
	spec := filepath.Join(t.TempDir(), "graphormer.cue")
	s := strings.Replace(string(src), `kind: "gin"`, `kind: "graphormer", max_dist: 2`, 1)
	if err := os.WriteFile(spec, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	want := `spn run: model kind "graphormer" cannot train on device cuda:0: it has no device math (kinds that have: [baseline drew espn gat gcn gin rspn spn])` + "\n"
	for _, slurm := range [][]string{nil, {"--executor", "slurm", "--dry-run"}} {
		cacheDir := filepath.Join(t.TempDir(), "cache")
		r := spnOn(o, realEngine(), cacheDir, append([]string{"run", spec, "--device", "cuda", "--out", filepath.Join(t.TempDir(), "out")}, slurm...)...)
		if r.code != exitUsage || r.stderr != want || r.stdout != "" {
			t.Errorf("%v: exit %d, stderr %q, stdout %q; want exit 2, %q", slurm, r.code, r.stderr, r.stdout, want)
		}
		if _, err := os.Stat(cacheDir); err == nil {
			t.Errorf("%v: the cache was created", slurm)
		}
	}
}

// TestCalibrateOnEmulatedDevice: spn calibrate --device cuda measures the
// tiny spec's train stages on the emulated device and records cuda:0.
func TestCalibrateOnEmulatedDevice(t *testing.T) {
	o := emulatedOpener(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "cal.json")
	r := spnOn(o, realEngine(), filepath.Join(dir, "cache"), "calibrate", "--device", "cuda", "--epochs", "2", "--out", out, "--log-level", "error", "testdata/device_e2e.cue")
	if r.code != exitOK {
		t.Fatalf("calibrate --device cuda: exit %d: %s", r.code, r.stderr)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"cuda:0"`) {
		t.Errorf("the calibration does not name cuda:0:\n%s", b)
	}
	// spn plan --cost prices the spec's GPU stages from it, and refuses it
	// for the CPU's.
	plan := func(device string) result {
		return spnOn(o, realEngine(), filepath.Join(dir, "cache"), "plan", "--cost", "--device", device, "--calibration", out, "testdata/device_e2e.cue")
	}
	if r := plan("cuda"); r.code != exitOK || !strings.Contains(r.stdout, "train") || !strings.Contains(r.stdout, "train stages count GPU-hours") {
		t.Errorf("plan --cost --device cuda: exit %d, stdout %q, stderr %q; want the train stages' cost", r.code, r.stdout, r.stderr)
	}
	if r := plan("cpu"); r.code == exitOK || !strings.Contains(r.stderr, "calibration measured on cuda:0, but the stages run on cpu") {
		t.Errorf("plan --cost --device cpu with a GPU calibration: exit %d, stderr %q; want a refusal naming both devices", r.code, r.stderr)
	}
}

// TestStageRunOnEmulatedDevice: spn stage run of a train stage planned for
// a GPU trains it on the emulated device (its inputs computed by a CPU
// run, whose generate and precompute stages are the same) and records
// cuda:0; each stage's seed is that of the same stage on the CPU.
func TestStageRunOnEmulatedDevice(t *testing.T) {
	o := emulatedOpener(t)
	dir := t.TempDir()
	cacheDir := filepath.Join(dir, "cache")
	if r := spnOn(o, realEngine(), cacheDir, "run", "testdata/device_e2e.cue", "--device", "cpu", "--out", filepath.Join(dir, "out"), "--log-level", "error"); r.code != exitOK {
		t.Fatalf("run --device cpu: exit %d: %s", r.code, r.stderr)
	}
	en := realEngine()
	keys, pf := gpuPlanFile(t, en, "testdata/device_e2e.cue", dir)
	r := spnOn(o, en, cacheDir, append([]string{"stage", "run", "--plan", pf, "--log-level", "error"}, keys...)...)
	if r.code != exitOK {
		t.Fatalf("stage run: exit %d: %s", r.code, r.stderr)
	}
	for _, key := range keys {
		b, err := os.ReadFile(filepath.Join((&cache.Cache{Root: cacheDir}).StageDir(stages.KindTrain, key), stages.FileResult))
		if err != nil {
			t.Fatal(err)
		}
		var res stages.TrainResult
		if err := json.Unmarshal(b, &res); err != nil {
			t.Fatal(err)
		}
		if res.Compute == nil || res.Compute.Device != "cuda:0" {
			t.Errorf("train %s: compute %+v, want cuda:0", key, res.Compute)
		}
		pfile, err := exec.ReadPlanFile(pf)
		if err != nil {
			t.Fatal(err)
		}
		n, err := pfile.Node(key)
		if err != nil {
			t.Fatal(err)
		}
		seed := func(key string) uint64 {
			t.Helper()
			b, err := os.ReadFile(filepath.Join((&cache.Cache{Root: cacheDir}).StageDir(stages.KindTrain, key), stages.FileRecord))
			if err != nil {
				t.Fatal(err)
			}
			var rec struct{ Seed uint64 }
			if err := json.Unmarshal(b, &rec); err != nil {
				t.Fatal(err)
			}
			return rec.Seed
		}
		if n.SeedKey == key {
			t.Errorf("train %s: the plan file gives no CPU seed key", key)
		} else if gs, cs := seed(key), seed(n.SeedKey); gs != cs {
			t.Errorf("train %s: seed %d on the GPU, %d on the CPU", key, gs, cs)
		}
	}
}

// benchOn runs spn bench ARGS on the machine whose CUDA libraries o
// serves, with the stage cache (for the compiled kernels) and the data
// dir in temporary folders; it returns the result and the cache folder.
func benchOn(t *testing.T, o cuda.Opener, args ...string) (result, string) {
	return benchEnv(t, o, nil, args...)
}

// benchEnv is benchOn with the environment variables env besides.
func benchEnv(t *testing.T, o cuda.Opener, extra map[string]string, args ...string) (result, string) {
	t.Helper()
	dir := t.TempDir()
	env := map[string]string{cache.EnvVar: filepath.Join(dir, "cache"), envDataDir: filepath.Join(dir, "data")}
	for k, v := range extra {
		env[k] = v
	}
	var out, errb syncBuffer
	a := &app{stdout: &out, stderr: &errb, cuda: o, getenv: func(k string) string { return env[k] }}
	return result{a.exit(cmdBench(a, args)), out.String(), errb.String()}, env[cache.EnvVar]
}

// TestBenchOnEmulatedDevice: spn bench --device cuda trains spn and gin on
// the emulated device and prints the CPU bench's columns under a header
// naming the device, its compute capability and driver, and the peak
// device memory beside them; the JSON report
// carries the device as a train result does, and the kernels are cached
// under the cache's ptx folder. No figure is asserted (the emulator's
// timings and memory say nothing of a GPU's) beyond a rate and some device
// memory.
func TestBenchOnEmulatedDevice(t *testing.T) {
	o := emulatedOpener(t)
	small := []string{"prox", "--graphs", "40", "--layers", "2", "--hidden", "8", "--k", "2", "--device", "cuda"}
	for kind, k := range map[string]string{"spn": "2", "gin": "1"} {
		t.Run(kind, func(t *testing.T) {
			r, cacheDir := benchOn(t, o, append(small, "--kind", kind, "--k", k, "--epochs", "2")...)
			if r.code != exitOK {
				t.Fatalf("bench --device cuda: exit %d: %s", r.code, r.stderr)
			}
			lines := strings.Split(r.stdout, "\n")
			head := regexp.MustCompile(`^` + kind + ` k=\d+ L=2 hidden=8 pool=sum dropout=0.5, batch 32, 2 epoch\(s\), device cuda:0, .+ \(compute capability \d+\.\d+, driver CUDA \d+\.\d+\), host 2 threads, go`)
			if !head.MatchString(lines[0]) {
				t.Errorf("header %q does not name the device as %s", lines[0], head)
			}
			cols := regexp.MustCompile(`workload\s*│\s*graphs\s*│\s*mean nodes\s*│\s*train s\s*│\s*graphs/s\s*│\s*graphs/CPU-s\s*│\s*peak RSS MB\s*│\s*peak GPU MB\s*│\s*launches/step\s*│\s*allocs/step`)
			if !cols.MatchString(r.stdout) || !strings.Contains(r.stdout, "3-Prox (40 graphs)") {
				t.Errorf("the table lacks the CPU bench's columns or the workload:\n%s", r.stdout)
			}
			if ptx, _ := filepath.Glob(filepath.Join(cacheDir, "ptx", "*.ptx")); len(ptx) != 1 {
				t.Errorf("the cache's ptx folder holds %v, want the compiled kernels", ptx)
			}
		})
	}
	r, _ := benchOn(t, o, append(small, "--json")...)
	if r.code != exitOK {
		t.Fatalf("bench --device cuda --json: exit %d: %s", r.code, r.stderr)
	}
	var rep train.BenchReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("JSON: %v\n%s", err, r.stdout)
	}
	if c := rep.Compute; c == nil || c.Device != "cuda:0" || c.GPU == "" || c.Capability == "" || c.Driver == "" {
		t.Errorf("compute %+v, want cuda:0 and the GPU", rep.Compute)
	}
	if len(rep.Workloads) != 1 || rep.Workloads[0].Graphs != 40 || rep.Workloads[0].Epochs != 1 || !(rep.Workloads[0].GraphsPerSec > 0) {
		t.Errorf("workloads %+v, want one of 40 graphs, 1 epoch, a rate", rep.Workloads)
	}
	if len(rep.Workloads) == 1 && !(rep.Workloads[0].PeakDeviceMB > 0) {
		t.Errorf("peak device memory %v MB, want the model's and the batches' allocations", rep.Workloads[0].PeakDeviceMB)
	}
	// 40 graphs in batches of 32 of different sizes: the pool makes
	// each shape's scratch once, a step of this 2-layer SPN launches
	// some 100 kernels (97.5 per step with the validation's, counted).
	if w := rep.Workloads; len(w) == 1 && (!(w[0].LaunchesPerStep > 50) || w[0].AllocsPerStep > w[0].LaunchesPerStep) {
		t.Errorf("%v launches and %v allocations per step, want over 50 and fewer allocations than launches", w[0].LaunchesPerStep, w[0].AllocsPerStep)
	}
	// After a warm-up epoch the pool and the zeroing chunk have seen the
	// shapes: the timed epoch's steps launch and allocate no more than a
	// cold epoch's.
	r, _ = benchOn(t, o, append(small, "--json", "--warmup", "1")...)
	var warm train.BenchReport
	if r.code != exitOK {
		t.Fatalf("bench --device cuda --warmup 1: exit %d: %s", r.code, r.stderr)
	}
	if err := json.Unmarshal([]byte(r.stdout), &warm); err != nil {
		t.Fatalf("JSON: %v\n%s", err, r.stdout)
	}
	if len(warm.Workloads) != 1 || len(rep.Workloads) != 1 || warm.Warmup != 1 || warm.Workloads[0].Epochs != 1 {
		t.Fatalf("warm report %+v", warm)
	}
	if c, w := rep.Workloads[0], warm.Workloads[0]; w.LaunchesPerStep > c.LaunchesPerStep || w.AllocsPerStep > c.AllocsPerStep {
		t.Errorf("after a warm-up epoch: %v launches and %v allocations per step; cold: %v and %v", w.LaunchesPerStep, w.AllocsPerStep, c.LaunchesPerStep, c.AllocsPerStep)
	}
	// Two copies share the GPU, as two train stages of spn run
	// --stages-per-gpu 2 do: a copy's step launches what one copy's does,
	// and their peak memory is the sum of two such copies'.
	r, _ = benchOn(t, o, append(small, "--json", "--jobs", "2")...)
	var two train.BenchReport
	if r.code != exitOK {
		t.Fatalf("bench --device cuda --jobs 2: exit %d: %s", r.code, r.stderr)
	}
	if err := json.Unmarshal([]byte(r.stdout), &two); err != nil {
		t.Fatalf("JSON: %v\n%s", err, r.stdout)
	}
	if len(two.Workloads) != 1 || two.Jobs != 2 {
		t.Fatalf("--jobs 2 report %+v", two)
	}
	if c, w := rep.Workloads[0], two.Workloads[0]; w.LaunchesPerStep != c.LaunchesPerStep || math.Abs(w.PeakDeviceMB-2*c.PeakDeviceMB) > 0.01*c.PeakDeviceMB || !(w.GraphsPerSec > 0) {
		t.Errorf("--jobs 2: %v launches per step, %v MB peak; one copy: %v and %v MB", w.LaunchesPerStep, w.PeakDeviceMB, c.LaunchesPerStep, c.PeakDeviceMB)
	}
}

// TestBenchKernelTimes: spn bench --kernel-times lists the kernels by
// device time on the emulated device: every launch of the training is in
// the profile (the kernels' launches per step add up to the workload's),
// the shares add up to 1, the longest first, and the table follows the
// workloads'. Without --device cuda the flag is a usage error (exit 2).
func TestBenchKernelTimes(t *testing.T) {
	o := emulatedOpener(t)
	args := []string{"prox", "--graphs", "40", "--layers", "2", "--hidden", "8", "--k", "2", "--device", "cuda", "--kernel-times"}
	r, _ := benchOn(t, o, append(args, "--json")...)
	if r.code != exitOK {
		t.Fatalf("bench --kernel-times --json: exit %d: %s", r.code, r.stderr)
	}
	var rep train.BenchReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("JSON: %v\n%s", err, r.stdout)
	}
	if len(rep.Workloads) != 1 {
		t.Fatalf("%d workloads, want 1", len(rep.Workloads))
	}
	w := rep.Workloads[0]
	var launches, share float64
	names := map[string]bool{}
	for i, k := range w.Kernels {
		launches += k.LaunchesPerStep
		share += k.Share
		names[k.Name] = true
		if i > 0 && k.MicrosPerStep > w.Kernels[i-1].MicrosPerStep {
			t.Errorf("%s (%v µs) after %s (%v µs): want the longest first", k.Name, k.MicrosPerStep, w.Kernels[i-1].Name, w.Kernels[i-1].MicrosPerStep)
		}
	}
	if math.Abs(launches-w.LaunchesPerStep) > 1e-9*w.LaunchesPerStep {
		t.Errorf("the kernels' launches per step add up to %v, the workload's are %v", launches, w.LaunchesPerStep)
	}
	if math.Abs(share-1) > 1e-9 {
		t.Errorf("the shares add up to %v, want 1", share)
	}
	for _, name := range []string{"spn_hop_aggregate", "spn_bn_relu_train", cuda.GEMMName} {
		if !names[name] {
			t.Errorf("no %s in the profile %+v", name, w.Kernels)
		}
	}
	r, _ = benchOn(t, o, args...)
	if r.code != exitOK {
		t.Fatalf("bench --kernel-times: exit %d: %s", r.code, r.stderr)
	}
	table := regexp.MustCompile(`(?s)3-Prox \(40 graphs\): device time by kernel \(per training step, validation included\)\n.*?kernel\s*│\s*launches/step\s*│\s*device µs/step\s*│\s*share`)
	if !table.MatchString(r.stdout) {
		t.Errorf("no kernel table after the workloads':\n%s", r.stdout)
	}
	r, _ = benchOn(t, o, "prox", "--graphs", "40", "--kernel-times")
	if r.code != exitUsage || !strings.Contains(r.stderr, "--kernel-times times kernels on a GPU: give --device cuda") {
		t.Errorf("--kernel-times on the CPU: exit %d, stderr %q; want %d and a message", r.code, r.stderr, exitUsage)
	}
}

// TestBenchSyncSteps: spn bench --device cuda --sync-steps trains with
// the host waiting for every step on the emulated device: the JSON
// report says so (sync_steps), the header names it, and the steps launch
// the same kernels as the pipelined ones. Without --device cuda the flag
// is a usage error (exit 2).
func TestBenchSyncSteps(t *testing.T) {
	o := emulatedOpener(t)
	args := []string{"prox", "--graphs", "40", "--layers", "2", "--hidden", "8", "--k", "2", "--device", "cuda", "--json"}
	var reps [2]train.BenchReport
	for i, extra := range [][]string{nil, {"--sync-steps"}} {
		r, _ := benchOn(t, o, append(args, extra...)...)
		if r.code != exitOK {
			t.Fatalf("bench %v: exit %d: %s", extra, r.code, r.stderr)
		}
		if err := json.Unmarshal([]byte(r.stdout), &reps[i]); err != nil {
			t.Fatalf("JSON: %v\n%s", err, r.stdout)
		}
	}
	pipe, sync := reps[0], reps[1]
	if pipe.SyncSteps || !sync.SyncSteps || len(pipe.Workloads) != 1 || len(sync.Workloads) != 1 {
		t.Fatalf("sync_steps %v without the flag and %v with it; workloads %d and %d", pipe.SyncSteps, sync.SyncSteps, len(pipe.Workloads), len(sync.Workloads))
	}
	if p, s := pipe.Workloads[0], sync.Workloads[0]; p.LaunchesPerStep != s.LaunchesPerStep || !(s.GraphsPerSec > 0) {
		t.Errorf("%v launches per step pipelined, %v with --sync-steps (rate %v)", p.LaunchesPerStep, s.LaunchesPerStep, s.GraphsPerSec)
	}
	r, _ := benchOn(t, o, append(args[:len(args)-1], "--sync-steps")...)
	if head, _, _ := strings.Cut(r.stdout, "\n"); r.code != exitOK || !strings.Contains(head, "host 2 threads, synchronous steps, go") {
		t.Errorf("bench --sync-steps: exit %d, header %q: want it to name the synchronous steps", r.code, head)
	}
	r, _ = benchOn(t, o, "prox", "--graphs", "40", "--sync-steps")
	if r.code != exitUsage || !strings.Contains(r.stderr, "--sync-steps makes the host wait for the steps on a GPU: give --device cuda") {
		t.Errorf("--sync-steps on the CPU: exit %d, stderr %q; want %d and a message", r.code, r.stderr, exitUsage)
	}
}

// emulatedLibDir returns a folder holding the emulated device under the
// CUDA libraries' file names (what SPN_CUDA_LIBS points at).
func emulatedLibDir(t *testing.T) string {
	t.Helper()
	lib := emulatedOpener(t).Lib
	dir := t.TempDir()
	for _, name := range []string{cuda.DriverLib, cuda.NVRTC13, cuda.CuBLAS13} {
		if err := os.Symlink(lib, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestCUDALibsFolder: SPN_CUDA_LIBS makes spn open the CUDA libraries from
// that folder only: the emulated device's there trains, and a folder
// without them fails with exit 2 naming the folder.
func TestCUDALibsFolder(t *testing.T) {
	libs := emulatedLibDir(t)
	small := []string{"prox", "--graphs", "40", "--layers", "2", "--hidden", "8", "--k", "2", "--device", "cuda", "--json"}
	r, _ := benchEnv(t, nil, map[string]string{device.EnvCUDALibs: libs}, small...)
	if r.code != exitOK || !strings.Contains(r.stdout, `"device": "cuda:0"`) {
		t.Fatalf("%s=%s: exit %d: %s%s", device.EnvCUDALibs, libs, r.code, r.stdout, r.stderr)
	}
	empty := t.TempDir()
	r, _ = benchEnv(t, nil, map[string]string{device.EnvCUDALibs: empty}, small...)
	want := "spn bench: device cuda:0: cuda: cannot load the NVIDIA driver API: tried libcuda.so.1 (searched " + device.EnvCUDALibs + "=" + empty + " only); libcuda.so.1: " +
		filepath.Join(empty, "libcuda.so.1") + ": cannot open shared object file: No such file or directory\n"
	if r.code != exitUsage || r.stderr != want {
		t.Errorf("%s=%s: exit %d, stderr %q; want exit 2, %q", device.EnvCUDALibs, empty, r.code, r.stderr, want)
	}
}

// trainComputes returns the train results' files in the cache at
// cacheDir and the compute record of each, and fails t unless there are
// want of them.
func trainComputes(t *testing.T, cacheDir string, want int) ([]string, []*stages.Compute) {
	t.Helper()
	results, err := filepath.Glob(filepath.Join(cacheDir, stages.KindTrain, "*", "*", stages.FileResult))
	if err != nil || len(results) != want {
		t.Fatalf("%d train results (%v), want %d", len(results), err, want)
	}
	out := make([]*stages.Compute, len(results))
	for i, f := range results {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var r stages.TrainResult
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatal(err)
		}
		out[i] = r.Compute
	}
	return results, out
}
