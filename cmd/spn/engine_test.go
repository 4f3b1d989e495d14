package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/spn-project/spn/stages/report"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spn-project/spn/schema"
	"github.com/spn-project/spn/stages"
	"github.com/spn-project/spn/stages/cache"
	"github.com/spn-project/spn/stages/evaluate"
	"github.com/spn-project/spn/stages/selectstage"
	"github.com/spn-project/spn/stages/tabulate"

	"github.com/spn-project/spn/internal/testkit/golden"
)

// fakeKind stands in for generate, precompute and train (test only): it
// writes small deterministic artifacts; train writes a TrainResult whose
// scores derive from the stage seed, so the real select, evaluate and
// tabulate kinds can run on them.
type fakeKind struct {
	name string
	fail bool
}

func (k fakeKind) Name() string    { return k.name }
func (k fakeKind) Version() string { return "test" }

func (k fakeKind) Run(ctx context.Context, j *stages.Job) error {
	if k.fail {
		return errors.New("injected failure")
	}
	switch k.name {
	case stages.KindGenerate:
		return os.WriteFile(filepath.Join(j.Dir, stages.FileDataset), j.Params, 0o644)
	case stages.KindPrecompute:
		return os.WriteFile(filepath.Join(j.Dir, stages.FileHops), j.Params, 0o644)
	}
	var p stages.TrainParams
	if err := j.Decode(&p); err != nil {
		return err
	}
	pt := p.Point
	if p.Role == stages.RoleFinal {
		b, err := os.ReadFile(filepath.Join(j.InputsOf(stages.KindSelect)[0].Dir, stages.FileResult))
		if err != nil {
			return err
		}
		var sel stages.SelectResult
		if err := json.Unmarshal(b, &sel); err != nil {
			return err
		}
		pt = &sel.Point
	}
	u := float64(j.Seed%1000) / 1000
	v := float64((j.Seed/1000)%1000) / 1000
	res := stages.TrainResult{Point: *pt, Metric: p.Metric, BestEpoch: 1,
		ValLoss: 1 - u, ValScore: 0.5 + 0.4*u, TestLoss: 1 - v, TestScore: 0.5 + 0.4*v,
		Epochs: []stages.EpochRecord{{Epoch: 1}}}
	b, err := json.Marshal(res)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(j.Dir, stages.FileModel), []byte("model"), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(j.Dir, stages.FileResult), b, 0o644)
}

func testEngine(failing ...string) *engine {
	fails := map[string]bool{}
	for _, f := range failing {
		fails[f] = true
	}
	return &engine{
		reg: stages.NewRegistry(
			fakeKind{stages.KindGenerate, fails[stages.KindGenerate]},
			fakeKind{stages.KindPrecompute, fails[stages.KindPrecompute]},
			fakeKind{stages.KindTrain, fails[stages.KindTrain]},
			selectstage.Kind{}, evaluate.Kind{}, tabulate.Kind{}),
		printTable: tabulate.PrintTerminal,
		quickstart: func() (string, []byte, bool) {
			b, err := os.ReadFile("testdata/small.cue")
			return "<embedded>/small.cue", b, err == nil
		},
	}
}

// syncBuffer is a bytes.Buffer safe for the concurrent writes of a run.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

type result struct {
	code           int
	stdout, stderr string
}

// spn runs one command of the test engine with SPN_CACHE set to cacheDir.
func spn(en *engine, cacheDir string, args ...string) result {
	return spnOn(nil, en, cacheDir, args...)
}

func TestPlanJSONGolden(t *testing.T) {
	dir := t.TempDir()
	r := spn(testEngine(), dir, "plan", "testdata/small.cue", "--json")
	if r.code != exitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	golden.Check(t, "testdata/plan_small.json.golden", []byte(r.stdout))
	r = spn(testEngine(), dir, "plan", "--log-level", "warn", "testdata/small.cue")
	if r.code != exitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	golden.Check(t, "testdata/plan_small.txt.golden", []byte(r.stdout))
	if _, err := os.Stat(filepath.Join(dir, "lock")); err == nil {
		t.Error("plan touched the cache")
	}
}

// The keys depend on the spec's content, not on its layout.
func TestPlanKeysIgnoreFormatting(t *testing.T) {
	dir := t.TempDir()
	a := spn(testEngine(), dir, "plan", "testdata/small.cue", "--json")
	b := spn(testEngine(), dir, "plan", "--json", "testdata/small_reordered.cue")
	if a.code != 0 || b.code != 0 {
		t.Fatalf("exit %d / %d: %s %s", a.code, b.code, a.stderr, b.stderr)
	}
	if a.stdout != b.stdout {
		t.Error("reformatted spec gives another plan")
	}
}

func TestRunThenTable(t *testing.T) {
	dir := t.TempDir()
	out1, out2, out3 := filepath.Join(dir, "out1"), filepath.Join(dir, "out2"), filepath.Join(dir, "out3")
	cacheDir := filepath.Join(dir, "cache")
	// Before any run, table names the experiments to run first.
	r := spn(testEngine(), cacheDir, "table", "testdata/small.cue", "--out", out1)
	if r.code != exitFail {
		t.Fatalf("table on empty cache: exit %d", r.code)
	}
	golden.Check(t, "testdata/table_missing.txt.golden", []byte(strings.ReplaceAll(r.stderr, cacheDir, "CACHE")))

	r = spn(testEngine(), cacheDir, "run", "testdata/small.cue", "--out", out1, "--jobs", "2", "--threads", "1")
	if r.code != exitOK {
		t.Fatalf("run: exit %d: %s", r.code, r.stderr)
	}
	golden.Check(t, "testdata/run_small_stdout.txt.golden", []byte(r.stdout))
	runOut := r.stdout
	for _, f := range []string{"main.md", "main.csv"} {
		if _, err := os.Stat(filepath.Join(out1, f)); err != nil {
			t.Errorf("run did not write %s: %v", f, err)
		}
	}
	// Everything is cached afterwards.
	r = spn(testEngine(), cacheDir, "plan", "testdata/small.cue")
	if !strings.HasSuffix(r.stdout, "24 stages: 24 cached, 0 to run\n") {
		t.Errorf("plan after run:\n%s", r.stdout)
	}
	// table renders the same bytes from the cache, and runs nothing else.
	r = spn(testEngine("generate", "precompute", "train"), cacheDir, "table", "testdata/small.cue", "--out", out2)
	if r.code != exitOK || r.stdout != runOut {
		t.Errorf("table: exit %d, stdout differs from run's: %s", r.code, r.stderr)
	}
	sameFiles(t, out1, out2)
	// With the tabulate stage gone, table re-runs only it.
	r = spn(testEngine(), cacheDir, "plan", "testdata/small.cue", "--json")
	var nodes []struct{ Key, Kind string }
	if err := json.Unmarshal([]byte(r.stdout), &nodes); err != nil {
		t.Fatal(err)
	}
	c := &cache.Cache{Root: cacheDir}
	for _, n := range nodes {
		if n.Kind == stages.KindTabulate {
			if err := os.RemoveAll(c.StageDir(n.Kind, n.Key)); err != nil {
				t.Fatal(err)
			}
		}
	}
	r = spn(testEngine("generate", "precompute", "train"), cacheDir, "table", "testdata/small.cue", "--out", out3)
	if r.code != exitOK || r.stdout != runOut {
		t.Errorf("table after removing tabulate: exit %d: %s", r.code, r.stderr)
	}
	sameFiles(t, out1, out3)
	// A second run does nothing and prints the same tables.
	r = spn(testEngine(), cacheDir, "run", "testdata/small.cue", "--out", out1)
	if r.code != exitOK || r.stdout != runOut || !strings.Contains(r.stderr, "24 stages, 24 cached, 0 to run") {
		t.Errorf("second run: exit %d: %s", r.code, r.stderr)
	}
}

// Without FILE, run uses the built-in quickstart.
func TestRunQuickstart(t *testing.T) {
	dir := t.TempDir()
	r := spn(testEngine(), filepath.Join(dir, "cache"), "run", "--out", filepath.Join(dir, "out"))
	if r.code != exitOK || !strings.Contains(r.stderr, "<embedded>/small.cue: 24 stages") {
		t.Errorf("exit %d: %s", r.code, r.stderr)
	}
	en := testEngine()
	en.quickstart = func() (string, []byte, bool) { return "", nil, false }
	r = spn(en, dir, "run")
	if r.code != exitUsage || r.stderr != "spn run: this build has no built-in quickstart spec; give a spec FILE\n" {
		t.Errorf("exit %d: %q", r.code, r.stderr)
	}
}

func TestRunFailure(t *testing.T) {
	dir := t.TempDir()
	// One stage at a time: which failure a skipped stage names depends on
	// the order the failures happen in.
	r := spn(testEngine("precompute"), filepath.Join(dir, "cache"), "run", "testdata/small.cue",
		"--out", filepath.Join(dir, "out"), "--keep-going", "--log-level", "error", "--jobs", "1")
	if r.code != exitFail {
		t.Fatalf("exit %d", r.code)
	}
	// --keep-going still writes the table, every computed cell missing.
	if !strings.Contains(r.stdout, "Incomplete: cells shown as -- are experiments that did not finish (enz, gin, spn)") {
		t.Errorf("keep-going run did not print the incomplete table: %s", r.stdout)
	}
	for _, want := range []string{
		"spn run: failed precompute prox(h=3) kmax=3: injected failure\n",
		"spn run: skipped train prox(h=3) gin k=1 L=5 split=0 run=0: input precompute prox(h=3) kmax=3 failed\n",
		"spn run: skipped tabulate main: input evaluate enz was skipped (precompute tu(ENZYMES) kmax=2 failed)\n",
		"spn run: 2 stages ran, 2 failed, 20 skipped, 0 not started\n",
	} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	if b, err := os.ReadFile(filepath.Join(dir, "out", "main.md")); err != nil || !strings.Contains(string(b), "Incomplete") {
		t.Errorf("keep-going run wrote no incomplete main.md: %v %s", err, b)
	}
	// Without --keep-going a failed run writes no table.
	r = spn(testEngine("precompute"), filepath.Join(dir, "cache2"), "run", "testdata/small.cue",
		"--out", filepath.Join(dir, "out2"), "--log-level", "error")
	if r.code != exitFail || r.stdout != "" {
		t.Errorf("failed run: exit %d, printed tables: %s", r.code, r.stdout)
	}
	if _, err := os.Stat(filepath.Join(dir, "out2")); err == nil {
		t.Error("failed run created the output dir")
	}
}

// With --keep-going, one failed experiment leaves the others' cells in
// the table; the failed cell shows as -- and the caption names it.
func TestKeepGoingPartialTable(t *testing.T) {
	dir := t.TempDir()
	en := testEngine()
	en.reg = stages.NewRegistry(
		nameFailKind{fakeKind{name: stages.KindGenerate}, "ENZYMES"},
		fakeKind{name: stages.KindPrecompute}, fakeKind{name: stages.KindTrain},
		selectstage.Kind{}, evaluate.Kind{}, tabulate.Kind{})
	r := spn(en, filepath.Join(dir, "cache"), "run", "testdata/small.cue",
		"--out", filepath.Join(dir, "out"), "--keep-going", "--log-level", "error")
	if r.code != exitFail {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	golden.Check(t, "testdata/run_keep_going_stdout.txt.golden", []byte(r.stdout))
	md, err := os.ReadFile(filepath.Join(dir, "out", "main.md"))
	if err != nil || !strings.Contains(string(md), "did not finish (enz)") || strings.Count(string(md), "±") != 3 {
		t.Errorf("main.md: %v\n%s", err, md)
	}
	if !strings.Contains(r.stderr, "spn run: table main: incomplete, 1 experiments missing (enz)") {
		t.Errorf("stderr: %s", r.stderr)
	}
	// The incomplete table is not cached: table still says what is missing.
	r = spn(en, filepath.Join(dir, "cache"), "table", "testdata/small.cue", "--out", filepath.Join(dir, "out3"))
	if r.code != exitFail || !strings.Contains(r.stderr, "experiment enz has no results") {
		t.Errorf("table after a partial run: exit %d: %s", r.code, r.stderr)
	}
	// table --partial writes it from what has results, and caches nothing.
	r = spn(en, filepath.Join(dir, "cache"), "table", "testdata/small.cue", "--out", filepath.Join(dir, "out4"), "--partial")
	md, err = os.ReadFile(filepath.Join(dir, "out4", "main.md"))
	if r.code != exitOK || err != nil || !strings.Contains(string(md), "experiments without results yet (enz).") || strings.Count(string(md), "±") != 3 {
		t.Errorf("table --partial: exit %d, %v: %s\n%s", r.code, err, r.stderr, md)
	}
	if !strings.Contains(r.stderr, "spn table: table main: incomplete, 1 experiments missing (enz)") {
		t.Errorf("table --partial: stderr %s", r.stderr)
	}
	r = spn(en, filepath.Join(dir, "cache"), "table", "testdata/small.cue", "--out", filepath.Join(dir, "out5"))
	if r.code != exitFail {
		t.Errorf("table after table --partial: exit %d: %s", r.code, r.stderr)
	}
}

// nameFailKind fails the stages whose name contains sub.
type nameFailKind struct {
	fakeKind
	sub string
}

func (k nameFailKind) Run(ctx context.Context, j *stages.Job) error {
	if strings.Contains(j.Name, k.sub) {
		return errors.New("injected failure")
	}
	return k.fakeKind.Run(ctx, j)
}

func TestUsageAndSpecErrors(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"plan"}, exitUsage, "spn plan: want one spec FILE, got 0 arguments\n"},
		{[]string{"plan", "a.cue", "b.cue"}, exitUsage, "spn plan: want one spec FILE, got 2 arguments\n"},
		{[]string{"run", "a.cue", "b.cue"}, exitUsage, "spn run: want at most one spec FILE, got 2 arguments\n"},
		{[]string{"run", "testdata/small.cue", "--jobs", "-1"}, exitUsage, "spn run: --jobs and --threads must be positive\n"},
		{[]string{"plan", "testdata/small.cue", "--log-level", "loud"}, exitUsage,
			"spn plan: --log-level: unknown level \"loud\" (want trace, debug, info, warn or error)\n"},
		{[]string{"plan", "testdata/small.cue", "--mode", "huge"}, exitUsage,
			"spn plan: loading testdata/small.cue: mode \"huge\" is not one of \"full\", \"smoke\", \"paper-1split\", \"evidence\"\n"},
		{[]string{"table", "testdata/missing.cue"}, exitUsage,
			"spn table: reading spec testdata/missing.cue: open testdata/missing.cue: no such file or directory\n"},
		{[]string{"plan", "testdata/bad.cue"}, exitUsage,
			"testdata/bad.cue:5:29: experiments.x.dataset.h: invalid value 0 (out of bound >=1)\n" +
				"testdata/bad.cue:6:29: experiments.x.model.colour: field not allowed (allowed in a \"spn\" model: alpha_init, dropout, eps, global_readout, hidden, k, kind, layer_norm, layers, learn_eps, pool, unreachable)\n"},
		{[]string{"run", "testdata/bad.cue"}, exitUsage,
			"testdata/bad.cue:5:29: experiments.x.dataset.h: invalid value 0 (out of bound >=1)\n" +
				"testdata/bad.cue:6:29: experiments.x.model.colour: field not allowed (allowed in a \"spn\" model: alpha_init, dropout, eps, global_readout, hidden, k, kind, layer_norm, layers, learn_eps, pool, unreachable)\n"},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			r := spn(testEngine(), dir, c.args...)
			if r.code != c.code || r.stderr != c.want {
				t.Errorf("exit %d, stderr %q\nwant exit %d, %q", r.code, r.stderr, c.code, c.want)
			}
		})
	}
}

// lockedCache opens the cache dir/cache and takes its lock, as another
// spn process would hold it.
func lockedCache(t *testing.T, dir string) (string, *cache.Lock) {
	t.Helper()
	cacheDir := filepath.Join(dir, "cache")
	c, err := cache.Open(cacheDir)
	if err != nil {
		t.Fatal(err)
	}
	lk, err := c.Lock(context.Background(), false, nil)
	if err != nil {
		t.Fatal(err)
	}
	return cacheDir, lk
}

// A second run on a locked cache fails at once with --no-wait, else says
// once that it waits and proceeds when the lock is released.
func TestRunLockContention(t *testing.T) {
	dir := t.TempDir()
	cacheDir, lk := lockedCache(t, dir)
	r := spn(testEngine(), cacheDir, "run", "testdata/small.cue", "--no-wait", "--out", filepath.Join(dir, "out"))
	want := fmt.Sprintf("spn run: cache is locked by another process (pid %d): %s; wait for it to finish, use another --cache, or drop --no-wait to wait\n",
		os.Getpid(), filepath.Join(cacheDir, "lock"))
	if r.code != exitFail || r.stderr != want {
		t.Errorf("exit %d, stderr %q\nwant %q", r.code, r.stderr, want)
	}
	done := make(chan result, 1)
	go func() {
		done <- spn(testEngine(), cacheDir, "run", "testdata/small.cue", "--log-level", "error", "--out", filepath.Join(dir, "out"))
	}()
	time.Sleep(400 * time.Millisecond)
	select {
	case r := <-done:
		t.Fatalf("run did not wait: %+v", r)
	default:
	}
	lk.Unlock()
	r = <-done
	wait := fmt.Sprintf("spn run: waiting for spn process %d, which is using the cache %s (--no-wait fails instead)\n", os.Getpid(), cacheDir)
	if r.code != exitOK || strings.Count(r.stderr, wait) != 1 {
		t.Errorf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
}

// spn calibrate writes stages as spn run does, under the cache lock.
func TestCalibrateLock(t *testing.T) {
	dir := t.TempDir()
	cacheDir, lk := lockedCache(t, dir)
	defer lk.Unlock()
	r := spn(testEngine(), cacheDir, "calibrate", "testdata/small.cue", "--no-wait", "--out", filepath.Join(dir, "cal.json"))
	want := fmt.Sprintf("spn calibrate: cache is locked by another process (pid %d): %s; wait for it to finish, use another --cache, or drop --no-wait to wait\n",
		os.Getpid(), filepath.Join(cacheDir, "lock"))
	if r.code != exitFail || !strings.HasSuffix(r.stderr, want) {
		t.Errorf("exit %d, stderr %q\nwant it to end %q", r.code, r.stderr, want)
	}
	if _, err := os.Stat(filepath.Join(dir, "cal.json")); !os.IsNotExist(err) {
		t.Errorf("calibration written under a held lock: %v", err)
	}
}

func TestSpecMode(t *testing.T) {
	spec, err := (&app{stderr: &bytes.Buffer{}}).loadSpec(testEngine(), "plan", "testdata/small.cue", &envOpts{})
	if err != nil || spec.Mode != schema.ModeSmoke {
		t.Fatalf("load: %v %v", spec, err)
	}
}

// sameFiles checks that the results directories a and b hold the same
// files, report.html aside: it shows the stages' timings, which differ
// between runs (the same cache gives the same report: TestReportQuickstart).
func sameFiles(t *testing.T, a, b string) {
	t.Helper()
	ents, err := os.ReadDir(a)
	if err != nil {
		t.Fatal(err)
	}
	entsB, _ := os.ReadDir(b)
	ents = slices.DeleteFunc(ents, func(e os.DirEntry) bool { return e.Name() == report.FileName })
	entsB = slices.DeleteFunc(entsB, func(e os.DirEntry) bool { return e.Name() == report.FileName })
	if len(ents) != len(entsB) {
		t.Errorf("%s has %d files, %s has %d", a, len(ents), b, len(entsB))
	}
	for _, e := range ents {
		x, _ := os.ReadFile(filepath.Join(a, e.Name()))
		y, err := os.ReadFile(filepath.Join(b, e.Name()))
		if err != nil || !bytes.Equal(x, y) {
			t.Errorf("%s differs between %s and %s", e.Name(), a, b)
		}
	}
}

func TestHelpFlag(t *testing.T) {
	for _, cmd := range []string{"plan", "run", "table"} {
		r := spn(testEngine(), t.TempDir(), cmd, "-h")
		if r.code != exitOK || !strings.HasPrefix(r.stderr, "Usage: spn "+cmd) || !strings.Contains(r.stderr, "-cache dir") {
			t.Errorf("%s -h: exit %d, %q", cmd, r.code, r.stderr)
		}
	}
}
