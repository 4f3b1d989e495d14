package exec_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/spn-project/spn/stages"
	"github.com/spn-project/spn/stages/exec"
	"github.com/spn-project/spn/stages/plan"
)

// sharedKind is a fake stage kind for the core-sharing tests: each stage
// records the threads it started with, then runs its body.
type sharedKind struct {
	name  string
	grows bool
	mu    *sync.Mutex
	start map[string]int // stage name → Env.Threads
	body  func(ctx context.Context, job *stages.Job) error
}

func (k *sharedKind) Name() string       { return k.name }
func (k *sharedKind) Version() string    { return "1" }
func (k *sharedKind) GrowsThreads() bool { return k.grows }
func (k *sharedKind) Run(ctx context.Context, job *stages.Job) error {
	k.mu.Lock()
	k.start[job.Name] = job.Env.Threads
	k.mu.Unlock()
	if k.body != nil {
		if err := k.body(ctx, job); err != nil {
			return err
		}
	}
	return os.WriteFile(filepath.Join(job.Dir, "out.txt"), []byte(job.Name), 0o644)
}

// sharedPlan is gen → train0..train{n-1} → tab.
func sharedPlan(n int) *plan.Plan {
	p := &plan.Plan{}
	add := func(kind, name string, deps ...*plan.Node) *plan.Node {
		nd := &plan.Node{Key: fmt.Sprintf("%064x", len(p.Nodes)+1), Kind: kind, Version: "1", Name: name,
			JSON: []byte("{}"), Deps: deps, Index: len(p.Nodes), Status: plan.ToRun}
		p.Nodes = append(p.Nodes, nd)
		return nd
	}
	gen := add("gen", "gen")
	var trains []*plan.Node
	for i := range n {
		trains = append(trains, add("train", fmt.Sprintf("train%d", i), gen))
	}
	add("tab", "tab", trains...)
	return p
}

// TestSharedCores: on 4 cores a lone first stage takes all 4, three
// trains that become ready together split them 2+1+1, a train left alone
// is offered the idle cores while it runs (a stage that cannot grow is
// not), and the last stage takes all 4; the log says how many stages run
// with how many threads.
func TestSharedCores(t *testing.T) {
	mu := &sync.Mutex{}
	started := map[string]int{}
	release := map[string]chan struct{}{"train0": make(chan struct{}), "train1": make(chan struct{})}
	sawGrowth := make(chan int, 1)
	train := &sharedKind{name: "train", grows: true, mu: mu, start: started,
		body: func(ctx context.Context, job *stages.Job) error {
			if ch, ok := release[job.Name]; ok {
				<-ch
				return nil
			}
			// train2 runs until it is offered every core.
			deadline := time.Now().Add(10 * time.Second)
			for job.Env.ThreadsNow != nil && job.Env.ThreadsNow() < 4 {
				if time.Now().After(deadline) {
					return fmt.Errorf("never offered 4 threads (have %d)", job.Env.ThreadsNow())
				}
				time.Sleep(time.Millisecond)
			}
			if job.Env.ThreadsNow == nil {
				return fmt.Errorf("a growing stage got no ThreadsNow")
			}
			sawGrowth <- job.Env.ThreadsNow()
			return nil
		}}
	gen := &sharedKind{name: "gen", mu: mu, start: started}
	tab := &sharedKind{name: "tab", mu: mu, start: started, body: func(_ context.Context, job *stages.Job) error {
		if job.Env.ThreadsNow != nil {
			return fmt.Errorf("a stage that cannot grow got ThreadsNow")
		}
		return nil
	}}
	reg := stages.NewRegistry(gen, train, tab)
	c := openCache(t)
	var logBuf bytes.Buffer
	var logMu sync.Mutex
	log := hclog.New(&hclog.LoggerOptions{Output: &lockedWriter{w: &logBuf, mu: &logMu}, Level: hclog.Info})
	p := sharedPlan(3)
	var train0 *plan.Node
	for _, nd := range p.Nodes {
		if nd.Name == "train0" {
			train0 = nd
		}
	}
	go func() {
		// Let the three trains start, then end train0 and train1.
		for {
			mu.Lock()
			n := len(started)
			mu.Unlock()
			if n == 4 {
				break
			}
			time.Sleep(time.Millisecond)
		}
		// train0 ends (its record written) before train1, so no core
		// freed by train1 can reach train0 and its record says 2.
		close(release["train0"])
		for {
			if _, err := c.ReadRecord(train0.Kind, train0.Key); err == nil {
				break
			}
			time.Sleep(time.Millisecond)
		}
		close(release["train1"])
	}()
	res, err := exec.Run(context.Background(), p, c, reg, exec.Options{Cores: 4, Log: log})
	if err != nil || !res.OK() {
		t.Fatalf("Run: %v %v", err, res.Messages)
	}
	want := map[string]int{"gen": 4, "train0": 2, "train1": 1, "train2": 1, "tab": 4}
	for name, th := range want {
		if started[name] != th {
			t.Errorf("%s started with %d threads, want %d (all: %v)", name, started[name], th, started)
		}
	}
	if got := <-sawGrowth; got != 4 {
		t.Errorf("train2 grew to %d threads, want 4", got)
	}
	// The records say how many threads each stage had at the end.
	for name, th := range map[string]int{"train0": 2, "train2": 4} {
		var n *plan.Node
		for _, nd := range p.Nodes {
			if nd.Name == name {
				n = nd
			}
		}
		rec, err := c.ReadRecord(n.Kind, n.Key)
		if err != nil {
			t.Fatal(err)
		}
		if rec.Threads != th {
			t.Errorf("record of %s: threads %d, want %d", name, rec.Threads, th)
		}
	}
	logMu.Lock()
	out := logBuf.String()
	logMu.Unlock()
	for _, s := range []string{
		"sharing the cores: running=1 threads=4 cores=4 started=1 grown=0",
		"sharing the cores: running=3 threads=\"2+1+1\" cores=4 started=3 grown=0",
	} {
		if !strings.Contains(out, s) {
			t.Errorf("log lacks %q:\n%s", s, out)
		}
	}
	if !strings.Contains(out, "grown=1") {
		t.Errorf("log does not show the growth:\n%s", out)
	}
}

// TestSharedMemoryAdmission: trains expected to take 3 GiB each with 7 GiB
// free run two at a time, the third waits (and the log says so), and
// every stage still runs.
func TestSharedMemoryAdmission(t *testing.T) {
	mu := &sync.Mutex{}
	started := map[string]int{}
	g := &gauge{mu: mu}
	train := &sharedKind{name: "train", grows: true, mu: mu, start: started,
		body: func(context.Context, *stages.Job) error {
			g.enter()
			defer g.leave()
			time.Sleep(20 * time.Millisecond)
			return nil
		}}
	reg := stages.NewRegistry(&sharedKind{name: "gen", mu: mu, start: started}, train,
		&sharedKind{name: "tab", mu: mu, start: started})
	var logBuf bytes.Buffer
	log := hclog.New(&hclog.LoggerOptions{Output: &logBuf, Level: hclog.Info})
	var inputsSeen []string
	opt := exec.Options{Cores: 8, Log: log,
		Memory: func(n *plan.Node, in []stages.Input) uint64 {
			if n.Kind != "train" {
				return 0
			}
			for _, i := range in {
				inputsSeen = append(inputsSeen, i.Kind)
			}
			return 3 << 30
		},
		Available: func() (uint64, bool) { return 7 << 30, true },
	}
	res, err := exec.Run(context.Background(), sharedPlan(3), openCache(t), reg, opt)
	if err != nil || !res.OK() {
		t.Fatalf("Run: %v %v", err, res.Messages)
	}
	if g.most != 2 {
		t.Errorf("%d trains ran at once, want 2", g.most)
	}
	if started["train0"] != 4 || started["train1"] != 4 {
		t.Errorf("the first two trains started with %v threads, want 4 each", started)
	}
	if len(inputsSeen) == 0 || inputsSeen[0] != "gen" {
		t.Errorf("the estimate was given inputs %v, want the gen stage", inputsSeen)
	}
	if out := logBuf.String(); !strings.Contains(out, "stage waits for memory: stage=train2 expected_peak_mib=3072 free_mib=1024") {
		t.Errorf("log does not show the wait:\n%s", out)
	}
}

type lockedWriter struct {
	w  *bytes.Buffer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// gpuKind is a sharedKind whose stages with params {"gpus": [N, ...]}
// need one of those GPUs (stages.GPUUser).
type gpuKind struct{ *sharedKind }

func (k gpuKind) StageGPU(params json.RawMessage) ([]int, bool) {
	var p struct {
		GPUs []int `json:"gpus"`
	}
	if json.Unmarshal(params, &p) != nil || p.GPUs == nil {
		return nil, false
	}
	return p.GPUs, true
}

// TestGPUStagesOneAtATime: three trains on GPU 0 and one on the CPU, with
// shared cores and with two fixed jobs: the GPU trains run one at a time,
// in plan order, and the CPU train runs beside the first of them instead
// of queueing behind the ones waiting for the GPU; the log says which
// stage waits for the GPU.
func TestGPUStagesOneAtATime(t *testing.T) {
	for _, opt := range []exec.Options{{Cores: 4}, {Jobs: 2, Threads: 1}} {
		t.Run(fmt.Sprintf("cores=%d,jobs=%d", opt.Cores, opt.Jobs), func(t *testing.T) {
			mu := &sync.Mutex{}
			started := map[string]int{}
			var order []string
			onGPU, most := 0, 0
			cpuStarted := make(chan struct{})
			train := &sharedKind{name: "train", grows: true, mu: mu, start: started,
				body: func(ctx context.Context, job *stages.Job) error {
					if job.Name == "train3" {
						close(cpuStarted)
						return nil
					}
					mu.Lock()
					onGPU++
					most = max(most, onGPU)
					order = append(order, job.Name)
					mu.Unlock()
					defer func() {
						mu.Lock()
						onGPU--
						mu.Unlock()
					}()
					if job.Name != "train0" {
						time.Sleep(5 * time.Millisecond)
						return nil
					}
					select { // the CPU train must start while train0 holds the GPU
					case <-cpuStarted:
						return nil
					case <-time.After(10 * time.Second):
						return fmt.Errorf("the CPU train did not start beside the GPU one")
					}
				}}
			reg := stages.NewRegistry(&sharedKind{name: "gen", mu: mu, start: started}, gpuKind{train},
				&sharedKind{name: "tab", mu: mu, start: started})
			p := sharedPlan(4)
			for _, nd := range p.Nodes {
				if nd.Kind == "train" && nd.Name != "train3" {
					nd.JSON = []byte(`{"gpus":[0]}`)
				}
			}
			var logBuf bytes.Buffer
			var logMu sync.Mutex
			opt.Log = hclog.New(&hclog.LoggerOptions{Output: &lockedWriter{w: &logBuf, mu: &logMu}, Level: hclog.Info})
			res, err := exec.Run(context.Background(), p, openCache(t), reg, opt)
			if err != nil || !res.OK() {
				t.Fatalf("Run: %v %v", err, res.Messages)
			}
			if most != 1 {
				t.Errorf("%d GPU stages ran at once, want 1", most)
			}
			if want := []string{"train0", "train1", "train2"}; !slices.Equal(order, want) {
				t.Errorf("GPU stages ran in order %v, want %v", order, want)
			}
			logMu.Lock()
			out := logBuf.String()
			logMu.Unlock()
			if !strings.Contains(out, "stage waits for a GPU: stage=train1 devices=cuda:0") {
				t.Errorf("log does not show the wait for the GPU:\n%s", out)
			}
		})
	}
}

// TestGPUStagesSpread: five trains that may each use GPU 0 or GPU 1 run
// two at a time, never two on one GPU, each told its GPU (Env.GPU), the
// first two on GPU 0 and GPU 1 in plan order; a CPU stage is told none.
func TestGPUStagesSpread(t *testing.T) {
	mu := &sync.Mutex{}
	started := map[string]int{}
	gpuOf := map[string]int{}
	busy := map[int]string{}
	most := 0
	var bad []string
	train := &sharedKind{name: "train", mu: mu, start: started,
		body: func(ctx context.Context, job *stages.Job) error {
			g := job.Env.GPU
			mu.Lock()
			gpuOf[job.Name] = g
			if other, ok := busy[g]; ok && g >= 0 {
				bad = append(bad, fmt.Sprintf("%s and %s both on GPU %d", other, job.Name, g))
			}
			if g >= 0 {
				busy[g] = job.Name
			}
			most = max(most, len(busy))
			mu.Unlock()
			time.Sleep(5 * time.Millisecond)
			mu.Lock()
			if g >= 0 {
				delete(busy, g)
			}
			mu.Unlock()
			return nil
		}}
	reg := stages.NewRegistry(&sharedKind{name: "gen", mu: mu, start: started}, gpuKind{train},
		&sharedKind{name: "tab", mu: mu, start: started})
	p := sharedPlan(6)
	for _, nd := range p.Nodes {
		if nd.Kind == "train" && nd.Name != "train5" {
			nd.JSON = []byte(`{"gpus":[0,1]}`)
		}
	}
	res, err := exec.Run(context.Background(), p, openCache(t), reg, exec.Options{Cores: 8})
	if err != nil || !res.OK() {
		t.Fatalf("Run: %v %v", err, res.Messages)
	}
	if len(bad) > 0 || most != 2 {
		t.Errorf("at most %d GPUs busy at once (want 2); %v", most, bad)
	}
	if gpuOf["train0"] != 0 || gpuOf["train1"] != 1 || gpuOf["train5"] != -1 {
		t.Errorf("GPUs %v: want train0 on 0, train1 on 1, the CPU train5 on none (-1)", gpuOf)
	}
	for i := range 5 {
		if g, ok := gpuOf[fmt.Sprintf("train%d", i)]; !ok || g < 0 || g > 1 {
			t.Errorf("train%d ran on GPU %d (ran: %v), want 0 or 1", i, g, ok)
		}
	}
}

// TestStagesPerGPU: with StagesPerGPU 2, five trains on GPU 0 run two at
// a time, never three.
func TestStagesPerGPU(t *testing.T) {
	mu := &sync.Mutex{}
	started := map[string]int{}
	g := &gauge{mu: mu}
	train := &sharedKind{name: "train", mu: mu, start: started,
		body: func(ctx context.Context, job *stages.Job) error {
			g.enter()
			defer g.leave()
			time.Sleep(5 * time.Millisecond)
			return nil
		}}
	reg := gpuRegistry(mu, started, train)
	res, err := exec.Run(context.Background(), gpuPlan(5), openCache(t), reg, exec.Options{Cores: 8, StagesPerGPU: 2})
	if err != nil || !res.OK() {
		t.Fatalf("Run: %v %v", err, res.Messages)
	}
	if g.most != 2 {
		t.Errorf("at most %d stages on the GPU at once, want 2", g.most)
	}
}

// TestOutOfGPUMemoryRunsAlone: with two stages per GPU, a train stage
// that runs out of GPU memory while another shares its GPU
// (stages.DeviceMemory) runs again alone on the GPU, no other stage
// beside it, and then succeeds; the run ends OK. One that runs out of
// memory having had the GPU to itself fails at once.
func TestOutOfGPUMemoryRunsAlone(t *testing.T) {
	mu := &sync.Mutex{}
	started := map[string]int{}
	g := &gauge{mu: mu}
	attempts := map[string]int{}
	var crowdedAlone []string // second attempts that saw another stage
	train := &sharedKind{name: "train", mu: mu, start: started,
		body: func(ctx context.Context, job *stages.Job) error {
			g.enter()
			defer g.leave()
			mu.Lock()
			attempts[job.Name]++
			n := attempts[job.Name]
			crowded := g.now > 1
			mu.Unlock()
			time.Sleep(10 * time.Millisecond)
			mu.Lock()
			defer mu.Unlock()
			crowded = crowded || g.now > 1
			switch {
			case n > 1 && crowded:
				crowdedAlone = append(crowdedAlone, job.Name)
			case crowded:
				return stages.DeviceMemory(errors.New("cuda: cuMemAlloc_v2 failed: CUDA_ERROR_OUT_OF_MEMORY (2)"))
			}
			return nil
		}}
	reg := gpuRegistry(mu, started, train)
	res, err := exec.Run(context.Background(), gpuPlan(4), openCache(t), reg, exec.Options{Cores: 8, StagesPerGPU: 2})
	if err != nil || !res.OK() {
		t.Fatalf("Run: %v %v", err, res.Messages)
	}
	retried := 0
	for _, n := range attempts {
		if n == 2 {
			retried++
		}
	}
	if retried == 0 || len(crowdedAlone) != 0 || g.most != 2 {
		t.Errorf("attempts %v (%d run again), alone runs beside another %v, at most %d at once; want some run again, alone, 2 at once", attempts, retried, crowdedAlone, g.most)
	}

	// Alone from the start (one stage per GPU): no second chance.
	clear(attempts)
	train.body = func(context.Context, *stages.Job) error {
		mu.Lock()
		defer mu.Unlock()
		attempts["any"]++
		return stages.DeviceMemory(errors.New("out of memory"))
	}
	res, err = exec.Run(context.Background(), gpuPlan(1), openCache(t), reg, exec.Options{Cores: 8, StagesPerGPU: 2})
	if err != nil || len(res.Failed) != 1 || attempts["any"] != 1 || !errors.Is(res.Failed[0].Err, stages.ErrDeviceMemory) {
		t.Errorf("a lone stage out of GPU memory: %v, %d failed, %d attempts; want it failed after one", err, len(res.Failed), attempts["any"])
	}
}

// gpuPlan is sharedPlan(n) with the trains on GPU 0 (gpuKind's
// parameters).
func gpuPlan(n int) *plan.Plan {
	p := sharedPlan(n)
	for _, nd := range p.Nodes {
		if nd.Kind == "train" {
			nd.JSON = []byte(`{"gpus":[0]}`)
		}
	}
	return p
}

// gpuRegistry is gpuPlan's stage kinds: train on a GPU, gen and tab on
// the CPU.
func gpuRegistry(mu *sync.Mutex, started map[string]int, train *sharedKind) *stages.Registry {
	return stages.NewRegistry(&sharedKind{name: "gen", mu: mu, start: started}, gpuKind{train},
		&sharedKind{name: "tab", mu: mu, start: started})
}

// gauge counts the stage bodies running at once (between enter and
// leave) and the most at any time, under mu.
type gauge struct {
	mu        *sync.Mutex
	now, most int
}

func (g *gauge) enter() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.now++
	g.most = max(g.most, g.now)
}

func (g *gauge) leave() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.now--
}
