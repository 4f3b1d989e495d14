package slurm

import (
	"context"
	"crypto/rand"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spn-project/spn/internal/atomicfile"
	"github.com/spn-project/spn/schema"
	"github.com/spn-project/spn/stages/cache"
	"github.com/spn-project/spn/stages/exec"
	"github.com/spn-project/spn/stages/plan"
)

// CommentPrefix starts the comment of every job spn submits; the rest of
// the comment is the job's tasks file.
const CommentPrefix = "spn:"

// GPUGres is the sbatch option of a job whose stages train on a GPU.
const GPUGres = "--gres=gpu:1"

// Options configure Submit.
type Options struct {
	// Config is the spec's executor.slurm settings.
	Config schema.Slurm
	// Binary is the spn executable the jobs run (on the shared filesystem).
	Binary string
	// StageArgs are extra arguments of `spn stage run` (e.g. --data-dir,
	// --mirror, --log-level), already split.
	StageArgs []string
	// Spec names the spec, for the plan files.
	Spec string
	// Hold submits the jobs held (sbatch --hold); `scontrol release`
	// starts them.
	Hold bool
	// DryRun writes nothing and calls no sbatch: Submit only returns the
	// jobs with the sbatch command lines it would run.
	DryRun bool
	// Runner runs sbatch (default Commands).
	Runner Runner
	// Estimates are the stages' estimated seconds, for the kinds whose
	// time is schema.SlurmTimeAuto (nil: none given; such a kind is then
	// an error).
	Estimates *Estimates
}

// Estimates are estimated stage durations (cost.Calibration.Seconds).
type Estimates struct {
	// Seconds of the stages that have an estimate, by key, measured with
	// Threads kernel threads.
	Seconds map[string]float64
	Threads int
	// Source names where they come from (the calibration file), for
	// messages.
	Source string
}

// The time limit of a job whose kind's time is "auto": its longest
// array task's estimate (the stages of its bundle one after the other)
// × AutoTimeFactor + AutoTimeSlack, in whole minutes. The estimate
// counts the calibration's maximum epochs (an upper bound with early
// stopping); the margin covers a slower node, a shared one and what the
// calibration did not time (start-up, reading the data and hop sets).
// A task with fewer CPUs than the calibration's threads gets its
// estimate scaled up by threads/cpus.
const (
	AutoTimeFactor = 2
	AutoTimeSlack  = 10 * time.Minute
	// maxAutoMinutes bounds an estimated limit: ten years.
	maxAutoMinutes = 10 * 365 * 24 * 60
)

// AutoTime returns the time limit of a job of tasks with cpus CPUs per
// task (see AutoTimeFactor), as sbatch --time reads it: days-hours:minutes:00.
func (e *Estimates) AutoTime(tasks [][]*plan.Node, cpus int) (string, error) {
	longest := 0.0
	for _, t := range tasks {
		s := 0.0
		for _, n := range t {
			v, ok := e.Seconds[n.Key]
			if !ok {
				return "", fmt.Errorf("stage %s has no estimate in %s (spn calibrate measures it; or set the kind's time)", n.Name, e.Source)
			}
			s += v
		}
		longest = max(longest, s)
	}
	if cpus = max(cpus, 1); cpus < e.Threads {
		longest *= float64(e.Threads) / float64(cpus)
	}
	m := math.Ceil((longest*AutoTimeFactor + AutoTimeSlack.Seconds()) / 60)
	if !(m <= maxAutoMinutes) {
		return "", fmt.Errorf("a task's estimate (%.3g s, from %s) is beyond any time limit", longest, e.Source)
	}
	mins := int64(m)
	return fmt.Sprintf("%d-%02d:%02d:00", mins/(24*60), mins/60%24, mins%60), nil
}

// Job is one submitted job (an array of Tasks).
type Job struct {
	// ID is Slurm's job id (the array's), or "dry-N" in a dry run.
	ID string
	// Name is the job name: spn-<kind>.
	Name string
	Kind string
	// Level is the DAG level of the job's stages among those submitted.
	Level int
	// Device is the device kind of the job's stages (plan.Node.Device):
	// "" for the CPU, "cuda" for a job that asks for one GPU.
	Device string
	// Tasks are the stages of each array task, in run order.
	Tasks [][]*plan.Node
	// Dependency is its sbatch --dependency value: the array tasks it
	// waits for ("" for none; see dependency).
	Dependency string
	// Dir holds the job's plan file, tasks file, batch script and logs.
	PlanFile, TasksFile, Script string
	// Time is the job's time limit (sbatch --time; "" for the cluster's
	// default): its kind's, or estimated when that is "auto".
	Time string
	// Args are sbatch's arguments.
	Args []string
}

// Stages returns how many stages the job runs.
func (j *Job) Stages() int {
	n := 0
	for _, t := range j.Tasks {
		n += len(t)
	}
	return n
}

// Submission is the result of Submit.
type Submission struct {
	// Dir is <cache>/slurm/<id>/.
	Dir  string
	Jobs []*Job
	// Stages is the number of stages submitted.
	Stages int
}

// Tasks is the number of array tasks of the submission's jobs.
func (s *Submission) Tasks() int {
	n := 0
	for _, j := range s.Jobs {
		n += len(j.Tasks)
	}
	return n
}

// Group splits the stages to run into jobs. todo is in plan order. Stages
// are grouped by DAG level (0 for stages whose inputs are all cached or
// queued, else one more than the highest level among their inputs), kind,
// device and sources (the stages without inputs that they descend from:
// the datasets they are made of); with group "array" each group becomes
// job arrays of at most MaxArray tasks of `bundle` stages each, with group
// "stage" every stage is its own job. Jobs come out in submission order (a
// job after the jobs it waits for).
//
// Grouping by sources keeps the datasets' pipelines in separate jobs, so
// that a dataset's later stages wait for its own earlier ones only (one
// array of every dataset's selections would wait for every dataset's
// trainings): the stages of a quick dataset finish while a slow one's
// still train. Beyond MaxDatasetGroups distinct sources, they share
// groups.
func Group(todo []*plan.Node, cfg schema.Slurm) []*Job {
	inTodo := make(map[string]bool, len(todo))
	for _, n := range todo {
		inTodo[n.Key] = true
	}
	level := make(map[string]int, len(todo))
	type groupKey struct {
		level  int
		kind   string
		device string
		slot   int // of the stage's sources, mod MaxDatasetGroups
	}
	src := sources{}
	slots := map[string]int{}
	var order []groupKey
	groups := map[groupKey][]*plan.Node{}
	for _, n := range todo {
		l := 0
		for _, d := range n.Deps {
			if inTodo[d.Key] {
				l = max(l, level[d.Key]+1)
			}
		}
		level[n.Key] = l
		ds := src.of(n)
		slot, ok := slots[ds]
		if !ok {
			slot = len(slots) % MaxDatasetGroups
			slots[ds] = slot
		}
		k := groupKey{l, n.Kind, n.Device(), slot}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], n)
	}
	slices.SortStableFunc(order, func(a, b groupKey) int { return a.level - b.level })
	maxArray := max(cfg.MaxArray, 1)
	var jobs []*Job
	for _, k := range order {
		nodes := groups[k]
		bundle := max(cfg.Resources(k.kind).Bundle, 1)
		if cfg.Group == schema.SlurmGroupStage {
			bundle, maxArray = 1, 1
		}
		var tasks [][]*plan.Node
		for i := 0; i < len(nodes); i += bundle {
			tasks = append(tasks, nodes[i:min(i+bundle, len(nodes))])
		}
		for i := 0; i < len(tasks); i += maxArray {
			jobs = append(jobs, &Job{Name: "spn-" + k.kind, Kind: k.kind, Level: k.level, Device: k.device,
				Tasks: tasks[i:min(i+maxArray, len(tasks))]})
		}
	}
	return jobs
}

// MaxDatasetGroups bounds the groups that one DAG level, kind and device
// splits into by sources: the i-th distinct sources met (in plan order)
// go to group i mod MaxDatasetGroups, so that a plan over many datasets
// is still a bounded number of jobs.
const MaxDatasetGroups = 16

// sources memoizes, per stage key, the keys of the stages without inputs
// that a stage descends from (itself if it has no inputs), sorted and
// joined.
type sources map[string]string

func (s sources) of(n *plan.Node) string {
	if v, ok := s[n.Key]; ok {
		return v
	}
	if len(n.Deps) == 0 {
		s[n.Key] = n.Key
		return n.Key
	}
	var keys []string
	for _, d := range n.Deps {
		keys = append(keys, strings.Split(s.of(d), " ")...)
	}
	slices.Sort(keys)
	v := strings.Join(slices.Compact(keys), " ")
	s[n.Key] = v
	return v
}

// Submit submits the stages of p that are neither cached (call p.Resolve
// first) nor in active (stage key → its queued or running job, from
// Queue). Jobs whose inputs are queued wait for those jobs too.
func Submit(ctx context.Context, p *plan.Plan, c *cache.Cache, active map[string]Active, opt Options) (*Submission, error) {
	if opt.Runner == nil {
		opt.Runner = Commands{}
	}
	if opt.Binary == "" {
		return nil, fmt.Errorf("submitting to Slurm: no spn binary given")
	}
	var todo []*plan.Node
	for _, n := range p.Nodes {
		if n.Status == plan.Cached {
			continue
		}
		if _, ok := active[n.Key]; ok {
			continue
		}
		todo = append(todo, n)
	}
	sub := &Submission{Stages: len(todo)}
	if len(todo) == 0 {
		return sub, nil
	}
	sub.Dir = filepath.Join(c.Root, "slurm", time.Now().UTC().Format("20060102-150405")+"-"+rand.Text()[:6])
	sub.Jobs = Group(todo, opt.Config)
	// Every job's time limit before any is submitted: a stage without an
	// estimate fails the submission whole.
	for _, j := range sub.Jobs {
		res := opt.Config.Resources(j.Kind)
		j.Time = res.Time
		if res.Time != schema.SlurmTimeAuto {
			continue
		}
		if opt.Estimates == nil {
			return nil, fmt.Errorf("submitting to Slurm: executor.slurm.%s.time is %q, but no calibration was given", j.Kind, schema.SlurmTimeAuto)
		}
		t, err := opt.Estimates.AutoTime(j.Tasks, res.CPUs)
		if err != nil {
			return nil, fmt.Errorf("submitting to Slurm: executor.slurm.%s.time is %q: %w", j.Kind, schema.SlurmTimeAuto, err)
		}
		j.Time = t
	}
	// The array task of every input stage: those of queued or running
	// jobs now, those of this submission as their jobs are submitted.
	idx := newTaskIndex(active)
	if !opt.DryRun {
		if err := os.MkdirAll(filepath.Join(sub.Dir, "logs"), 0o755); err != nil {
			return nil, fmt.Errorf("submitting to Slurm: %w", err)
		}
	}
	for i, j := range sub.Jobs {
		j.Dependency = idx.dependency(j)
		base := filepath.Join(sub.Dir, fmt.Sprintf("%03d-%s-L%d", i, j.Kind, j.Level))
		j.TasksFile, j.Script = base+".tasks", base+".sh"
		if err := j.prepare(base, sub.Dir, opt); err != nil {
			return sub, err
		}
		if opt.DryRun {
			j.ID = fmt.Sprintf("dry-%d", i)
			idx.add(j)
			continue
		}
		out, err := opt.Runner.Run(ctx, "sbatch", j.Args...)
		if err != nil {
			return sub, fmt.Errorf("submitting job %d of %d (%s, %d stages): %w", i+1, len(sub.Jobs), j.Name, j.Stages(), err)
		}
		id, _, _ := strings.Cut(strings.TrimSpace(string(out)), ";")
		if _, err := strconv.Atoi(id); err != nil {
			return sub, fmt.Errorf("sbatch printed %q, not a job id", strings.TrimSpace(string(out)))
		}
		j.ID = id
		idx.add(j)
	}
	return sub, nil
}

// MaxTaskDeps bounds the array tasks of one upstream job that a job's
// dependency names one by one; beyond it, the job waits for the whole
// upstream job.
const MaxTaskDeps = 64

// taskRef is one array task: its job's id and its index.
type taskRef struct {
	job  string
	task int
}

// String is the task as Slurm names it: JOB_TASK.
func (r taskRef) String() string { return r.job + "_" + strconv.Itoa(r.task) }

// taskIndex knows the array task of every stage that is queued, running
// or submitted: where a stage's input will come from.
type taskIndex struct {
	// of is the task of each stage, by key.
	of map[string]taskRef
	// members are the stages of each task.
	members map[taskRef][]string
	// size is the number of tasks of the jobs of this submission (not
	// known of queued jobs).
	size map[string]int
}

// newTaskIndex indexes the queued and running stages of active.
func newTaskIndex(active map[string]Active) *taskIndex {
	x := &taskIndex{of: map[string]taskRef{}, members: map[taskRef][]string{}, size: map[string]int{}}
	for key, a := range active {
		x.put(key, taskRef{a.JobID, a.Task})
	}
	return x
}

func (x *taskIndex) put(key string, r taskRef) {
	x.of[key] = r
	x.members[r] = append(x.members[r], key)
}

// add indexes the tasks of a submitted job (j.ID set), for the jobs after
// it.
func (x *taskIndex) add(j *Job) {
	x.size[j.ID] = len(j.Tasks)
	for i, t := range j.Tasks {
		for _, n := range t {
			x.put(n.Key, taskRef{j.ID, i})
		}
	}
}

// dependency returns the sbatch --dependency value of job j (empty when it
// waits for nothing): the array tasks that run or will run its stages'
// inputs, each named alone (JOB_TASK), or the whole job when j waits for
// all of its tasks or for more than MaxTaskDeps of them.
//
// An input task that every stage of j needs whole (every stage of j
// depends on every stage of that task) is waited for with afterok: when
// it fails, none of j's stages can run, and Slurm cancels j
// (--kill-on-invalid-dep). Any other input task is waited for with
// afterany: its failure dooms only the stages of j that need it, which
// `spn stage run` then finds missing from the cache and skips, while j's
// other stages run. So a failed stage stops only what depends on it, as in
// a local run, although a job array holds unrelated stages.
//
// j is not in x yet: its stages' inputs are all in earlier jobs.
func (x *taskIndex) dependency(j *Job) string {
	var stages []*plan.Node
	for _, t := range j.Tasks {
		stages = append(stages, t...)
	}
	// needs[key]: how many of j's stages have the stage key as an input.
	needs := map[string]int{}
	var refs []taskRef
	seen := map[taskRef]bool{}
	for _, n := range stages {
		for _, d := range n.Deps {
			r, ok := x.of[d.Key]
			if !ok {
				continue // cached
			}
			needs[d.Key]++
			if !seen[r] {
				seen[r] = true
				refs = append(refs, r)
			}
		}
	}
	critical := func(r taskRef) bool {
		for _, key := range x.members[r] {
			if needs[key] != len(stages) {
				return false
			}
		}
		return true
	}
	// Per upstream job, in the order first met: its tasks waited for
	// with afterok ([0]) and with afterany ([1]).
	var jobs []string
	byJob := map[string][2][]taskRef{}
	for _, r := range refs {
		g, ok := byJob[r.job]
		if !ok {
			jobs = append(jobs, r.job)
		}
		if critical(r) {
			g[0] = append(g[0], r)
		} else {
			g[1] = append(g[1], r)
		}
		byJob[r.job] = g
	}
	var afterOK, afterAny []string
	for _, id := range jobs {
		g := byJob[id]
		for i := range g {
			slices.SortFunc(g[i], func(a, b taskRef) int { return a.task - b.task })
		}
		n := len(g[0]) + len(g[1])
		switch {
		case len(g[1]) == 0 && n == x.size[id]:
			afterOK = append(afterOK, id)
		case n == x.size[id] || n > MaxTaskDeps:
			afterAny = append(afterAny, id)
		default:
			for _, r := range g[0] {
				afterOK = append(afterOK, r.String())
			}
			for _, r := range g[1] {
				afterAny = append(afterAny, r.String())
			}
		}
	}
	var parts []string
	if len(afterOK) > 0 {
		parts = append(parts, "afterok:"+strings.Join(afterOK, ":"))
	}
	if len(afterAny) > 0 {
		parts = append(parts, "afterany:"+strings.Join(afterAny, ":"))
	}
	return strings.Join(parts, ",")
}

// prepare writes the job's plan file, tasks file and script (unless dry
// run) and sets its sbatch arguments.
func (j *Job) prepare(base, dir string, opt Options) error {
	var nodes []*plan.Node
	var lines []string
	for _, t := range j.Tasks {
		keys := make([]string, len(t))
		for i, n := range t {
			keys[i] = n.Key
			nodes = append(nodes, n)
		}
		lines = append(lines, strings.Join(keys, " "))
	}
	pf := exec.NewPlanFile(opt.Spec, nodes)
	j.PlanFile = base + ".plan.json"
	stageCmd := []string{opt.Binary, "stage", "run", "--plan", j.PlanFile, "--tasks", j.TasksFile}
	stageCmd = append(stageCmd, opt.StageArgs...)
	gres := ""
	if j.Device == schema.DeviceCUDA {
		// Slurm shows the job its one GPU as device 0.
		stageCmd = append(stageCmd, "--device", "cuda:0")
		gres = "#SBATCH " + GPUGres + "\n"
	}
	quoted := make([]string, len(stageCmd))
	for i, a := range stageCmd {
		quoted[i] = shellQuote(a)
	}
	script := fmt.Sprintf(`#!/bin/sh
%s# spn: %d %s stages (DAG level %d) in %d array tasks; written by spn run --executor slurm.
# Each task runs the stages on its line of the tasks file, one by one.
exec %s --threads "${SLURM_CPUS_PER_TASK:-1}"
`, gres, j.Stages(), j.Kind, j.Level, len(j.Tasks), strings.Join(quoted, " "))
	if !opt.DryRun {
		b, err := jsonMarshal(pf)
		if err != nil {
			return err
		}
		for _, f := range []struct {
			path string
			data []byte
		}{
			{j.PlanFile, b},
			{j.TasksFile, []byte(strings.Join(lines, "\n") + "\n")},
			{j.Script, []byte(script)},
		} {
			if err := atomicfile.WriteFile(f.path, f.data, 0o644); err != nil {
				return err
			}
		}
		if err := os.Chmod(j.Script, 0o755); err != nil {
			return fmt.Errorf("submitting to Slurm: %w", err)
		}
	}
	cfg := opt.Config
	res := cfg.Resources(j.Kind)
	args := []string{"--parsable", "--job-name=" + j.Name, "--comment=" + CommentPrefix + j.TasksFile,
		fmt.Sprintf("--array=0-%d", len(j.Tasks)-1),
		"--cpus-per-task=" + strconv.Itoa(max(res.CPUs, 1)),
		"--output=" + filepath.Join(dir, "logs", filepath.Base(base)+"-%A_%a.out"),
		"--kill-on-invalid-dep=yes"}
	if j.Device == schema.DeviceCUDA {
		args = append(args, GPUGres)
	}
	if res.Mem != "" {
		args = append(args, "--mem="+res.Mem)
	}
	if j.Time != "" {
		args = append(args, "--time="+j.Time)
	}
	if part := cmpOr(res.Partition, cfg.Partition); part != "" {
		args = append(args, "--partition="+part)
	}
	if cfg.Account != "" {
		args = append(args, "--account="+cfg.Account)
	}
	if j.Dependency != "" {
		args = append(args, "--dependency="+j.Dependency)
	}
	if opt.Hold {
		args = append(args, "--hold")
	}
	args = append(args, cfg.Sbatch...)
	args = append(args, res.Sbatch...)
	j.Args = append(args, j.Script)
	return nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
