package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spn-project/spn/schema"
	"github.com/spn-project/spn/stages"
	"github.com/spn-project/spn/stages/device"
	"github.com/spn-project/spn/stages/exec"
	"github.com/spn-project/spn/stages/plan"
)

// The tests in this file run the real spn binary against a real Slurm
// cluster: the one SLURM_CONF points at (scripts/slurm-test-cluster.sh
// starts a one-node cluster on loopback). Without sbatch or a responding
// cluster they skip, except under CI=true, where they fail: CI always runs
// them.

func needSlurm(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("Slurm test (-short)")
	}
	why := ""
	if _, err := osexec.LookPath("sbatch"); err != nil {
		why = "sbatch not found (apt-get install slurm-wlm)"
	} else if out, err := osexec.Command("sinfo", "-h", "-o", "%t").CombinedOutput(); err != nil {
		why = "no Slurm cluster answers (sinfo: " + strings.TrimSpace(string(out)) + ")"
	}
	if why == "" {
		return
	}
	msg := why + "; start a test cluster with scripts/slurm-test-cluster.sh start DIR and export SLURM_CONF=DIR/slurm.conf"
	if os.Getenv("CI") == "true" {
		t.Fatal("CI must run the Slurm tests: " + msg)
	}
	t.Skip(msg)
}

var (
	spnBinOnce sync.Once
	spnBin     string
	spnBinErr  error
)

// buildSpn builds the spn binary once per test process, into a directory
// of the OS temp dir that outlives the single tests; TestMain removes it.
func buildSpn(t *testing.T) string {
	t.Helper()
	spnBinOnce.Do(func() {
		dir, err := os.MkdirTemp("", "spn-slurm-test-")
		if err != nil {
			spnBinErr = err
			return
		}
		spnBin = filepath.Join(dir, "spn")
		out, err := osexec.Command("go", "build", "-o", spnBin, ".").CombinedOutput()
		if err != nil {
			spnBinErr = err
			t.Logf("go build: %s", out)
		}
	})
	if spnBinErr != nil {
		t.Fatalf("building spn: %v", spnBinErr)
	}
	return spnBin
}

// TestMain removes the binary buildSpn built, if any, when the tests end.
func TestMain(m *testing.M) {
	code := m.Run()
	if spnBin != "" {
		os.RemoveAll(filepath.Dir(spnBin))
	}
	if smokeQuickstart.dir != "" {
		os.RemoveAll(smokeQuickstart.dir)
	}
	os.Exit(code)
}

// testdataPath is the absolute path of testdata/name, for commands run in
// another directory.
func testdataPath(t *testing.T, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// spnCmd runs the spn binary in dir and returns stdout, stderr and the
// exit code.
func spnCmd(t *testing.T, bin, dir string, args ...string) (string, string, int) {
	t.Helper()
	return spnCmdEnv(t, bin, dir, nil, args...)
}

// spnCmdEnv is spnCmd with the environment variables env ("K=V") besides.
func spnCmdEnv(t *testing.T, bin, dir string, env []string, args ...string) (string, string, int) {
	t.Helper()
	cmd := osexec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "SPN_EXECUTOR="), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*osexec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("running spn %v: %v", args, err)
	}
	return stdout.String(), stderr.String(), code
}

// readFiles returns the files of dir by name.
func readFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = string(b)
	}
	return out
}

// allCached checks with `spn plan --json` that no stage is left to run.
func allCached(t *testing.T, bin, dir, spec, cacheDir string) {
	t.Helper()
	out, stderr, code := spnCmd(t, bin, dir, "plan", spec, "--json", "--cache", cacheDir)
	if code != 0 {
		t.Fatalf("spn plan: exit %d: %s", code, stderr)
	}
	var nodes []struct {
		Name, Status string
	}
	if err := json.Unmarshal([]byte(out), &nodes); err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		if n.Status != "cached" {
			t.Errorf("after the Slurm run, %s is %q", n.Name, n.Status)
		}
	}
	if len(nodes) == 0 {
		t.Error("empty plan")
	}
}

// localTables runs spec with the local executor and returns its tables.
func localTables(t *testing.T, bin, dir, spec string) map[string]string {
	t.Helper()
	out := filepath.Join(dir, "out-local")
	if _, stderr, code := spnCmd(t, bin, dir, "run", spec, "--cache", filepath.Join(dir, "cache-local"), "--out", out); code != 0 {
		t.Fatalf("local run: exit %d: %s", code, stderr)
	}
	return readFiles(t, out)
}

func sameTables(t *testing.T, got, want map[string]string) {
	t.Helper()
	// report.html shows each stage's measured seconds: runs differ there.
	delete(got, "report.html")
	delete(want, "report.html")
	if len(got) == 0 || len(got) != len(want) {
		t.Fatalf("tables: got files %d, want %d", len(got), len(want))
	}
	for name, w := range want {
		if got[name] != w {
			t.Errorf("table file %s differs from the local run:\n%s\nwant:\n%s", name, got[name], w)
		}
	}
}

// A small spec (two experiments, two folds each) run on Slurm with --wait
// writes tables byte-identical to the local executor's, and spn plan then
// shows every stage cached.
func TestSlurmRunMatchesLocal(t *testing.T) {
	needSlurm(t)
	bin := buildSpn(t)
	dir := t.TempDir()
	spec := testdataPath(t, "slurm_tiny.cue")
	want := localTables(t, bin, dir, spec)
	cacheDir := filepath.Join(dir, "cache-slurm")
	out := filepath.Join(dir, "out-slurm")
	_, stderr, code := spnCmd(t, bin, dir, "run", spec, "--executor", "slurm", "--wait", "--poll", "500ms",
		"--cache", cacheDir, "--out", out)
	if code != 0 {
		t.Fatalf("slurm run: exit %d:\n%s", code, stderr)
	}
	if !strings.Contains(stderr, "15 stages, 0 cached, 0 queued or running, 15 submitted as 8 jobs") {
		t.Errorf("unexpected submission summary:\n%s", stderr)
	}
	sameTables(t, readFiles(t, out), want)
	allCached(t, bin, dir, spec, cacheDir)
	// Nothing left to submit: a second run submits nothing and writes the
	// same tables.
	_, stderr, code = spnCmd(t, bin, dir, "run", spec, "--executor", "slurm", "--wait", "--poll", "500ms",
		"--cache", cacheDir, "--out", out)
	if code != 0 || !strings.Contains(stderr, "15 cached, 0 queued or running, 0 submitted as 0 jobs") {
		t.Errorf("second slurm run: exit %d:\n%s", code, stderr)
	}
	sameTables(t, readFiles(t, out), want)
	if ents, _ := os.ReadDir(filepath.Join(cacheDir, "tmp")); len(ents) != 0 {
		t.Errorf("temp dirs left in the cache: %d", len(ents))
	}
}

// A stage that fails in a Slurm job stops only the stages that depend on
// it, although job arrays hold unrelated stages too: the select, final
// train, evaluate and tabulate arrays hold the stages of the experiment
// whose selects fail for real (every grid point diverges) and of one that
// does not. --wait reports the failures and their dependents, exits
// non-zero, and writes the tables as a local run with --keep-going does,
// byte for byte.
func TestSlurmFailureStaysLocal(t *testing.T) {
	needSlurm(t)
	bin := buildSpn(t)
	dir := t.TempDir()
	spec := testdataPath(t, "slurm_fail.cue")
	run := func(name string, args ...string) (string, int) {
		out := filepath.Join(dir, "out-"+name)
		args = append([]string{"run", spec, "--cache", filepath.Join(dir, "cache-"+name), "--out", out}, args...)
		_, stderr, code := spnCmd(t, bin, dir, args...)
		if code == 0 {
			t.Fatalf("%s run: exit 0, want a failure:\n%s", name, stderr)
		}
		return stderr, code
	}
	_, localCode := run("local", "--keep-going")
	want := readFiles(t, filepath.Join(dir, "out-local"))
	stderr, code := run("slurm", "--executor", "slurm", "--wait", "--poll", "500ms")
	if code != localCode {
		t.Errorf("exit %d, the local run's %d", code, localCode)
	}
	for _, w := range []string{
		"spn run: failed select diverges split=0: every grid point diverged, nothing to select",
		"spn run: failed select diverges split=1: every grid point diverged, nothing to select",
		"spn run: skipped train diverges final split=1 run=0: input select diverges split=1 failed",
		"spn run: skipped tabulate diverges: input evaluate diverges was skipped (select diverges split=0 failed)",
		"spn run: 6 of 20 stages did not complete",
		"spn run: table ok: wrote ",
		"spn run: table diverges: incomplete, 1 experiments missing (diverges)",
	} {
		if !strings.Contains(stderr, w) {
			t.Errorf("slurm run's stderr lacks %q:\n%s", w, stderr)
		}
	}
	if strings.Contains(stderr, "not run ") {
		t.Errorf("a stage independent of the failure did not run:\n%s", stderr)
	}
	sameTables(t, readFiles(t, filepath.Join(dir, "out-slurm")), want)
}

// tinySpec writes testdata/slurm_tiny.cue to dir/name with its first old
// replaced by new, and returns the path; old must occur.
func tinySpec(t *testing.T, dir, name, old, new string) string {
	t.Helper()
	src, err := os.ReadFile("testdata/slurm_tiny.cue")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(src, []byte(old)) {
		t.Fatalf("testdata/slurm_tiny.cue has no %q to replace", old)
	}
	spec := filepath.Join(dir, name)
	if err := os.WriteFile(spec, bytes.Replace(src, []byte(old), []byte(new), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	return spec
}

// squeueJobs lists spn's array tasks on cacheDir as "jobid_task state".
func squeueJobs(t *testing.T, cacheDir string) []string {
	t.Helper()
	out, err := osexec.Command("squeue", "-h", "-r", "-o", "%F_%K %T %k").Output()
	if err != nil {
		t.Fatalf("squeue: %v", err)
	}
	var jobs []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if strings.Contains(l, "spn:"+cacheDir+"/") {
			f := strings.Fields(l)
			jobs = append(jobs, f[0]+" "+f[1])
		}
	}
	return jobs
}

// scancel of a running training job, then of all jobs at once, and spn run
// --executor slurm again: the DAG completes with the tables of an
// uninterrupted local run, and nothing half-written is ever visible.
func TestSlurmCancelAndResume(t *testing.T) {
	needSlurm(t)
	bin := buildSpn(t)
	dir := t.TempDir()
	// Longer training, so that jobs are caught running.
	spec := tinySpec(t, dir, "slow.cue", "epochs: 6}", "epochs: 150}")
	want := localTables(t, bin, dir, spec)
	cacheDir := filepath.Join(dir, "cache-slurm")
	if _, stderr, code := spnCmd(t, bin, dir, "run", spec, "--executor", "slurm", "--cache", cacheDir); code != 0 {
		t.Fatalf("submit: exit %d: %s", code, stderr)
	}
	// Wait for a running train task and cancel it.
	var running string
	deadline := time.Now().Add(2 * time.Minute)
	for running == "" && time.Now().Before(deadline) {
		for _, j := range squeueJobs(t, cacheDir) {
			if strings.HasSuffix(j, " RUNNING") {
				running = strings.Fields(j)[0]
			}
		}
		if running == "" {
			time.Sleep(100 * time.Millisecond)
		}
	}
	if running == "" {
		t.Fatal("no spn job ran within 2 minutes")
	}
	// Running jobs may be generate or precompute: wait for a train one.
	for time.Now().Before(deadline) {
		out, _ := osexec.Command("squeue", "-h", "-r", "-t", "RUNNING", "-o", "%F_%K %j %k").Output()
		for _, l := range strings.Split(string(out), "\n") {
			if strings.Contains(l, " spn-train ") && strings.Contains(l, cacheDir) {
				running = strings.Fields(l)[0]
			}
		}
		if strings.Contains(string(out), " spn-train ") {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if out, err := osexec.Command("scancel", running).CombinedOutput(); err != nil {
		t.Fatalf("scancel %s: %v: %s", running, err, out)
	}
	time.Sleep(time.Second)
	// Then everything at once.
	var ids []string
	for _, j := range squeueJobs(t, cacheDir) {
		id, _, _ := strings.Cut(j, "_")
		ids = append(ids, id)
	}
	if len(ids) > 0 {
		if out, err := osexec.Command("scancel", ids...).CombinedOutput(); err != nil {
			t.Fatalf("scancel all: %v: %s", err, out)
		}
	}
	for time.Now().Before(deadline) && len(squeueJobs(t, cacheDir)) > 0 {
		time.Sleep(200 * time.Millisecond)
	}
	// What is visible is complete: every stage dir has its record.
	dirs, _ := filepath.Glob(filepath.Join(cacheDir, "*", "*", "*"))
	for _, d := range dirs {
		if strings.Contains(d, string(filepath.Separator)+"slurm"+string(filepath.Separator)) ||
			strings.Contains(d, string(filepath.Separator)+"index"+string(filepath.Separator)) {
			continue
		}
		if _, err := os.Stat(filepath.Join(d, "record.json")); err != nil {
			t.Errorf("incomplete stage visible after scancel: %s", d)
		}
	}
	status, _, _ := spnCmd(t, bin, dir, "status", spec, "--cache", cacheDir)
	t.Logf("cancelled task %s, then all; spn status:\n%s", running, status)
	out := filepath.Join(dir, "out-slurm")
	_, stderr, code := spnCmd(t, bin, dir, "run", spec, "--executor", "slurm", "--wait", "--poll", "500ms",
		"--cache", cacheDir, "--out", out)
	if code != 0 {
		t.Fatalf("resumed slurm run: exit %d:\n%s", code, stderr)
	}
	sameTables(t, readFiles(t, out), want)
	allCached(t, bin, dir, spec, cacheDir)
}

// Two `spn stage run` of one stage at the same time: the stage runs once,
// the other process waits on its lock and finds it in the cache.
func TestStageRunTwiceAtOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("subprocess test")
	}
	bin := buildSpn(t)
	dir := t.TempDir()
	// Generating 1000 h-Prox graphs takes about 2 s: long enough for the
	// two processes to overlap.
	spec := filepath.Join(dir, "gen.cue")
	if err := os.WriteFile(spec, []byte(`package spn

name: "gen-race"
experiments: a: {
	dataset: {kind: "prox", h: 3, graphs: 1000}
	model: {kind: "spn"}
	protocol: {splits: 1, runs: 1}
}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	cacheDir := filepath.Join(dir, "cache")
	s, err := schema.Load(spec, schema.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := plan.Build(s, newRegistry())
	if err != nil {
		t.Fatal(err)
	}
	gen := p.Nodes[0]
	if gen.Kind != stages.KindGenerate {
		t.Fatalf("first stage is %s", gen.Name)
	}
	planFile, err := exec.NewPlanFile(s.Name, p.Nodes).Write(filepath.Join(cacheDir, "plans"))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	results := make([]string, 2)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, stderr, code := spnCmd(t, bin, dir, "stage", "run", gen.Key, "--plan", planFile, "--cache", cacheDir)
			results[i] = stderr
			if code != 0 {
				t.Errorf("stage run %d: exit %d: %s", i, code, stderr)
			}
		}()
	}
	wg.Wait()
	done, already := 0, 0
	for _, r := range results {
		if strings.Contains(r, ": done in ") {
			done++
		}
		if strings.Contains(r, "already in the cache") {
			already++
		}
	}
	if done != 1 || already != 1 {
		t.Errorf("stage ran %d times, found cached %d times; want 1 and 1:\n%s\n---\n%s", done, already, results[0], results[1])
	}
}

// needGPUGres skips (fails under CI=true) unless the cluster has a GPU
// GRES (scripts/slurm-test-cluster.sh configures one with no GPU behind
// it).
func needGPUGres(t *testing.T) {
	t.Helper()
	out, err := osexec.Command("sinfo", "-h", "-o", "%G").CombinedOutput()
	if err == nil && strings.Contains(string(out), "gpu") {
		return
	}
	msg := fmt.Sprintf("the Slurm cluster has no GPU GRES (sinfo -o %%G: %q); scripts/slurm-test-cluster.sh configures one", strings.TrimSpace(string(out)))
	if os.Getenv("CI") == "true" {
		t.Fatal("CI must run the Slurm GPU test: " + msg)
	}
	t.Skip(msg)
}

// TestSlurmGPURun: spn run --device cuda --executor slurm --wait submits
// the train stages as jobs asking for the cluster's GPU (--gres=gpu:1),
// whose spn stage run --device cuda:0 reaches the emulated device through
// SPN_CUDA_LIBS (inherited by the jobs): every train result records
// cuda:0 and the emulated GPU, the jobs compiled the kernels into the
// shared cache, and the tables are the bytes of a local run on the same
// device.
func TestSlurmGPURun(t *testing.T) {
	needSlurm(t)
	needGPUGres(t)
	libs := emulatedLibDir(t)
	bin := buildSpn(t)
	dir := t.TempDir()
	spec := testdataPath(t, "device_e2e.cue")
	env := []string{device.EnvCUDALibs + "=" + libs}
	local := filepath.Join(dir, "out-local")
	if _, stderr, code := spnCmdEnv(t, bin, dir, env, "run", spec, "--device", "cuda", "--cache", filepath.Join(dir, "cache-local"), "--out", local); code != 0 {
		t.Fatalf("local run on the emulated device: exit %d: %s", code, stderr)
	}
	cacheDir := filepath.Join(dir, "cache-slurm")
	out := filepath.Join(dir, "out-slurm")
	_, stderr, code := spnCmdEnv(t, bin, dir, env, "run", spec, "--device", "cuda", "--executor", "slurm", "--wait", "--poll", "500ms",
		"--cache", cacheDir, "--out", out)
	if code != 0 {
		t.Fatalf("slurm run: exit %d:\n%s", code, stderr)
	}
	sameTables(t, readFiles(t, out), readFiles(t, local))
	files, computes := trainComputes(t, cacheDir, 2)
	for i, c := range computes {
		f := files[i]
		if c == nil || c.Device != "cuda:0" || c.GPU != "Fake GPU" {
			t.Errorf("%s: compute %+v, want cuda:0 on the emulated GPU", f, c)
		}
	}
	if ptx, _ := filepath.Glob(filepath.Join(cacheDir, "ptx", "*.ptx")); len(ptx) != 1 {
		t.Errorf("the shared cache's ptx folder holds %v, want the kernels the jobs compiled", ptx)
	}
	scripts, _ := filepath.Glob(filepath.Join(cacheDir, "slurm", "*", "*.sh"))
	gpuScripts := 0
	for _, f := range scripts {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), "#SBATCH --gres=gpu:1\n") && strings.Contains(string(b), " --device cuda:0 ") {
			gpuScripts++
		}
	}
	if gpuScripts != 1 || len(scripts) < 2 {
		t.Errorf("%d of %d job scripts ask for a GPU, want the one of the train stages", gpuScripts, len(scripts))
	}
}

// With executor.slurm.train.time "auto", spn run submits the train jobs
// with the limit the calibration gives (a hand-written calibration: 100 s
// an epoch, 6 epochs, so 2 × 600 s + 10 min = 30 minutes), which Slurm
// then holds as the jobs' TimeLimit; the other kinds keep the cluster's.
func TestSlurmAutoTime(t *testing.T) {
	needSlurm(t)
	bin := buildSpn(t)
	dir := t.TempDir()
	spec := tinySpec(t, dir, "tiny.cue", `time: "00:10:00"`, `time: "auto"`)
	var entries []string
	for _, e := range []struct {
		model string
		k     int
	}{{"spn", 1}, {"spn", 3}, {"gin", 1}} {
		entries = append(entries, fmt.Sprintf(`{"dataset": "prox(h=2)", "model": %q, "k": %d, "layers": 1, "hidden": 16, "graphs": 120, "seconds_per_epoch": 100}`, e.model, e.k))
	}
	cal := filepath.Join(dir, "cal.json")
	if err := os.WriteFile(cal, []byte(`{"version": 1, "threads": 1, "entries": [`+strings.Join(entries, ", ")+`],
		"stage_seconds": {"generate": {"prox(h=2)": 1}, "precompute": {"prox(h=2)": 1}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	cacheDir := filepath.Join(dir, "cache")
	// Without the calibration nothing is submitted.
	if _, stderr, code := spnCmd(t, bin, dir, "run", spec, "--executor", "slurm", "--hold", "--cache", cacheDir); code == 0 || !strings.Contains(stderr, `executor.slurm: a time is "auto": reading calibration`) {
		t.Fatalf("without a calibration: exit %d: %s", code, stderr)
	}
	if jobs := squeueJobs(t, cacheDir); len(jobs) != 0 {
		t.Fatalf("submitted without a calibration: %v", jobs)
	}
	_, stderr, code := spnCmd(t, bin, dir, "run", spec, "--executor", "slurm", "--hold", "--cache", cacheDir, "--calibration", cal)
	if code != 0 {
		t.Fatalf("slurm run: exit %d: %s", code, stderr)
	}
	out, err := osexec.Command("squeue", "-h", "-o", "%i %j %l %k").Output()
	if err != nil {
		t.Fatalf("squeue: %v", err)
	}
	var ids []string
	limits := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(l)
		if len(f) == 4 && strings.Contains(f[3], "spn:"+cacheDir+"/") {
			ids = append(ids, f[0])
			if old, ok := limits[f[1]]; ok && old != f[2] {
				t.Errorf("%s jobs with limits %s and %s", f[1], old, f[2])
			}
			limits[f[1]] = f[2]
		}
	}
	defer osexec.Command("scancel", ids...).Run()
	t.Logf("time limits by job name: %v", limits)
	if limits["spn-train"] != "30:00" || limits["spn-select"] == "30:00" || limits["spn-select"] == "" {
		t.Errorf("time limits by job name %v; want spn-train 30:00 and the others the cluster's", limits)
	}
}
