package slurm

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/spn-project/spn/schema"
	"github.com/spn-project/spn/stages/cache"
	"github.com/spn-project/spn/stages/plan"
)

// testPlan is a small DAG: gen → pre → 5 trains (select) → sel → 2 finals
// → eval → tab.
func testPlan() *plan.Plan {
	p := &plan.Plan{}
	add := func(kind, name string, deps ...*plan.Node) *plan.Node {
		n := &plan.Node{Key: fmt.Sprintf("k%02d", len(p.Nodes)), Kind: kind, Version: "1", Name: name,
			JSON: []byte(`{}`), Deps: deps, Index: len(p.Nodes), Status: plan.ToRun}
		p.Nodes = append(p.Nodes, n)
		return n
	}
	gen := add("generate", "gen")
	pre := add("precompute", "pre", gen)
	var trains []*plan.Node
	for i := 0; i < 5; i++ {
		trains = append(trains, add("train", fmt.Sprintf("train %d", i), gen, pre))
	}
	sel := add("select", "sel", trains...)
	f1 := add("train", "final 0", gen, pre, sel)
	f2 := add("train", "final 1", gen, pre, sel)
	ev := add("evaluate", "eval", f1, f2)
	add("tabulate", "tab", ev)
	return p
}

func cfg(group string, maxArray, trainBundle int) schema.Slurm {
	r := schema.SlurmResources{CPUs: 1, Bundle: 1}
	tr := r
	tr.Bundle = trainBundle
	tr.CPUs, tr.Mem, tr.Time = 2, "4G", "01:00:00"
	return schema.Slurm{Group: group, MaxArray: maxArray, Partition: "cpu",
		Generate: r, Precompute: r, Train: tr, Select: r, Evaluate: r, Tabulate: r}
}

func shape(jobs []*Job) []string {
	var out []string
	for _, j := range jobs {
		var tasks []string
		for _, t := range j.Tasks {
			var names []string
			for _, n := range t {
				names = append(names, n.Key)
			}
			tasks = append(tasks, strings.Join(names, "+"))
		}
		out = append(out, fmt.Sprintf("%s L%d [%s]", j.Kind, j.Level, strings.Join(tasks, " ")))
	}
	return out
}

func TestGroup(t *testing.T) {
	p := testPlan()
	for _, tc := range []struct {
		name string
		cfg  schema.Slurm
		want []string
	}{
		{"arrays", cfg("array", 1000, 1), []string{
			"generate L0 [k00]", "precompute L1 [k01]", "train L2 [k02 k03 k04 k05 k06]",
			"select L3 [k07]", "train L4 [k08 k09]", "evaluate L5 [k10]", "tabulate L6 [k11]"}},
		{"bundles and array limit", cfg("array", 2, 2), []string{
			"generate L0 [k00]", "precompute L1 [k01]", "train L2 [k02+k03 k04+k05]", "train L2 [k06]",
			"select L3 [k07]", "train L4 [k08+k09]", "evaluate L5 [k10]", "tabulate L6 [k11]"}},
		{"one job per stage", cfg("stage", 1000, 3), []string{
			"generate L0 [k00]", "precompute L1 [k01]", "train L2 [k02]", "train L2 [k03]", "train L2 [k04]",
			"train L2 [k05]", "train L2 [k06]", "select L3 [k07]", "train L4 [k08]", "train L4 [k09]",
			"evaluate L5 [k10]", "tabulate L6 [k11]"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := shape(Group(p.Nodes, tc.cfg)); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

// fakeSlurm records sbatch calls and answers squeue with a fixed listing.
type fakeSlurm struct {
	calls  [][]string
	squeue string
	next   int
}

func (f *fakeSlurm) Run(_ context.Context, name string, args ...string) ([]byte, error) {
	f.calls = append(f.calls, append([]string{name}, args...))
	switch name {
	case "sbatch":
		f.next++
		return []byte(fmt.Sprintf("%d\n", 100+f.next)), nil
	case "squeue":
		return []byte(f.squeue), nil
	}
	return nil, nil
}

// Submit skips cached and queued stages, waits on the jobs of queued
// inputs, and passes the resources and the dependencies to sbatch.
func TestSubmit(t *testing.T) {
	c, err := cache.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	p := testPlan()
	p.Nodes[0].Status = plan.Cached                                     // gen
	active := map[string]Active{"k01": {JobID: "77", State: "RUNNING"}} // pre
	f := &fakeSlurm{}
	sub, err := Submit(context.Background(), p, c, active, Options{Config: cfg("array", 1000, 1),
		Binary: "/shared/spn", StageArgs: []string{"--cache", c.Root}, Spec: "t", Runner: f})
	if err != nil {
		t.Fatal(err)
	}
	if sub.Stages != 10 || len(sub.Jobs) != 5 {
		t.Fatalf("submitted %d stages in %d jobs, want 10 in 5: %q", sub.Stages, len(sub.Jobs), shape(sub.Jobs))
	}
	train := strings.Join(f.calls[0], " ")
	for _, want := range []string{"--array=0-4", "--cpus-per-task=2", "--mem=4G", "--time=01:00:00",
		"--partition=cpu", "--dependency=afterok:77_0 ", "--kill-on-invalid-dep=yes", "--comment=spn:" + sub.Jobs[0].TasksFile} {
		if !strings.Contains(train, want) {
			t.Errorf("train sbatch call lacks %s: %s", want, train)
		}
	}
	// The final trains wait on pre's running task (77_0) and the select
	// job.
	if got := strings.Join(f.calls[2], " "); !strings.Contains(got, "--dependency=afterok:77_0:102 ") {
		t.Errorf("final train sbatch: %s", got)
	}
	tasks, err := os.ReadFile(sub.Jobs[0].TasksFile)
	if err != nil || string(tasks) != "k02\nk03\nk04\nk05\nk06\n" {
		t.Errorf("tasks file %q (%v)", tasks, err)
	}
	script, _ := os.ReadFile(sub.Jobs[0].Script)
	if !strings.Contains(string(script), "exec /shared/spn stage run --plan "+sub.Jobs[0].PlanFile) {
		t.Errorf("script:\n%s", script)
	}

	// Queue maps the array tasks back to stages through the tasks files.
	f.squeue = fmt.Sprintf("101|0|RUNNING|None|spn:%s\n101|3|PENDING|Priority|spn:%s\n"+
		"999|0|PENDING|None|spn:/elsewhere/x.tasks\n103|0|PENDING|DependencyNeverSatisfied|spn:%s\n",
		sub.Jobs[0].TasksFile, sub.Jobs[0].TasksFile, sub.Jobs[2].TasksFile)
	got, dead, err := Queue(context.Background(), f, c)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Active{
		"k02": {JobID: "101", Task: 0, State: "RUNNING", Reason: "None"},
		"k05": {JobID: "101", Task: 3, State: "PENDING", Reason: "Priority"},
	}
	if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(dead, []string{"103"}) {
		t.Errorf("Queue = %v, dead %v", got, dead)
	}
	if StateOf(p.Nodes[2], c, got) != Running || StateOf(p.Nodes[5], c, got) != Queued || StateOf(p.Nodes[3], c, got) != ToRun {
		t.Error("StateOf disagrees with the queue")
	}
}

// twoSets is a DAG of two experiments a and b: gen a, gen b → pre a, pre b
// → trains of each → a select of each → tab over the selects. With
// oneDataset, a and b share one dataset: gen a is gen b (two precomputes
// of one dataset, for two kmax).
func twoSets(trainsPerSet int, oneDataset bool) *plan.Plan {
	p := &plan.Plan{}
	add := func(kind, name string, deps ...*plan.Node) *plan.Node {
		n := &plan.Node{Key: name, Kind: kind, Version: "1", Name: name,
			JSON: []byte(`{}`), Deps: deps, Index: len(p.Nodes), Status: plan.ToRun}
		p.Nodes = append(p.Nodes, n)
		return n
	}
	ga := add("generate", "gen-a")
	gb := ga
	if !oneDataset {
		gb = add("generate", "gen-b")
	}
	pa, pb := add("precompute", "pre-a", ga), add("precompute", "pre-b", gb)
	var ta, tb []*plan.Node
	for i := 0; i < trainsPerSet; i++ {
		ta = append(ta, add("train", fmt.Sprintf("train-a%d", i), ga, pa))
	}
	for i := 0; i < trainsPerSet; i++ {
		tb = append(tb, add("train", fmt.Sprintf("train-b%d", i), gb, pb))
	}
	sa, sb := add("select", "sel-a", ta...), add("select", "sel-b", tb...)
	add("tabulate", "tab", sa, sb)
	return p
}

// TestGroupBySources: the stages of two datasets go to separate jobs at
// every level, up to the table that reads both.
func TestGroupBySources(t *testing.T) {
	want := []string{
		"generate L0 [gen-a]", "generate L0 [gen-b]", "precompute L1 [pre-a]", "precompute L1 [pre-b]",
		"train L2 [train-a0 train-a1]", "train L2 [train-b0 train-b1]", "select L3 [sel-a]", "select L3 [sel-b]",
		"tabulate L4 [tab]"}
	if got := shape(Group(twoSets(2, false).Nodes, cfg("array", 1000, 1))); !reflect.DeepEqual(got, want) {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

// TestGroupManyDatasets: beyond MaxDatasetGroups datasets, datasets share
// groups round-robin, a dataset's stages in the same slot at every level.
func TestGroupManyDatasets(t *testing.T) {
	p := &plan.Plan{}
	n := MaxDatasetGroups + 2
	for i := 0; i < n; i++ {
		g := &plan.Node{Key: fmt.Sprintf("gen%02d", i), Kind: "generate", Index: len(p.Nodes)}
		p.Nodes = append(p.Nodes, g)
		p.Nodes = append(p.Nodes, &plan.Node{Key: fmt.Sprintf("train%02d", i), Kind: "train", Deps: []*plan.Node{g}, Index: len(p.Nodes)})
	}
	jobs := Group(p.Nodes, cfg("array", 1000, 1))
	got := shape(jobs)
	if len(jobs) != 2*MaxDatasetGroups || got[0] != fmt.Sprintf("generate L0 [gen00 gen%02d]", MaxDatasetGroups) ||
		got[1] != fmt.Sprintf("generate L0 [gen01 gen%02d]", MaxDatasetGroups+1) || got[2] != "generate L0 [gen02]" ||
		got[MaxDatasetGroups] != fmt.Sprintf("train L1 [train00 train%02d]", MaxDatasetGroups) {
		t.Errorf("groups %q", got)
	}
}

// TestDependency: a job waits with afterok only for the input tasks that
// every one of its stages needs whole, with afterany for the others (so a
// failure stops only its dependents); it names single array tasks when it
// needs some of an upstream job's tasks, the whole job when it needs all of
// them or more than MaxTaskDeps. The experiments a and b share a dataset,
// so their stages share job arrays.
func TestDependency(t *testing.T) {
	setup := []string{"gen-a", "pre-a", "pre-b", "sel-b"} // cached
	for _, tc := range []struct {
		name   string
		p      *plan.Plan
		cfg    schema.Slurm
		active map[string]Active
		cached []string
		want   []string // job: dependency
	}{
		{"arrays", twoSets(2, true), cfg("array", 1000, 1), nil, nil, []string{
			"generate L0 [gen-a]: ",
			"precompute L1 [pre-a pre-b]: afterok:dry-0",
			// Every train needs gen; each precompute task is needed by
			// half of them.
			"train L2 [train-a0 train-a1 train-b0 train-b1]: afterok:dry-0,afterany:dry-1",
			// sel-a needs the a trains, sel-b the b trains.
			"select L3 [sel-a sel-b]: afterany:dry-2",
			// tab needs both selects: afterok.
			"tabulate L4 [tab]: afterok:dry-3"}},
		{"arrays of 2 tasks", twoSets(2, true), cfg("array", 2, 1), nil, nil, []string{
			"generate L0 [gen-a]: ",
			"precompute L1 [pre-a pre-b]: afterok:dry-0",
			// An array of a's trains waits for a's precompute task
			// alone, with afterok: each of its stages needs it.
			"train L2 [train-a0 train-a1]: afterok:dry-0:dry-1_0",
			"train L2 [train-b0 train-b1]: afterok:dry-0:dry-1_1",
			"select L3 [sel-a sel-b]: afterany:dry-2:dry-3",
			"tabulate L4 [tab]: afterok:dry-4"}},
		{"bundles", twoSets(2, true), cfg("array", 1000, 2), nil, nil, []string{
			"generate L0 [gen-a]: ",
			"precompute L1 [pre-a pre-b]: afterok:dry-0",
			"train L2 [train-a0+train-a1 train-b0+train-b1]: afterok:dry-0,afterany:dry-1",
			"select L3 [sel-a sel-b]: afterany:dry-2",
			"tabulate L4 [tab]: afterok:dry-3"}},
		{"one job per stage", twoSets(1, true), cfg("stage", 1000, 1), nil, nil, []string{
			"generate L0 [gen-a]: ",
			"precompute L1 [pre-a]: afterok:dry-0", "precompute L1 [pre-b]: afterok:dry-0",
			"train L2 [train-a0]: afterok:dry-0:dry-1", "train L2 [train-b0]: afterok:dry-0:dry-2",
			"select L3 [sel-a]: afterok:dry-3", "select L3 [sel-b]: afterok:dry-4",
			"tabulate L4 [tab]: afterok:dry-5:dry-6"}},
		// Inputs in queued arrays: their single tasks, by the same rule;
		// a task that holds a stage some do not need is afterany.
		{"queued inputs", twoSets(1, true), cfg("array", 1000, 1), map[string]Active{
			"gen-a": {JobID: "7", Task: 0}, "pre-a": {JobID: "8", Task: 0}, "pre-b": {JobID: "8", Task: 0}}, nil, []string{
			"train L0 [train-a0 train-b0]: afterok:7_0,afterany:8_0",
			"select L1 [sel-a sel-b]: afterany:dry-0",
			"tabulate L2 [tab]: afterok:dry-1"}},
		// MaxTaskDeps tasks of one upstream job are named one by one;
		// more are the whole job.
		{"at most MaxTaskDeps tasks", twoSets(MaxTaskDeps, true), cfg("array", 1000, 1), queuedTrains(MaxTaskDeps), setup, []string{
			"select L0 [sel-a]: afterok:" + taskList("9", 0, MaxTaskDeps),
			"tabulate L1 [tab]: afterok:dry-0"}},
		{"more than MaxTaskDeps tasks", twoSets(MaxTaskDeps+1, true), cfg("array", 1000, 1), queuedTrains(MaxTaskDeps + 1), setup, []string{
			"select L0 [sel-a]: afterany:9",
			"tabulate L1 [tab]: afterok:dry-0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := cache.Open(t.TempDir())
			for _, n := range tc.p.Nodes {
				if slices.Contains(tc.cached, n.Key) {
					n.Status = plan.Cached
				}
			}
			sub, err := Submit(context.Background(), tc.p, c, tc.active, Options{Config: tc.cfg, Binary: "spn", DryRun: true})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for i, j := range sub.Jobs {
				s := shape([]*Job{j})[0]
				if j.Stages() > 8 {
					s = fmt.Sprintf("%s L%d [%d stages]", j.Kind, j.Level, j.Stages())
				}
				got = append(got, s+": "+j.Dependency)
				dep := ""
				if j.Dependency != "" {
					dep = "--dependency=" + j.Dependency
				}
				if has := slices.Contains(j.Args, dep); dep != "" && !has {
					t.Errorf("job %d's sbatch arguments lack %s: %q", i, dep, j.Args)
				}
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

// queuedTrains puts twoSets' trains in the tasks of one queued array, job
// 9: a's first.
func queuedTrains(perSet int) map[string]Active {
	m := map[string]Active{}
	for i := 0; i < perSet; i++ {
		m[fmt.Sprintf("train-a%d", i)] = Active{JobID: "9", Task: i}
		m[fmt.Sprintf("train-b%d", i)] = Active{JobID: "9", Task: perSet + i}
	}
	return m
}

// taskList is "job_from:job_from+1:…" for n tasks.
func taskList(job string, from, n int) string {
	var l []string
	for i := from; i < from+n; i++ {
		l = append(l, fmt.Sprintf("%s_%d", job, i))
	}
	return strings.Join(l, ":")
}

// A dry run writes nothing and calls no sbatch.
func TestSubmitDryRun(t *testing.T) {
	root := t.TempDir()
	c, _ := cache.Open(root)
	f := &fakeSlurm{}
	sub, err := Submit(context.Background(), testPlan(), c, nil, Options{Config: cfg("array", 1000, 1),
		Binary: "spn", DryRun: true, Runner: f})
	if err != nil || len(sub.Jobs) != 7 || len(f.calls) != 0 {
		t.Fatalf("dry run: %v, %d jobs, %d calls", err, len(sub.Jobs), len(f.calls))
	}
	if ents, _ := os.ReadDir(filepath.Join(root, "slurm")); len(ents) != 0 {
		t.Error("dry run wrote job files")
	}
}

// Outcome names every stage that did not complete once: failures with
// their error, dependents as skipped with the root cause.
func TestOutcome(t *testing.T) {
	c, _ := cache.Open(t.TempDir())
	p := testPlan()
	for _, n := range p.Nodes[:5] {
		n.Status = plan.Cached
	}
	if err := c.RecordFailure(cache.Failure{Key: "k05", Kind: "train", Name: "train 3", Error: "boom"}); err != nil {
		t.Fatal(err)
	}
	got := Outcome(p, c)
	want := []string{
		"failed train 3: boom",
		"not run train 4: its job ended without a result (cancelled, timed out or killed; see the job logs)",
		"skipped sel: input train 3 failed",
		"skipped final 0: input sel was skipped (train 3 failed)",
		"skipped final 1: input sel was skipped (train 3 failed)",
		"skipped eval: input final 0 was skipped (train 3 failed)",
		"skipped tab: input eval was skipped (train 3 failed)",
	}
	// Without the failure: the stage that did not run, then its dependents.
	defer func() {
		if err := c.ClearFailure("k05"); err != nil {
			t.Fatal(err)
		}
		got := Outcome(p, c)
		if len(got) != 7 || !strings.HasPrefix(got[0], "not run train 3:") ||
			got[2] != "skipped sel: input train 3 did not run" ||
			got[6] != "skipped tab: input eval was skipped (train 3 did not run)" {
			t.Errorf("Outcome without failure:\n%s", strings.Join(got, "\n"))
		}
	}()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Outcome:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestShellQuote(t *testing.T) {
	for in, want := range map[string]string{
		"/a/b-c_d.e": "/a/b-c_d.e", "a b": "'a b'", "it's": `'it'\''s'`, "": "''", "$HOME": "'$HOME'",
	} {
		if got := shellQuote(in); got != want {
			t.Errorf("shellQuote(%q) = %s, want %s", in, got, want)
		}
	}
}

// TestAutoTime: a job's estimated limit is its longest task's stages
// summed, × AutoTimeFactor + AutoTimeSlack, in whole minutes, scaled up
// when a task has fewer CPUs than the calibration's threads; a stage
// without an estimate or an estimate beyond any limit is an error.
func TestAutoTime(t *testing.T) {
	n := func(key string) *plan.Node { return &plan.Node{Key: key, Name: "stage " + key} }
	e := &Estimates{Seconds: map[string]float64{"a": 1000, "b": 2600, "c": 30, "z": 0, "huge": 1e12}, Threads: 2, Source: "cal.json"}
	for _, c := range []struct {
		tasks [][]*plan.Node
		cpus  int
		want  string
	}{
		// 2 × (1000 + 2600) s + 600 s = 7800 s = 130 min.
		{[][]*plan.Node{{n("a"), n("b")}, {n("c")}}, 2, "0-02:10:00"},
		// One CPU for a 2-thread calibration: 2 × 3600 × 2 + 600 s = 250 min.
		{[][]*plan.Node{{n("c")}, {n("a"), n("b")}}, 1, "0-04:10:00"},
		// More CPUs than the calibration's threads: not scaled down.
		{[][]*plan.Node{{n("b")}}, 8, "0-01:37:00"}, // 5800 s = 96.7 min
		{[][]*plan.Node{{n("z")}}, 1, "0-00:10:00"},
		{[][]*plan.Node{{n("b"), n("b"), n("b"), n("b"), n("b"), n("b"), n("b"), n("b"), n("b"), n("b"), n("b"), n("b"), n("b"), n("b"), n("b"), n("b"), n("b")}}, 2, "1-00:44:00"}, // 17 × 2600 × 2 + 600 s = 1483.3 min
	} {
		got, err := e.AutoTime(c.tasks, c.cpus)
		if err != nil || got != c.want {
			t.Errorf("AutoTime(%v, cpus %d) = %q, %v; want %q", shape([]*Job{{Tasks: c.tasks}}), c.cpus, got, err, c.want)
		}
	}
	if _, err := e.AutoTime([][]*plan.Node{{n("a"), n("x")}}, 1); err == nil || !strings.Contains(err.Error(), "stage stage x has no estimate in cal.json") {
		t.Errorf("missing estimate: %v", err)
	}
	if _, err := e.AutoTime([][]*plan.Node{{n("huge")}}, 1); err == nil || !strings.Contains(err.Error(), "beyond any time limit") {
		t.Errorf("huge estimate: %v", err)
	}
}

// TestSubmitAutoTime: train jobs with time "auto" get their estimated
// limit on the sbatch line; without estimates, or with a stage that has
// none, nothing is submitted.
func TestSubmitAutoTime(t *testing.T) {
	c, err := cache.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	conf := cfg("array", 1000, 2)
	conf.Train.Time = schema.SlurmTimeAuto
	secs := map[string]float64{}
	for i, n := range testPlan().Nodes {
		secs[n.Key] = float64(60 * i)
	}
	f := &fakeSlurm{}
	opt := Options{Config: conf, Binary: "spn", Runner: f, Estimates: &Estimates{Seconds: secs, Threads: 2, Source: "cal.json"}}
	sub, err := Submit(context.Background(), testPlan(), c, nil, opt)
	if err != nil {
		t.Fatal(err)
	}
	// Train tasks k02+k03, k04+k05, k06 (longest 4+5 min) and k08+k09
	// (8+9 min): 2 × 9 + 10 = 28 and 2 × 17 + 10 = 44 minutes; the other
	// kinds keep theirs (none).
	var times []string
	for _, j := range sub.Jobs {
		times = append(times, j.Kind+"="+j.Time)
	}
	if got := strings.Join(times, " "); got != "generate= precompute= train=0-00:28:00 select= train=0-00:44:00 evaluate= tabulate=" {
		t.Errorf("times %s", got)
	}
	if got := strings.Join(f.calls[2], " "); !strings.Contains(got, "--time=0-00:28:00 ") {
		t.Errorf("train sbatch: %s", got)
	}
	for name, o := range map[string]Options{
		"no calibration": {Config: conf, Binary: "spn", Runner: &fakeSlurm{}},
		"no estimate":    {Config: conf, Binary: "spn", Runner: &fakeSlurm{}, Estimates: &Estimates{Seconds: map[string]float64{"k02": 1}, Source: "cal.json"}},
	} {
		sub, err := Submit(context.Background(), testPlan(), c, nil, o)
		if err == nil || sub != nil || len(o.Runner.(*fakeSlurm).calls) != 0 {
			t.Errorf("%s: submitted %v, %d sbatch calls, error %v; want an error and none", name, sub, len(o.Runner.(*fakeSlurm).calls), err)
		} else {
			t.Logf("%s: %v", name, err)
		}
	}
}
