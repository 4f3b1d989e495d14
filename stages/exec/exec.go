// Package exec runs the stages of a plan that are not cached yet, with
// bounded parallelism, atomic artifacts and clean failure handling.
//
// Scheduling is deterministic: whenever a slot is free, the ready stage
// (all inputs complete) that comes first in plan order starts. With one job
// the stages run exactly in plan order. With Options.Cores the stages share
// the cores instead of fixed jobs × threads (package sched decides how many
// start, with how many threads, and whether their memory fits). In both, a
// stage of a stages.GPUUser kind that needs a GPU another running stage
// holds waits for it without taking a slot; the stages after it start
// meanwhile.
//
// When a stage fails, every stage depending on it (directly or not) is
// skipped with one message each. Without KeepGoing no new stage starts after
// the first failure (running stages finish); with KeepGoing independent
// stages continue. Cancelling the context stops new stages, lets running
// stages see the cancellation and removes their temp directories, so a
// later run resumes where this one stopped.
package exec

import (
	"container/heap"
	"context"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/spn-project/spn/stages"
	"github.com/spn-project/spn/stages/cache"
	"github.com/spn-project/spn/stages/plan"
	"github.com/spn-project/spn/stages/sched"
)

// Progress receives progress events. Calls come from the executor's
// goroutines; implementations must be safe for concurrent use.
type Progress interface {
	// Start is called once with the number of stages to run.
	Start(total int)
	// StageStart is called when a stage starts.
	StageStart(n *plan.Node)
	// StageProgress reports progress within a running stage.
	StageProgress(n *plan.Node, done, total int)
	// StageEnd is called when a stage ends; err is nil on success.
	StageEnd(n *plan.Node, d time.Duration, err error)
	// Finish is called once at the end.
	Finish()
}

// Options configure Run.
type Options struct {
	// Jobs is the number of stages run at once (at least 1).
	Jobs int
	// Threads is given to each stage through stages.Env (at least 1).
	Threads int
	// Cores, when positive, replaces Jobs and Threads: the run shares
	// Cores cores among its stages (package sched): up to min(ready,
	// Cores) stages at once with Cores ÷ stages threads each, a stage
	// starting later gets what is free, and idle cores go to running
	// stages that can grow (stages.Grower) from their next epoch on.
	Cores int
	// Memory, if not nil, returns the expected peak memory of a stage
	// about to start, given its finished inputs (0: negligible or
	// unknown). Used with Cores and Available, and with MemoryLimit. It is
	// called from the goroutines of the stages it is asked for, so it must
	// be safe for concurrent use.
	Memory func(n *plan.Node, inputs []stages.Input) uint64
	// MemoryLimit, when positive, is the most memory the process can have
	// (physical memory, GOMEMLIMIT, a cgroup's or ulimit's bound): a
	// stage whose expected peak (Memory) is over it fails before it
	// starts, its message naming both figures, MemoryLimitSource and
	// MemoryHint (what to do about it).
	MemoryLimit       uint64
	MemoryLimitSource string
	MemoryHint        string
	// Available, if not nil, reports the free memory (sched.MemAvailable);
	// with Cores, a stage whose expected peak does not fit waits.
	Available func() (free uint64, ok bool)
	// StagesPerGPU is how many stages a GPU takes at once (stages of a
	// stages.GPUUser; at least 1, the default): they share the GPU's
	// primary context, each with its own stream and memory. A stage that
	// fails for want of GPU memory (stages.ErrDeviceMemory) after
	// another shared its GPU runs again alone on a GPU before it counts
	// as failed.
	StagesPerGPU int
	// KeepGoing keeps starting independent stages after a failure.
	KeepGoing bool
	// Env is passed to every stage (Threads is overwritten).
	Env stages.Env
	// Log receives diagnostics; nil means no logging.
	Log hclog.Logger
	// Progress, if not nil, receives progress events.
	Progress Progress
	// Message, if not nil, receives each failure/skip message (one line,
	// no trailing newline) as it happens; otherwise they go to Log.
	Message func(string)
	// SPNVersion is recorded in every record.json.
	SPNVersion string
	// Lock tunes the per-stage locks (see cache.LockStage).
	Lock cache.StageLockOptions
	// Select, if not nil, restricts the run to the nodes it returns true
	// for; other uncached nodes are left alone (and selected nodes that
	// depend on them are not started).
	Select func(n *plan.Node) bool
}

// Failure is a stage that failed.
type Failure struct {
	Node *plan.Node
	Err  error
}

// Result summarises a run.
type Result struct {
	// Ran are the stages that completed, in completion order.
	Ran []*plan.Node
	// Failed are the stages that failed.
	Failed []Failure
	// Skipped are the stages skipped because an input failed, in plan order
	// of the moment they were skipped.
	Skipped []*plan.Node
	// NotStarted counts stages not started because the run stopped early.
	NotStarted int
	// Interrupted is true when the context was cancelled.
	Interrupted bool
	// Messages are the failure, skip and stop messages, in order.
	Messages []string
}

// OK reports whether every stage to run completed.
func (r *Result) OK() bool {
	return len(r.Failed) == 0 && len(r.Skipped) == 0 && r.NotStarted == 0 && !r.Interrupted
}

type state int

const (
	pending state = iota
	running
	done
	failed
	skipped
	excluded
)

type event struct {
	n   *plan.Node
	d   time.Duration
	err error
}

type runner struct {
	c     *cache.Cache
	reg   *stages.Registry
	opt   Options
	log   hclog.Logger
	res   *Result
	state []state
	cause []string // root failure name of skipped nodes
	// waiting counts each node's inputs not yet done; dependents lists the
	// nodes using each node; ready holds the runnable pending nodes.
	waiting    []int
	dependents [][]int
	ready      readyQueue
	// sch decides what starts (shared: Options.Cores, else fixed jobs);
	// slots are the running stages' shares by node index.
	sch       *sched.Scheduler
	shared    bool
	slots     map[int]*sched.Slot
	lastHeld  int    // node last reported as waiting for memory (-1: none)
	lastSplit string // the threads of the running stages last logged
	// beside marks the running GPU stages that have had another stage
	// on their GPU (Options.StagesPerGPU); alone the stages that ran out
	// of GPU memory beside others and run again alone on a GPU.
	beside map[int]bool
	alone  map[int]bool
}

// Run executes the nodes of p whose Status is not plan.Cached (call
// p.Resolve first), in dependency order. Run first removes the temp
// directories of dead writers (cache.CleanTemp). The returned
// error is for problems of the engine itself (cache unusable, context
// cancelled); stage failures are in the Result.
//
// Every stage runs under its per-stage lock (RunNode), the same scheme
// Slurm jobs use, so Run may share the cache with other spn processes and
// Slurm jobs: a stage another writer is running is waited for, not run
// twice.
func Run(ctx context.Context, p *plan.Plan, c *cache.Cache, reg *stages.Registry, opt Options) (*Result, error) {
	if opt.Jobs < 1 {
		opt.Jobs = 1
	}
	if opt.Threads < 1 {
		opt.Threads = 1
	}
	log := opt.Log
	if log == nil {
		log = hclog.NewNullLogger()
	}
	r := &runner{c: c, reg: reg, opt: opt, log: log, res: &Result{},
		state: make([]state, len(p.Nodes)), cause: make([]string, len(p.Nodes))}
	if n, err := c.CleanTemp(); err != nil {
		return r.res, err
	} else if n > 0 {
		log.Info("removed stale temp dirs of an interrupted run", "count", n)
	}
	total := 0
	for i, n := range p.Nodes {
		if n.Index != i {
			return r.res, fmt.Errorf("running plan: node %s has index %d at position %d", n.Name, n.Index, i)
		}
		switch {
		case n.Status == plan.Cached:
			r.state[i] = done
		case opt.Select != nil && !opt.Select(n):
			r.state[i] = excluded
		default:
			total++
		}
	}
	r.initReady(p)
	r.slots, r.lastHeld = map[int]*sched.Slot{}, -1
	r.beside, r.alone = map[int]bool{}, map[int]bool{}
	if r.shared = opt.Cores > 0; r.shared {
		r.sch = sched.New(opt.Cores, opt.Available)
	} else {
		r.sch = sched.Fixed(opt.Jobs, opt.Threads)
	}
	r.sch.SetStagesPerGPU(opt.StagesPerGPU)
	if opt.Progress != nil {
		opt.Progress.Start(total)
		defer opt.Progress.Finish()
	}
	events := make(chan event)
	inFlight := 0
	stopped := false
	for {
		if ctx.Err() != nil {
			r.res.Interrupted = true
		}
		if !r.res.Interrupted && !stopped {
			inFlight += r.start(ctx, p, events)
		}
		if inFlight == 0 {
			break
		}
		var ev event
		select {
		case ev = <-events:
		case <-ctx.Done():
			r.res.Interrupted = true
			ev = <-events
		}
		inFlight--
		shared := r.beside[ev.n.Index]
		for _, i := range r.sch.Finish(r.slots[ev.n.Index]) {
			heap.Push(&r.ready, i) // parked for the GPU ev.n held
		}
		delete(r.slots, ev.n.Index)
		delete(r.beside, ev.n.Index)
		if ev.err != nil && ctx.Err() == nil && shared && errors.Is(ev.err, stages.ErrDeviceMemory) && !r.alone[ev.n.Index] {
			// Out of GPU memory beside other stages: again, alone on a GPU.
			r.alone[ev.n.Index] = true
			r.state[ev.n.Index] = pending
			heap.Push(&r.ready, ev.n.Index)
			r.log.Warn("stage ran out of GPU memory beside other stages; running it again alone on a GPU", "stage", ev.n.Name, "error", ev.err)
			continue
		}
		if opt.Progress != nil {
			opt.Progress.StageEnd(ev.n, ev.d, ev.err)
		}
		if ev.err == nil {
			r.finished(ev.n.Index)
			r.res.Ran = append(r.res.Ran, ev.n)
			r.log.Debug("stage done", "stage", ev.n.Name, "seconds", ev.d.Seconds())
			continue
		}
		if ctx.Err() != nil {
			// Stopped by the cancellation: not a failure; it reruns next time.
			r.state[ev.n.Index] = pending
			r.res.Interrupted = true
			continue
		}
		r.state[ev.n.Index] = failed
		r.res.Failed = append(r.res.Failed, Failure{Node: ev.n, Err: ev.err})
		r.message(fmt.Sprintf("failed %s: %v", ev.n.Name, ev.err))
		r.skipDependents(p)
		if !opt.KeepGoing {
			stopped = true
		}
	}
	if r.res.Interrupted {
		return r.res, fmt.Errorf("run interrupted: %w", context.Cause(ctx))
	}
	for i := range p.Nodes {
		if r.state[i] == pending {
			r.res.NotStarted++
		}
	}
	switch {
	case r.res.NotStarted > 0 && len(r.res.Failed) == 0:
		r.message(fmt.Sprintf("%d stages not started: their inputs are not selected to run", r.res.NotStarted))
	case r.res.NotStarted > 0:
		r.message(fmt.Sprintf("stopped after the first failure: %d independent stages not started (--keep-going runs them)", r.res.NotStarted))
	}
	return r.res, nil
}

func (r *runner) message(m string) {
	r.res.Messages = append(r.res.Messages, m)
	if r.opt.Message != nil {
		r.opt.Message(m)
	} else {
		r.log.Error(m)
	}
}

// readyQueue is a min-heap of node indices: the ready node first in plan
// order comes out first.
type readyQueue []int

func (q readyQueue) Len() int           { return len(q) }
func (q readyQueue) Less(i, j int) bool { return q[i] < q[j] }
func (q readyQueue) Swap(i, j int)      { q[i], q[j] = q[j], q[i] }
func (q *readyQueue) Push(x any)        { *q = append(*q, x.(int)) }
func (q *readyQueue) Pop() any {
	old := *q
	x := old[len(old)-1]
	*q = old[:len(old)-1]
	return x
}

// initReady counts each node's unfinished inputs and queues the pending
// nodes that have none.
func (r *runner) initReady(p *plan.Plan) {
	r.waiting = make([]int, len(p.Nodes))
	r.dependents = make([][]int, len(p.Nodes))
	for i, n := range p.Nodes {
		for _, d := range n.Deps {
			r.dependents[d.Index] = append(r.dependents[d.Index], i)
			if r.state[d.Index] != done {
				r.waiting[i]++
			}
		}
		if r.state[i] == pending && r.waiting[i] == 0 {
			heap.Push(&r.ready, i)
		}
	}
}

// finished marks node i done and queues the dependents it unblocks.
func (r *runner) finished(i int) {
	r.state[i] = done
	for _, j := range r.dependents[i] {
		r.waiting[j]--
		if r.waiting[j] == 0 && r.state[j] == pending {
			heap.Push(&r.ready, j)
		}
	}
}

// nextReady returns the first pending node, in plan order, whose inputs are
// all done.
func (r *runner) nextReady(p *plan.Plan) *plan.Node {
	for r.ready.Len() > 0 {
		i := heap.Pop(&r.ready).(int)
		if r.state[i] == pending {
			return p.Nodes[i]
		}
	}
	return nil
}

// skipDependents marks every pending node with a failed or skipped input as
// skipped, in plan order (inputs come first, so one pass suffices).
func (r *runner) skipDependents(p *plan.Plan) {
	for i, n := range p.Nodes {
		if r.state[i] != pending {
			continue
		}
		for _, d := range n.Deps {
			switch r.state[d.Index] {
			case failed:
				r.state[i] = skipped
				r.cause[i] = d.Name
				r.res.Skipped = append(r.res.Skipped, n)
				r.message(fmt.Sprintf("skipped %s: input %s failed", n.Name, d.Name))
			case skipped:
				r.state[i] = skipped
				r.cause[i] = r.cause[d.Index]
				r.res.Skipped = append(r.res.Skipped, n)
				r.message(fmt.Sprintf("skipped %s: input %s was skipped (%s failed)", n.Name, d.Name, r.cause[d.Index]))
			default:
				continue
			}
			break
		}
	}
}

// SeedOf is the seed a stage with the given key receives: the first 8
// bytes of the key, big-endian.
func SeedOf(key string) uint64 {
	b, err := hex.DecodeString(key)
	if err != nil || len(b) < 8 {
		var s uint64
		for i := 0; i < len(key); i++ {
			s = s*131 + uint64(key[i])
		}
		return s
	}
	return binary.BigEndian.Uint64(b[:8])
}

// launch marks n running and runs it in a goroutine that reports its
// end on events.
func (r *runner) launch(ctx context.Context, n *plan.Node, threads int, threadsNow func() int, gpu int, events chan<- event) {
	r.state[n.Index] = running
	if r.opt.Progress != nil {
		r.opt.Progress.StageStart(n)
	}
	go func() {
		start := time.Now()
		err := r.runStage(ctx, n, threads, threadsNow, gpu)
		events <- event{n: n, d: time.Since(start), err: err}
	}()
}

// runStage runs n with threads threads on GPU gpu (-1: none);
// threadsNow, if not nil, is how many it may use from now on
// (stages.Env.ThreadsNow).
func (r *runner) runStage(ctx context.Context, n *plan.Node, threads int, threadsNow func() int, gpu int) error {
	var progress func(done, total int)
	if r.opt.Progress != nil {
		pr := r.opt.Progress
		progress = func(done, total int) { pr.StageProgress(n, done, total) }
	}
	if r.opt.MemoryLimit > 0 && r.opt.Memory != nil {
		if need := r.opt.Memory(n, plan.Inputs(r.c, n)); need > r.opt.MemoryLimit {
			return fmt.Errorf("%s: expected peak memory %d MiB is over the %d MiB this process can have (%s); not started%s",
				n.Name, need>>20, r.opt.MemoryLimit>>20, r.opt.MemoryLimitSource, r.opt.MemoryHint)
		}
	}
	env := r.opt.Env
	env.ThreadsNow = threadsNow
	_, err := RunNode(ctx, r.c, r.reg, n, NodeOptions{
		Env: env, Threads: threads, Log: r.log, SPNVersion: r.opt.SPNVersion,
		Progress: progress, Lock: r.opt.Lock, GPU: gpu,
	})
	return err
}

// start starts the ready stages the scheduler admits, each on its share
// of the cores (fixed jobs: Options.Threads), gives idle cores to running
// stages when none is waiting (shared cores), logs what changed, and
// returns how many stages it started.
func (r *runner) start(ctx context.Context, p *plan.Plan, events chan<- event) int {
	ready := func(yield func(sched.Request) bool) {
		for {
			n := r.nextReady(p)
			if n == nil || !yield(r.request(n)) {
				return
			}
		}
	}
	slots, parked, held := r.sch.Start(ready)
	if held != nil {
		heap.Push(&r.ready, held.ID)
		if held.ID != r.lastHeld {
			r.lastHeld = held.ID
			r.log.Info("stage waits for memory", "stage", p.Nodes[held.ID].Name,
				"expected_peak_mib", held.Need>>20, "free_mib", held.Free>>20)
		}
	}
	for _, q := range parked {
		r.log.Info("stage waits for a GPU", "stage", p.Nodes[q.ID].Name, "devices", gpuNames(q.GPUs))
	}
	for _, sl := range slots {
		n := p.Nodes[sl.ID]
		if sl.GPU >= 0 {
			for i, other := range r.slots {
				if other.GPU == sl.GPU {
					r.beside[i], r.beside[n.Index] = true, true
				}
			}
		}
		r.slots[n.Index] = sl
		var now func() int
		if r.shared && r.grows(n) {
			now = sl.Threads
		}
		r.launch(ctx, n, sl.Threads(), now, sl.GPU, events)
	}
	if !r.shared {
		return len(slots)
	}
	var grown []*sched.Slot
	if held == nil {
		grown = r.sch.Grow()
	}
	// One line whenever the split changes (a stage replacing one with the
	// same threads changes nothing).
	if split := r.threadSplit(p); (len(slots) > 0 || len(grown) > 0) && split != r.lastSplit {
		r.lastSplit = split
		r.log.Info("sharing the cores", "running", r.sch.Running(), "threads", split,
			"cores", r.sch.Cores(), "started", len(slots), "grown", len(grown))
	}
	return len(slots)
}

// request is what n asks of the scheduler.
func (r *runner) request(n *plan.Node) sched.Request {
	q := sched.Request{ID: n.Index, Mem: r.memory(n), Grows: r.grows(n), Alone: r.alone[n.Index]}
	if k, ok := r.reg.Get(n.Kind); ok {
		if g, ok := k.(stages.GPUUser); ok {
			q.GPUs, q.UsesGPU = g.StageGPU(n.JSON)
		}
	}
	return q
}

// gpuNames lists GPU ordinals as devices, "cuda:0,cuda:1".
func gpuNames(gpus []int) string {
	names := make([]string, len(gpus))
	for i, g := range gpus {
		names[i] = fmt.Sprintf("cuda:%d", g)
	}
	return strings.Join(names, ",")
}

// threadSplit lists the running stages' threads in plan order, e.g. "2+1+1".
func (r *runner) threadSplit(p *plan.Plan) string {
	var b strings.Builder
	for i := range p.Nodes {
		if sl, ok := r.slots[i]; ok {
			if b.Len() > 0 {
				b.WriteByte('+')
			}
			b.WriteString(strconv.Itoa(sl.Threads()))
		}
	}
	return b.String()
}

// grows reports whether n's kind takes more threads while it runs.
func (r *runner) grows(n *plan.Node) bool {
	k, ok := r.reg.Get(n.Kind)
	if !ok {
		return false
	}
	g, ok := k.(stages.Grower)
	return ok && g.GrowsThreads()
}

// memory is n's expected peak memory (Options.Memory), 0 without one.
func (r *runner) memory(n *plan.Node) uint64 {
	if !r.shared || r.opt.Memory == nil || r.opt.Available == nil {
		return 0
	}
	return r.opt.Memory(n, plan.Inputs(r.c, n))
}

// NodeOptions configure RunNode.
type NodeOptions struct {
	// Env is passed to the stage, with Threads.
	Env     stages.Env
	Threads int
	// Log receives diagnostics (nil: none).
	Log hclog.Logger
	// SPNVersion is recorded in record.json.
	SPNVersion string
	// Progress, if not nil, receives the stage's own progress.
	Progress func(done, total int)
	// Lock tunes the per-stage lock.
	Lock cache.StageLockOptions
	// GPU is the GPU the scheduler gave the stage (sched.Slot.GPU); a
	// value its kind does not name for it (stages.GPUUser), as -1, runs
	// it on the first GPU the kind names.
	GPU int
}

// RunNode runs one stage under its per-stage lock (cache.LockStage): it
// waits while another writer (goroutine, process or Slurm job) runs the
// same stage, and does nothing when the stage is complete once it holds
// the lock. The artifacts are written into a temp directory and committed
// atomically. A failure (not a cancellation) is recorded in the cache
// (cache.RecordFailure) and cleared by a later success. ran reports
// whether this call ran the stage.
func RunNode(ctx context.Context, c *cache.Cache, reg *stages.Registry, n *plan.Node, opt NodeOptions) (ran bool, err error) {
	log := opt.Log
	if log == nil {
		log = hclog.NewNullLogger()
		opt.Log = log
	}
	if opt.Threads < 1 {
		opt.Threads = 1
	}
	kind, ok := reg.Get(n.Kind)
	if !ok {
		return false, fmt.Errorf("no stage kind %q is registered", n.Kind)
	}
	if v := stages.VersionOf(kind, n.JSON); v != n.Version {
		return false, fmt.Errorf("plan was built for %s version %s, registry has %s", n.Kind, n.Version, v)
	}
	lopt := opt.Lock
	if lopt.OnWait == nil {
		lopt.OnWait = func(h cache.LockInfo) {
			log.Info("waiting: another writer runs this stage", "stage", n.Name, "host", h.Host, "pid", h.PID, "job", h.Job)
		}
	}
	lk, err := c.LockStage(ctx, n.Key, lopt)
	if err != nil {
		return false, err
	}
	defer lk.Unlock()
	if has, err := c.Has(n.Kind, n.Key); err != nil {
		return false, err
	} else if has {
		log.Debug("stage completed by another writer", "stage", n.Name)
		return false, nil
	}
	err = runLocked(ctx, c, reg, kind, n, opt)
	if err != nil && ctx.Err() == nil {
		if ferr := c.RecordFailure(cache.Failure{Key: n.Key, Kind: n.Kind, Name: n.Name,
			Error: err.Error(), Time: time.Now().UTC()}); ferr != nil {
			log.Warn("failure not recorded", "stage", n.Name, "error", ferr)
		}
	}
	if err != nil {
		return false, err
	}
	if cerr := c.ClearFailure(n.Key); cerr != nil {
		log.Warn("old failure record not cleared", "stage", n.Name, "error", cerr)
	}
	return true, nil
}

// runLocked runs and commits the stage, logging to opt.Log (not nil); the
// caller holds its lock.
func runLocked(ctx context.Context, c *cache.Cache, reg *stages.Registry, kind stages.Kind, n *plan.Node, opt NodeOptions) error {
	log := opt.Log
	tmp, err := c.NewTemp(n.Key)
	if err != nil {
		return err
	}
	committed := false
	defer func() {
		if !committed {
			os.RemoveAll(tmp)
		}
	}()
	recIn := make([]cache.Input, len(n.Deps))
	for i, d := range n.Deps {
		recIn[i] = cache.Input{Kind: d.Kind, Key: d.Key, Name: d.Name}
	}
	env := opt.Env
	env.Threads = opt.Threads
	env.GPU = stageGPU(kind, n.JSON, opt.GPU)
	// The stage runs as what it stands for (plan.Bind): its parameters,
	// its inputs, its seed.
	r, err := plan.Bind(reg, c, n)
	if err != nil {
		return err
	}
	boundKey := r.BoundKey
	job := &stages.Job{
		Key: n.Key, Name: n.Name, Params: r.Params, Inputs: r.Inputs, Dir: tmp,
		Seed: SeedOf(r.SeedKey), Env: env,
		Log: log.Named(n.Kind).With("stage", n.Name), Progress: opt.Progress,
	}
	log.Debug("stage start", "stage", n.Name, "key", n.ShortKey())
	start := time.Now()
	var reused string
	if boundKey != "" {
		if reused, err = reuse(c, n, boundKey, tmp, log); err != nil {
			return err
		}
	}
	if reused == "" {
		if err := runKind(ctx, kind, job); err != nil {
			return err
		}
	}
	end := time.Now()
	threads := env.Threads
	if env.ThreadsNow != nil {
		threads = max(threads, env.ThreadsNow())
	}
	rec := &cache.Record{
		Key: n.Key, Kind: n.Kind, Version: n.Version, Name: n.Name, Params: n.JSON,
		Inputs: recIn, BoundKey: boundKey, ReusedFrom: reused, Seed: job.Seed, Threads: threads,
		Start: start.UTC(), End: end.UTC(), Seconds: end.Sub(start).Seconds(),
		SPNVersion: opt.SPNVersion, GoVersion: runtime.Version(),
		GOOS: runtime.GOOS, GOARCH: runtime.GOARCH,
	}
	if err := c.Commit(tmp, rec); err != nil {
		return err
	}
	committed = true
	if boundKey != "" {
		if err := c.SetBound(n.Kind, boundKey, n.Key); err != nil {
			log.Warn("cache index not updated", "stage", n.Name, "error", err)
		}
	}
	if n.VKey != "" {
		if err := c.SetLast(n.Kind, n.VKey, n.Key, n.Version); err != nil {
			log.Warn("cache index not updated", "stage", n.Name, "error", err)
		}
	}
	return nil
}

// reuse copies into tmp the artifacts of an earlier stage of n's kind
// that stood for the same stage boundKey (cache.BoundStage): the bytes n's run
// would write, since its parameters, inputs and seed are that stage's.
// It returns that stage's key, or "" when there is none complete or the
// copy fails (n then runs in the emptied tmp).
func reuse(c *cache.Cache, n *plan.Node, boundKey, tmp string, log hclog.Logger) (string, error) {
	prev, ok, err := c.BoundStage(n.Kind, boundKey, n.Key)
	if err != nil || !ok {
		return "", nil
	}
	err = os.CopyFS(tmp, os.DirFS(c.StageDir(n.Kind, prev)))
	if err == nil {
		err = os.Remove(filepath.Join(tmp, stages.FileRecord))
	}
	if err != nil {
		log.Warn("not reusing an earlier stage's artifacts", "stage", n.Name, "from", prev[:12], "error", err)
		if rerr := os.RemoveAll(tmp); rerr != nil {
			return "", fmt.Errorf("%s: emptying %s: %w", n.Name, tmp, rerr)
		}
		if rerr := os.Mkdir(tmp, 0o755); rerr != nil {
			return "", fmt.Errorf("%s: %w", n.Name, rerr)
		}
		return "", nil
	}
	log.Info("reused the artifacts of an earlier stage bound to the same training", "stage", n.Name, "from", prev[:12])
	return prev, nil
}

// stageGPU returns the GPU a stage of kind with params runs on: given
// when the kind names it for the stage (stages.GPUUser), else the first
// it names; -1 for a stage that needs none.
func stageGPU(kind stages.Kind, params json.RawMessage, given int) int {
	g, ok := kind.(stages.GPUUser)
	if !ok {
		return -1
	}
	gpus, ok := g.StageGPU(params)
	switch {
	case !ok || len(gpus) == 0:
		return -1
	case slices.Contains(gpus, given):
		return given
	}
	return gpus[0]
}

// runKind runs the stage, turning a panic into an error so one broken stage
// cannot take the whole run (and its temp dirs) down.
func runKind(ctx context.Context, k stages.Kind, job *stages.Job) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("stage panicked: %v", p)
		}
	}()
	return k.Run(ctx, job)
}
