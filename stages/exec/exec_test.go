package exec_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	osexec "os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spn-project/spn/internal/testkit/golden"
	"github.com/spn-project/spn/stages"
	"github.com/spn-project/spn/stages/cache"
	"github.com/spn-project/spn/stages/exec"
	"github.com/spn-project/spn/stages/plan"
)

// Subprocess helper: when SPN_EXEC_HELPER is set the test binary runs the
// test plan on the cache SPN_EXEC_CACHE, printing "start NAME" for every
// stage it starts, then "done".
func TestMain(m *testing.M) {
	if os.Getenv("SPN_EXEC_HELPER") == "1" {
		os.Exit(helper())
	}
	os.Exit(m.Run())
}

func helper() int {
	delay, _ := strconv.Atoi(os.Getenv("SPN_EXEC_DELAY_MS"))
	slowKind := os.Getenv("SPN_EXEC_SLOW_KIND")
	jobs, _ := strconv.Atoi(os.Getenv("SPN_EXEC_JOBS"))
	log := &startLog{hook: func(name string) { fmt.Fprintf(os.Stdout, "start %s\n", name) }}
	reg := echoRegistry(func(k *echoKind) {
		k.log = log
		k.partial = os.Getenv("SPN_EXEC_PARTIAL") == "1"
		k.delay = func(j *stages.Job) time.Duration {
			if slowKind != "" && !strings.HasPrefix(j.Name, slowKind) {
				return 0
			}
			return time.Duration(delay) * time.Millisecond
		}
	})
	c, err := cache.Open(os.Getenv("SPN_EXEC_CACHE"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	lk, err := c.Lock(context.Background(), true, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer lk.Unlock()
	p, err := buildPlan(reg, c)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	res, err := exec.Run(context.Background(), p, c, reg, exec.Options{Jobs: jobs, Threads: 1})
	if err != nil || !res.OK() {
		fmt.Fprintln(os.Stderr, err, res.Messages)
		return 1
	}
	fmt.Println("done")
	return 0
}

func runPlan(t *testing.T, c *cache.Cache, reg *stages.Registry, opt exec.Options) (*plan.Plan, *exec.Result) {
	t.Helper()
	p, err := buildPlan(reg, c)
	if err != nil {
		t.Fatal(err)
	}
	res, err := exec.Run(context.Background(), p, c, reg, opt)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return p, res
}

func openCache(t *testing.T) *cache.Cache {
	t.Helper()
	c, err := cache.Open(filepath.Join(t.TempDir(), "cache"))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// artifacts maps every artifact of complete stages (record.json excluded)
// to its content, and fails if a stage dir lacks record.json.
func artifacts(t *testing.T, c *cache.Cache) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, kind := range []string{stages.KindGenerate, stages.KindPrecompute, stages.KindTrain,
		stages.KindSelect, stages.KindEvaluate, stages.KindTabulate} {
		dirs, _ := filepath.Glob(filepath.Join(c.Root, kind, "*", "*"))
		for _, d := range dirs {
			if _, err := os.Stat(filepath.Join(d, stages.FileRecord)); err != nil {
				t.Errorf("stage dir %s visible without record.json", d)
				continue
			}
			filepath.WalkDir(d, func(path string, e fs.DirEntry, err error) error {
				if err != nil || e.IsDir() || e.Name() == stages.FileRecord {
					return err
				}
				b, err := os.ReadFile(path)
				if err != nil {
					return err
				}
				rel, _ := filepath.Rel(c.Root, path)
				out[rel] = string(b)
				return nil
			})
		}
	}
	return out
}

func reference(t *testing.T) map[string]string {
	t.Helper()
	c := openCache(t)
	_, res := runPlan(t, c, echoRegistry(nil), exec.Options{Jobs: 1, Threads: 1})
	if !res.OK() || len(res.Ran) != 17 {
		t.Fatalf("reference run: ok=%v ran %d: %v", res.OK(), len(res.Ran), res.Messages)
	}
	return artifacts(t, c)
}

func TestRunAndResume(t *testing.T) {
	c := openCache(t)
	log := &startLog{}
	reg := echoRegistry(func(k *echoKind) { k.log = log })
	p, res := runPlan(t, c, reg, exec.Options{Jobs: 1, Threads: 3})
	if !res.OK() || len(res.Ran) != len(p.Nodes) {
		t.Fatalf("ok=%v ran %d of %d", res.OK(), len(res.Ran), len(p.Nodes))
	}
	// One job: stages start exactly in plan order.
	var want []string
	for _, n := range p.Nodes {
		want = append(want, n.Name)
	}
	if !reflect.DeepEqual(log.names, want) {
		t.Errorf("start order\n%v\nwant\n%v", log.names, want)
	}
	// Records, seeds and threads.
	for _, n := range p.Nodes {
		rec, err := c.ReadRecord(n.Kind, n.Key)
		if err != nil {
			t.Fatal(err)
		}
		var params bytes.Buffer
		if err := json.Compact(&params, rec.Params); err != nil {
			t.Fatal(err)
		}
		if rec.Key != n.Key || rec.Name != n.Name || rec.Version != "1" || params.String() != string(n.JSON) ||
			len(rec.Inputs) != len(n.Deps) || rec.Seed != exec.SeedOf(n.Key) || rec.Threads != 3 {
			t.Errorf("record of %s: key %s name %s version %s seed %d threads %d", n.Name, rec.Key, rec.Name, rec.Version, rec.Seed, rec.Threads)
		}
		out, _ := os.ReadFile(filepath.Join(c.StageDir(n.Kind, n.Key), "out.txt"))
		if !strings.Contains(string(out), fmt.Sprintf("seed=%d threads=3", exec.SeedOf(n.Key))) {
			t.Errorf("%s got wrong seed/threads: %s", n.Name, out)
		}
	}
	// A second plan sees everything cached and runs nothing.
	log.names = nil
	p2, res2 := runPlan(t, c, reg, exec.Options{Jobs: 2})
	if cached, toRun := p2.Counts(); cached != len(p2.Nodes) || toRun != 0 || len(res2.Ran) != 0 || len(log.names) != 0 {
		t.Errorf("rerun: %d cached, %d to run, ran %d", cached, toRun, len(res2.Ran))
	}
	// Parallel run from scratch gives the same artifacts.
	c2 := openCache(t)
	_, res3 := runPlan(t, c2, echoRegistry(nil), exec.Options{Jobs: 2, Threads: 1})
	if !res3.OK() {
		t.Fatal(res3.Messages)
	}
	c3 := openCache(t)
	runPlan(t, c3, echoRegistry(nil), exec.Options{Jobs: 1, Threads: 1})
	if a, b := artifacts(t, c2), artifacts(t, c3); !reflect.DeepEqual(a, b) || len(a) != 17 {
		t.Errorf("jobs=2 and jobs=1 artifacts differ (%d vs %d files)", len(a), len(b))
	}
}

func TestSeedOf(t *testing.T) {
	if got := exec.SeedOf("0102030405060708ff"); got != 0x0102030405060708 {
		t.Errorf("SeedOf = %x", got)
	}
}

func TestVersionChange(t *testing.T) {
	c := openCache(t)
	runPlan(t, c, echoRegistry(nil), exec.Options{})
	reg := echoRegistry(func(k *echoKind) {
		if k.name == stages.KindSelect {
			k.version = "2"
		}
	})
	p, err := buildPlan(reg, c)
	if err != nil {
		t.Fatal(err)
	}
	reasons := map[string]string{}
	for _, n := range p.Nodes {
		if n.Status == plan.ToRun {
			reasons[n.Name] = n.Reason
		}
	}
	want := map[string]string{
		"select tu split=0":            "code version changed (was 1)",
		"select tu split=1":            "code version changed (was 1)",
		"train tu final split=0 run=0": "input select tu split=0 must run",
		"train tu final split=1 run=0": "input select tu split=1 must run",
		"evaluate tu":                  "input train tu final split=0 run=0 must run",
		"tabulate t":                   "input evaluate tu must run",
	}
	if !reflect.DeepEqual(reasons, want) {
		t.Errorf("reasons %v\nwant %v", reasons, want)
	}
}

func failOn(names ...string) func(*echoKind) {
	return func(k *echoKind) {
		k.fail = func(j *stages.Job) error {
			for _, n := range names {
				if j.Name == n {
					return errors.New("injected failure")
				}
			}
			return nil
		}
	}
}

func TestFailures(t *testing.T) {
	cases := []struct {
		name      string
		fail      []string
		keepGoing bool
		ran       int
	}{
		{"stop", []string{"precompute prox(h=3) kmax=3"}, false, 1},
		{"keep_going", []string{"precompute prox(h=3) kmax=3"}, true, 12},
		{"keep_going_two", []string{"train tu(ENZYMES) spn k=2 L=2 select split=0", "train prox(h=3) spn k=1 L=2 split=0 run=1"}, true, 10},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := openCache(t)
			var msgs []string
			_, res := runPlan(t, c, echoRegistry(failOn(tc.fail...)), exec.Options{
				KeepGoing: tc.keepGoing, Message: func(m string) { msgs = append(msgs, m) }})
			if res.OK() || len(res.Failed) != len(tc.fail) || len(res.Ran) != tc.ran {
				t.Errorf("ok=%v failed %d ran %d, want failed %d ran %d", res.OK(), len(res.Failed), len(res.Ran), len(tc.fail), tc.ran)
			}
			if !reflect.DeepEqual(msgs, res.Messages) {
				t.Errorf("messages callback and result differ")
			}
			golden.Check(t, filepath.Join("testdata", "failures_"+tc.name+".txt.golden"), []byte(strings.Join(msgs, "\n")+"\n"))
			// Nothing of the failed or skipped stages is in the cache.
			for _, f := range res.Failed {
				if ok, _ := c.Has(f.Node.Kind, f.Node.Key); ok {
					t.Errorf("failed %s is cached", f.Node.Name)
				}
			}
			if ents, _ := os.ReadDir(filepath.Join(c.Root, "tmp")); len(ents) != 0 {
				t.Errorf("%d temp dirs left", len(ents))
			}
			// Rerun without failures completes the rest.
			_, res2 := runPlan(t, c, echoRegistry(nil), exec.Options{Jobs: 2})
			if !res2.OK() || len(res2.Ran) != 17-tc.ran {
				t.Errorf("resume ran %d, want %d", len(res2.Ran), 17-tc.ran)
			}
		})
	}
}

func TestPanicIsFailure(t *testing.T) {
	c := openCache(t)
	reg := echoRegistry(func(k *echoKind) {
		if k.name == stages.KindEvaluate {
			k.fail = func(*stages.Job) error { panic("boom") }
		}
	})
	_, res := runPlan(t, c, reg, exec.Options{KeepGoing: true})
	if len(res.Failed) != 2 || res.Messages[0] != "failed evaluate prox: stage panicked: boom" {
		t.Errorf("messages %q", res.Messages)
	}
}

func TestCancel(t *testing.T) {
	c := openCache(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	reg := echoRegistry(func(k *echoKind) {
		k.partial = true
		k.log = &startLog{hook: func(name string) {
			if strings.HasPrefix(name, "train") {
				cancel()
			}
		}}
		k.delay = func(j *stages.Job) time.Duration {
			if strings.HasPrefix(j.Name, "train") {
				return time.Minute
			}
			return 0
		}
	})
	p, err := buildPlan(reg, c)
	if err != nil {
		t.Fatal(err)
	}
	res, err := exec.Run(ctx, p, c, reg, exec.Options{Jobs: 2})
	if !errors.Is(err, context.Canceled) || !res.Interrupted || len(res.Failed) != 0 || len(res.Messages) != 0 {
		t.Fatalf("err %v, interrupted %v, failed %d, messages %v", err, res.Interrupted, len(res.Failed), res.Messages)
	}
	if ents, _ := os.ReadDir(filepath.Join(c.Root, "tmp")); len(ents) != 0 {
		t.Errorf("%d temp dirs left after cancel", len(ents))
	}
	ref := reference(t)
	_, res2 := runPlan(t, c, echoRegistry(nil), exec.Options{})
	if !res2.OK() || !reflect.DeepEqual(artifacts(t, c), ref) {
		t.Errorf("resume after cancel differs from reference")
	}
}

// startHelper runs the test binary as a helper on cache dir and returns the
// command and a channel of its "start NAME" lines.
func startHelper(t *testing.T, dir string, env ...string) (*osexec.Cmd, <-chan string) {
	t.Helper()
	cmd := osexec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), append([]string{"SPN_EXEC_HELPER=1", "SPN_EXEC_CACHE=" + dir}, env...)...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	return cmd, lines
}

func waitLine(t *testing.T, lines <-chan string, pred func(string) bool) {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatal("helper exited early")
			}
			if pred(l) {
				return
			}
		case <-timeout:
			t.Fatal("timeout waiting for helper")
		}
	}
}

func kill(t *testing.T, cmd *osexec.Cmd) {
	t.Helper()
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
}

// A writer killed in the middle of writing an artifact leaves nothing
// visible in the cache; the next run removes its temp dir and completes.
func TestKilledWriterLeavesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("subprocess test")
	}
	ref := reference(t)
	dir := filepath.Join(t.TempDir(), "cache")
	cmd, lines := startHelper(t, dir, "SPN_EXEC_PARTIAL=1", "SPN_EXEC_SLOW_KIND=train", "SPN_EXEC_DELAY_MS=60000", "SPN_EXEC_JOBS=1")
	waitLine(t, lines, func(l string) bool { return strings.HasPrefix(l, "start train") })
	// Wait until the half-written artifact is on disk, then kill.
	deadline := time.Now().Add(10 * time.Second)
	for {
		partial, _ := filepath.Glob(filepath.Join(dir, "tmp", "*", "out.txt"))
		if len(partial) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no partial artifact appeared")
		}
		time.Sleep(10 * time.Millisecond)
	}
	kill(t, cmd)
	c, err := cache.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	got := artifacts(t, c)
	if len(got) != 2 { // generate and precompute of prox only
		t.Errorf("%d artifacts visible after kill, want 2: %v", len(got), got)
	}
	for k := range got {
		if strings.HasPrefix(k, "train") || got[k] != ref[k] {
			t.Errorf("artifact %s visible or wrong after kill", k)
		}
	}
	_, res := runPlan(t, c, echoRegistry(nil), exec.Options{})
	if !res.OK() || len(res.Ran) != 15 {
		t.Errorf("resume ran %d, ok=%v", len(res.Ran), res.OK())
	}
	if ents, _ := os.ReadDir(filepath.Join(dir, "tmp")); len(ents) != 0 {
		t.Errorf("stale temp dir not removed")
	}
	if !reflect.DeepEqual(artifacts(t, c), ref) {
		t.Errorf("artifacts after resume differ from an uninterrupted run")
	}
}

// SIGKILL at several moments of a parallel multi-stage run: what is visible
// is always complete and correct, and a rerun gives exactly the artifacts of
// an uninterrupted run, after which every stage is cached.
func TestKillAnywhereThenResume(t *testing.T) {
	if testing.Short() {
		t.Skip("subprocess test")
	}
	ref := reference(t)
	for _, after := range []int{1, 4, 9, 16} {
		t.Run(fmt.Sprintf("after_%d_starts", after), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "cache")
			cmd, lines := startHelper(t, dir, "SPN_EXEC_DELAY_MS=40", "SPN_EXEC_JOBS=2", "SPN_EXEC_PARTIAL=1")
			n := 0
			waitLine(t, lines, func(l string) bool {
				if strings.HasPrefix(l, "start ") {
					n++
				}
				return n == after
			})
			time.Sleep(time.Duration(after%3) * 15 * time.Millisecond)
			kill(t, cmd)
			c, err := cache.Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range artifacts(t, c) {
				if ref[k] != v {
					t.Errorf("visible artifact %s differs from reference", k)
				}
			}
			runPlan(t, c, echoRegistry(nil), exec.Options{Jobs: 2})
			if !reflect.DeepEqual(artifacts(t, c), ref) {
				t.Errorf("artifacts after resume differ from an uninterrupted run")
			}
			p, err := buildPlan(echoRegistry(nil), c)
			if err != nil {
				t.Fatal(err)
			}
			if cached, toRun := p.Counts(); toRun != 0 || cached != 17 {
				t.Errorf("after resume: %d cached, %d to run", cached, toRun)
			}
		})
	}
}

// Select restricts a run: unselected stages never run, and selected stages
// whose inputs are neither cached nor selected are reported, not run.
func TestSelect(t *testing.T) {
	c := openCache(t)
	log := &startLog{}
	reg := echoRegistry(func(k *echoKind) { k.log = log })
	onlyProx := func(n *plan.Node) bool { return strings.Contains(n.Name, "prox") }
	p, err := buildPlan(reg, c)
	if err != nil {
		t.Fatal(err)
	}
	var msgs []string
	res, err := exec.Run(context.Background(), p, c, reg, exec.Options{Select: onlyProx,
		Message: func(m string) { msgs = append(msgs, m) }})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"generate prox(h=3)", "precompute prox(h=3) kmax=3",
		"train prox(h=3) spn k=1 L=2 split=0 run=0", "train prox(h=3) spn k=1 L=2 split=0 run=1", "evaluate prox"}
	if !reflect.DeepEqual(log.names, want) || len(res.Ran) != 5 {
		t.Errorf("ran %v", log.names)
	}
	if !res.OK() || res.NotStarted != 0 {
		t.Errorf("ok=%v notStarted=%d", res.OK(), res.NotStarted)
	}
	// tabulate t is not selected ("t" has no "prox"): nothing else happens.
	if len(msgs) != 0 {
		t.Errorf("messages %v", msgs)
	}
	// Selecting only the table, with evaluate tu missing: not started.
	p, _ = buildPlan(reg, c)
	res, err = exec.Run(context.Background(), p, c, reg, exec.Options{
		Select: func(n *plan.Node) bool { return n.Kind == stages.KindTabulate }, Message: func(string) {}})
	if err != nil || res.NotStarted != 1 || len(res.Ran) != 0 ||
		res.Messages[0] != "1 stages not started: their inputs are not selected to run" {
		t.Errorf("err %v, not started %d, ran %d, %v", err, res.NotStarted, len(res.Ran), res.Messages)
	}
}

// With several jobs, every stage starts only after all its inputs ended.
func TestParallelOrderRespectsDeps(t *testing.T) {
	c := openCache(t)
	ev := &startLog{}
	reg := echoRegistry(func(k *echoKind) {
		k.events = ev
		k.delay = func(*stages.Job) time.Duration { return 2 * time.Millisecond }
	})
	p, res := runPlan(t, c, reg, exec.Options{Jobs: 3})
	if !res.OK() {
		t.Fatal(res.Messages)
	}
	pos := map[string]int{}
	for i, e := range ev.names {
		pos[e] = i
	}
	if len(pos) != 2*len(p.Nodes) {
		t.Fatalf("%d events for %d stages", len(pos), len(p.Nodes))
	}
	for _, n := range p.Nodes {
		for _, d := range n.Deps {
			if pos["end "+d.Name] > pos["start "+n.Name] {
				t.Errorf("%s started before its input %s ended", n.Name, d.Name)
			}
		}
	}
}
