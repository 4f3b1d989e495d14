package sched

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

const gib = 1 << 30

func threadsOf(slots []*Slot) []int {
	var t []int
	for _, s := range slots {
		t = append(t, s.Threads())
	}
	return t
}

func ready(n int) []Request {
	r := make([]Request, n)
	for i := range r {
		r[i] = Request{ID: i}
	}
	return r
}

// TestStartSplitsCores: N ready stages on C idle cores start min(N, C)
// stages that split the cores evenly, the first taking the remainder.
func TestStartSplitsCores(t *testing.T) {
	for _, tc := range []struct {
		n, cores int
		want     []int
	}{
		{1, 16, []int{16}},
		{2, 16, []int{8, 8}},
		{3, 16, []int{6, 5, 5}},
		{5, 8, []int{2, 2, 2, 1, 1}},
		{16, 16, slices.Repeat([]int{1}, 16)},
		{40, 16, slices.Repeat([]int{1}, 16)},
		{1, 2, []int{2}},
		{4, 2, []int{1, 1}},
		{3, 1, []int{1}},
		{2, 0, []int{1}}, // at least one core
		{0, 4, nil},
	} {
		s := New(tc.cores, nil)
		got, _, held := s.Start(slices.Values(ready(tc.n)))
		if !slices.Equal(threadsOf(got), tc.want) || held != nil {
			t.Errorf("%d ready on %d cores: threads %v (held %v), want %v", tc.n, tc.cores, threadsOf(got), held, tc.want)
		}
		for i, sl := range got {
			if sl.ID != i {
				t.Errorf("%d ready on %d cores: slot %d is stage %d, want plan order", tc.n, tc.cores, i, sl.ID)
			}
		}
		if want := min(tc.n, max(tc.cores, 1)); s.Running() != want || s.Used() != max(tc.cores, 1) && tc.n > 0 {
			t.Errorf("%d ready on %d cores: %d running on %d threads", tc.n, tc.cores, s.Running(), s.Used())
		}
	}
}

// TestLaterStageGetsWhatIsFree: a stage that becomes ready while others
// run gets the threads that are free, no more; with none free it waits.
func TestLaterStageGetsWhatIsFree(t *testing.T) {
	s := New(8, nil)
	first, _, _ := s.Start(slices.Values(ready(2)))
	if got := threadsOf(first); !slices.Equal(got, []int{4, 4}) {
		t.Fatalf("first two: %v, want [4 4]", got)
	}
	if got, _, _ := s.Start(slices.Values([]Request{{ID: 9}})); got != nil {
		t.Fatalf("no thread free, yet %d stages started", len(got))
	}
	s.Finish(first[0])
	got, _, _ := s.Start(slices.Values([]Request{{ID: 2}, {ID: 3}, {ID: 4}}))
	if th := threadsOf(got); !slices.Equal(th, []int{2, 1, 1}) {
		t.Fatalf("three ready with 4 threads free: %v, want [2 1 1]", th)
	}
	if s.Used() != 8 || s.Running() != 4 {
		t.Fatalf("%d threads used by %d stages, want 8 by 4", s.Used(), s.Running())
	}
}

// fakeMem is an injectable free-memory reading.
type fakeMem struct {
	free uint64
	ok   bool
}

func (m *fakeMem) read() (uint64, bool) { return m.free, m.ok }

// TestMemoryHoldsBack: a stage whose expected peak does not fit waits, and
// the stages after it wait too; it starts when a finished stage frees
// memory; with nothing running the first stage always starts.
func TestMemoryHoldsBack(t *testing.T) {
	mem := &fakeMem{free: 10 * gib, ok: true}
	s := New(16, mem.read)
	req := []Request{{ID: 0, Mem: 4 * gib}, {ID: 1, Mem: 4 * gib}, {ID: 2, Mem: 4 * gib}, {ID: 3, Mem: 1}}
	got, _, held := s.Start(slices.Values(req))
	if th := threadsOf(got); !slices.Equal(th, []int{8, 8}) {
		t.Fatalf("4 GiB stages with 10 GiB free on 16 cores: threads %v, want [8 8]", th)
	}
	if held == nil || held.ID != 2 || held.Need != 4*gib || held.Free != 2*gib {
		t.Fatalf("held %+v, want stage 2 needing 4 GiB with 2 GiB free", held)
	}
	if !strings.Contains(held.String(), "4096 MiB") {
		t.Errorf("held message %q does not name the peak", held)
	}
	// Free memory now is what counts when it is less than the budget.
	s.Finish(got[0])
	mem.free = 3 * gib // another process took memory
	if got2, _, held := s.Start(slices.Values(req[2:])); got2 != nil || held == nil || held.Free != 3*gib {
		t.Fatalf("with 3 GiB free now: started %d, held %+v; want stage 2 held with 3 GiB free", len(got2), held)
	}
	mem.free = 8 * gib
	got2, _, held := s.Start(slices.Values(req[2:]))
	if th := threadsOf(got2); !slices.Equal(th, []int{4, 4}) || held != nil {
		t.Fatalf("after a stage finished: threads %v held %+v, want [4 4] and none held", th, held)
	}
	// Nothing running: the first stage starts whatever its peak.
	s2 := New(4, (&fakeMem{free: gib, ok: true}).read)
	got3, _, held := s2.Start(slices.Values([]Request{{ID: 0, Mem: 5 * gib}, {ID: 1, Mem: 5 * gib}}))
	if th := threadsOf(got3); !slices.Equal(th, []int{4}) || held == nil || held.ID != 1 {
		t.Fatalf("nothing running: threads %v held %+v, want [4] and stage 1 held", th, held)
	}
	// Unknown free memory holds nothing back.
	s3 := New(4, (&fakeMem{}).read)
	if got4, _, held := s3.Start(slices.Values([]Request{{ID: 0, Mem: 5 * gib}, {ID: 1, Mem: 5 * gib}})); len(got4) != 2 || held != nil {
		t.Fatalf("unknown free memory: %d started, held %+v", len(got4), held)
	}
}

// fakeStage is a stage of the simulated run: epochs epochs of work units
// each, done at one unit per thread per tick; it reads its thread count at
// the start of every epoch.
type fakeStage struct {
	name   string
	epochs int
	work   float64
	mem    uint64
	grows  bool
	deps   []int
	// onGPU: the stage needs one of the GPUs gpus (nil: GPU 0) to itself.
	onGPU bool
	gpus  []int
	// filled in by the simulation
	perEpoch []int
	start    float64
	end      float64
}

// simulate runs the stages on cores cores with a fake clock and returns
// the log of the scheduler's decisions; it fails the test if more threads
// than cores are ever held.
func simulate(t *testing.T, cores int, mem func() (uint64, bool), st []*fakeStage) []string {
	t.Helper()
	return simulateOn(t, New(cores, mem), st)
}

// simulateOn is simulate on the scheduler s; it also fails the test if
// more running stages than the GPU takes (SetStagesPerGPU) ever hold one
// GPU, or a stage is offered while parked.
func simulateOn(t *testing.T, s *Scheduler, st []*fakeStage) []string {
	t.Helper()
	cores := s.Cores()
	var log []string
	now := 0.0
	type run struct {
		slot    *Slot
		epoch   int
		threads int
		left    float64 // work left in this epoch
	}
	running := map[int]*run{}
	done := make([]bool, len(st))
	started := make([]bool, len(st))
	parked := make([]bool, len(st))
	readyReqs := func() []Request {
		var r []Request
		for i, f := range st {
			if started[i] || parked[i] {
				continue
			}
			ok := true
			for _, d := range f.deps {
				ok = ok && done[d]
			}
			if ok {
				q := Request{ID: i, Mem: f.mem, Grows: f.grows, UsesGPU: f.onGPU}
				if f.onGPU {
					q.GPUs = f.gpus
					if q.GPUs == nil {
						q.GPUs = []int{0}
					}
				}
				r = append(r, q)
			}
		}
		return r
	}
	schedule := func() {
		rq := readyReqs()
		slots, park, held := s.Start(slices.Values(rq))
		for _, q := range park {
			parked[q.ID] = true
			log = append(log, fmt.Sprintf("t=%.4g park %s", now, st[q.ID].name))
		}
		for _, sl := range slots {
			f := st[sl.ID]
			started[sl.ID] = true
			f.start = now
			running[sl.ID] = &run{slot: sl, threads: sl.Threads(), left: f.work}
			f.perEpoch = append(f.perEpoch, sl.Threads())
			on := ""
			if f.onGPU {
				on = fmt.Sprintf(" gpu=%d", sl.GPU)
				if !slices.Contains(f.gpus, sl.GPU) && !(f.gpus == nil && sl.GPU == 0) {
					t.Fatalf("t=%g: %s started on GPU %d, not one of %v", now, f.name, sl.GPU, f.gpus)
				}
			} else if sl.GPU != -1 {
				t.Fatalf("t=%g: %s needs no GPU, holds GPU %d", now, f.name, sl.GPU)
			}
			log = append(log, fmt.Sprintf("t=%.4g start %s threads=%d%s", now, f.name, sl.Threads(), on))
		}
		if held != nil {
			log = append(log, fmt.Sprintf("t=%.4g hold %s", now, st[held.ID].name))
		}
		if held == nil {
			for _, g := range s.Grow() {
				log = append(log, fmt.Sprintf("t=%.4g grow %s threads=%d", now, st[g.ID].name, g.Threads()))
			}
		}
		if s.Used() > cores {
			t.Fatalf("t=%g: %d threads held on %d cores", now, s.Used(), cores)
		}
		onGPU := map[int][]string{}
		for id, r := range running {
			if f := st[id]; f.onGPU {
				g := r.slot.GPU
				if onGPU[g] = append(onGPU[g], f.name); len(onGPU[g]) > s.perGPU {
					t.Fatalf("t=%g: %v hold GPU %d, which takes %d", now, onGPU[g], g, s.perGPU)
				}
			}
		}
	}
	schedule()
	for len(running) > 0 {
		// The next epoch end.
		next := -1
		var dt float64
		for id, r := range running {
			d := r.left / float64(r.threads)
			if next < 0 || d < dt || d == dt && id < next {
				next, dt = id, d
			}
		}
		now += dt
		for _, r := range running {
			r.left -= dt * float64(r.threads)
		}
		r := running[next]
		f := st[next]
		r.epoch++
		if r.epoch < f.epochs {
			r.threads = r.slot.Threads()
			r.left = f.work
			f.perEpoch = append(f.perEpoch, r.threads)
			continue
		}
		f.end = now
		done[next] = true
		delete(running, next)
		back := s.Finish(r.slot)
		log = append(log, fmt.Sprintf("t=%.4g end %s", now, f.name))
		for _, id := range back {
			if !parked[id] {
				t.Fatalf("t=%g: Finish handed back %s, which was not parked", now, st[id].name)
			}
			parked[id] = false
			log = append(log, fmt.Sprintf("t=%.4g unpark %s", now, st[id].name))
		}
		schedule()
	}
	for i, f := range st {
		if !done[i] {
			t.Fatalf("stage %s never ran", f.name)
		}
	}
	return log
}

// TestGrowWhenTheRunNarrows: four stages on four cores run with a thread
// each; when the three short ones end, the long one takes the idle cores
// at its next epoch, and a stage that cannot grow keeps its threads.
func TestGrowWhenTheRunNarrows(t *testing.T) {
	long := &fakeStage{name: "train-long", epochs: 5, work: 4, grows: true}
	fixed := &fakeStage{name: "precompute", epochs: 1, work: 20}
	st := []*fakeStage{
		long,
		{name: "short1", epochs: 1, work: 1},
		{name: "short2", epochs: 1, work: 2},
		fixed,
	}
	log := simulate(t, 4, nil, st)
	want := []string{
		"t=0 start train-long threads=1",
		"t=0 start short1 threads=1",
		"t=0 start short2 threads=1",
		"t=0 start precompute threads=1",
		"t=1 end short1",
		"t=1 grow train-long threads=2",
		"t=2 end short2",
		"t=2 grow train-long threads=3",
	}
	if got := log[:len(want)]; !slices.Equal(got, want) {
		t.Fatalf("decisions:\n%s\nwant first:\n%s", strings.Join(log, "\n"), strings.Join(want, "\n"))
	}
	// Epoch 1 (t 0–4) on 1 thread; epoch 2 starts at t = 4 with the 3
	// threads granted by then.
	if !slices.Equal(long.perEpoch, []int{1, 3, 3, 3, 3}) {
		t.Errorf("long stage's threads per epoch %v, want [1 3 3 3 3]", long.perEpoch)
	}
	if !slices.Equal(fixed.perEpoch, []int{1}) {
		t.Errorf("the stage that cannot grow ran with %v threads", fixed.perEpoch)
	}
	// When the fixed stage ends (t = 20) the long one is done already.
	if long.end >= fixed.end {
		t.Errorf("long stage ended at %g, after the fixed one (%g)", long.end, fixed.end)
	}
}

// TestDependentsTakeFreedThreads: a DAG (generate → two trains → evaluate)
// on 2 cores: the lone first stage takes both cores, the two trains one
// each, the last stage both; a train left alone grows.
func TestDependentsTakeFreedThreads(t *testing.T) {
	st := []*fakeStage{
		{name: "generate", epochs: 1, work: 2},
		{name: "trainA", epochs: 3, work: 1, grows: true, deps: []int{0}},
		{name: "trainB", epochs: 4, work: 1, grows: true, deps: []int{0}},
		{name: "evaluate", epochs: 1, work: 1, deps: []int{1, 2}},
	}
	log := simulate(t, 2, nil, st)
	want := []string{
		"t=0 start generate threads=2",
		"t=1 end generate",
		"t=1 start trainA threads=1",
		"t=1 start trainB threads=1",
		"t=4 end trainA",
		"t=4 grow trainB threads=2",
		"t=4.5 end trainB",
		"t=4.5 start evaluate threads=2",
		"t=5 end evaluate",
	}
	if !slices.Equal(log, want) {
		t.Fatalf("decisions:\n%s\nwant:\n%s", strings.Join(log, "\n"), strings.Join(want, "\n"))
	}
}

// TestManyStagesMemoryBound: sixteen big stages on sixteen cores with room
// for four at a time never hold more threads than cores (simulate checks)
// and never more than four run at once.
func TestManyStagesMemoryBound(t *testing.T) {
	var st []*fakeStage
	for i := range 16 {
		st = append(st, &fakeStage{name: fmt.Sprintf("dd%d", i), epochs: 2, work: float64(1 + i%3), mem: 3 * gib, grows: true})
	}
	mem := &fakeMem{free: 13 * gib, ok: true}
	log := simulate(t, 16, mem.read, st)
	most, runningNow := 0, 0
	for _, l := range log {
		switch {
		case strings.Contains(l, " start "):
			runningNow++
		case strings.Contains(l, " end "):
			runningNow--
		}
		most = max(most, runningNow)
	}
	if most != 4 {
		t.Fatalf("at most %d stages ran at once, want 4 (13 GiB for 3 GiB stages):\n%s", most, strings.Join(log, "\n"))
	}
	if !strings.Contains(log[4], "hold dd4") {
		t.Errorf("the fifth stage was not held back: %q", log[4])
	}
}

// TestGPUIsOneStageAtATime: a stage needing a GPU that another stage
// holds is parked: it takes no thread, the stages after it start as if it
// were not there, idle threads still go to growing stages, and it is
// handed back and started when the GPU's stage ends. Shared cores and
// fixed jobs alike; a stage that may use any GPU of a pool starts on the
// first free one, and waits only when all are busy.
func TestGPUIsOneStageAtATime(t *testing.T) {
	for _, tc := range []struct {
		name   string
		sched  *Scheduler
		stages []*fakeStage
		want   []string
	}{
		{
			name:  "shared cores: CPU stages start beside the waiting GPU stage",
			sched: New(4, nil),
			stages: []*fakeStage{
				{name: "gpuA", epochs: 1, work: 4, onGPU: true},
				{name: "gpuB", epochs: 1, work: 2, onGPU: true},
				{name: "cpu1", epochs: 1, work: 1},
				{name: "cpu2", epochs: 1, work: 3},
			},
			want: []string{
				"t=0 park gpuB",
				"t=0 start gpuA threads=2 gpu=0",
				"t=0 start cpu1 threads=1",
				"t=0 start cpu2 threads=1",
				"t=1 end cpu1",
				"t=2 end gpuA",
				"t=2 unpark gpuB",
				"t=2 start gpuB threads=3 gpu=0",
				"t=2.667 end gpuB",
				"t=3 end cpu2",
			},
		},
		{
			name:  "two GPUs: a stage on each at once",
			sched: New(2, nil),
			stages: []*fakeStage{
				{name: "g0", epochs: 1, work: 2, onGPU: true},
				{name: "g1", epochs: 1, work: 2, onGPU: true, gpus: []int{1}},
			},
			want: []string{
				"t=0 start g0 threads=1 gpu=0",
				"t=0 start g1 threads=1 gpu=1",
				"t=2 end g0",
				"t=2 end g1",
			},
		},
		{
			name:  "fixed jobs: the waiting GPU stage takes no job",
			sched: Fixed(2, 3),
			stages: []*fakeStage{
				{name: "gpuA", epochs: 1, work: 3, onGPU: true},
				{name: "gpuB", epochs: 1, work: 3, onGPU: true},
				{name: "cpu1", epochs: 1, work: 9},
				{name: "cpu2", epochs: 1, work: 3},
			},
			want: []string{
				"t=0 park gpuB",
				"t=0 start gpuA threads=3 gpu=0",
				"t=0 start cpu1 threads=3",
				"t=1 end gpuA",
				"t=1 unpark gpuB",
				"t=1 start gpuB threads=3 gpu=0",
				"t=2 end gpuB",
				"t=2 start cpu2 threads=3",
				"t=3 end cpu1",
				"t=3 end cpu2",
			},
		},
		{
			name:  "idle threads go to the GPU stage while another waits for it",
			sched: New(2, nil),
			stages: []*fakeStage{
				{name: "gpuA", epochs: 2, work: 2, onGPU: true, grows: true},
				{name: "gpuB", epochs: 1, work: 1, onGPU: true},
				{name: "cpu1", epochs: 1, work: 1},
			},
			want: []string{
				"t=0 park gpuB",
				"t=0 start gpuA threads=1 gpu=0",
				"t=0 start cpu1 threads=1",
				"t=1 end cpu1",
				"t=1 grow gpuA threads=2",
				"t=3 end gpuA",
				"t=3 unpark gpuB",
				"t=3 start gpuB threads=2 gpu=0",
				"t=3.5 end gpuB",
			},
		},
		{
			name:  "a pool of two GPUs: each stage on the first free one, the third waits for either",
			sched: New(4, nil),
			stages: []*fakeStage{
				{name: "pA", epochs: 1, work: 2, onGPU: true, gpus: []int{0, 1}},
				{name: "pB", epochs: 1, work: 1, onGPU: true, gpus: []int{0, 1}},
				{name: "pC", epochs: 1, work: 1, onGPU: true, gpus: []int{0, 1}},
				{name: "only1", epochs: 1, work: 1, onGPU: true, gpus: []int{1}},
				{name: "cpu1", epochs: 1, work: 2},
			},
			want: []string{
				"t=0 park pC",
				"t=0 park only1",
				"t=0 start pA threads=2 gpu=0",
				"t=0 start pB threads=1 gpu=1",
				"t=0 start cpu1 threads=1",
				"t=1 end pA",
				"t=1 unpark pC", // GPU 0 is free: pC may use it, only1 may not
				"t=1 start pC threads=2 gpu=0",
				"t=1 end pB",
				"t=1 unpark only1",
				"t=1 start only1 threads=1 gpu=1",
				"t=1.5 end pC",
				"t=2 end only1",
				"t=2 end cpu1",
			},
		},
		{
			name:  "two stages per GPU: the third waits",
			sched: perGPU(New(4, nil), 2),
			stages: []*fakeStage{
				{name: "gpuA", epochs: 1, work: 2, onGPU: true},
				{name: "gpuB", epochs: 1, work: 1, onGPU: true},
				{name: "gpuC", epochs: 1, work: 1, onGPU: true},
				{name: "cpu1", epochs: 1, work: 2},
			},
			want: []string{
				"t=0 park gpuC",
				"t=0 start gpuA threads=2 gpu=0",
				"t=0 start gpuB threads=1 gpu=0",
				"t=0 start cpu1 threads=1",
				"t=1 end gpuA",
				"t=1 unpark gpuC",
				"t=1 start gpuC threads=2 gpu=0",
				"t=1 end gpuB",
				"t=1.5 end gpuC",
				"t=2 end cpu1",
			},
		},
		{
			name:  "memory holds back the stages after it, not a parked one",
			sched: New(4, (&fakeMem{free: 10 * gib, ok: true}).read),
			stages: []*fakeStage{
				{name: "gpuA", epochs: 1, work: 2, onGPU: true, mem: 6 * gib},
				{name: "gpuB", epochs: 1, work: 1, onGPU: true, mem: 6 * gib},
				{name: "big", epochs: 1, work: 1, mem: 6 * gib},
				{name: "cpu1", epochs: 1, work: 1},
			},
			want: []string{
				"t=0 park gpuB",
				"t=0 start gpuA threads=4 gpu=0",
				"t=0 hold big",
				"t=0.5 end gpuA",
				"t=0.5 unpark gpuB",
				"t=0.5 start gpuB threads=4 gpu=0",
				"t=0.5 hold big",
				"t=0.75 end gpuB",
				"t=0.75 start big threads=2",
				"t=0.75 start cpu1 threads=2",
				"t=1.25 end big",
				"t=1.25 end cpu1",
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			log := simulateOn(t, tc.sched, tc.stages)
			if !slices.Equal(log, tc.want) {
				t.Fatalf("decisions:\n%s\nwant:\n%s", strings.Join(log, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

// perGPU is s after SetStagesPerGPU(k).
func perGPU(s *Scheduler, k int) *Scheduler {
	s.SetStagesPerGPU(k)
	return s
}

// TestParkedOrder: the stages parked for a GPU come back one at a time,
// lowest ID first whatever the order they were parked in, and only when
// the stage holding that GPU finishes.
func TestParkedOrder(t *testing.T) {
	on := func(id, gpu int) Request { return Request{ID: id, UsesGPU: true, GPUs: []int{gpu}} }
	s := Fixed(4, 1)
	first, _, _ := s.Start(slices.Values([]Request{on(5, 0)}))
	if len(first) != 1 {
		t.Fatalf("GPU 0 free: %d started, want 1", len(first))
	}
	if got, parked, _ := s.Start(slices.Values([]Request{on(7, 0)})); len(got) != 0 || len(parked) != 1 || parked[0].ID != 7 {
		t.Fatalf("GPU 0 busy: started %d, parked %v; want stage 7 parked", len(got), parked)
	}
	other, parked, _ := s.Start(slices.Values([]Request{on(4, 0), {ID: 6}, on(8, 1)}))
	if ids := []int{other[0].ID, other[1].ID}; len(other) != 2 || !slices.Equal(ids, []int{6, 8}) || len(parked) != 1 || parked[0].ID != 4 {
		t.Fatalf("started %v parked %v, want 6 and 8 started, 4 parked", other, parked)
	}
	if s.Parked() != 2 || s.Used() != 3 {
		t.Fatalf("%d parked, %d threads used; want 2 and 3 (a parked stage holds none)", s.Parked(), s.Used())
	}
	if back := s.Finish(other[0]); back != nil {
		t.Fatalf("a CPU stage's end handed back %v", back)
	}
	if back := s.Finish(other[1]); back != nil {
		t.Fatalf("GPU 1's stage's end handed back %v, which wait for GPU 0", back)
	}
	if back := s.Finish(first[0]); !slices.Equal(back, []int{4}) {
		t.Fatalf("GPU 0 freed: handed back %v, want [4]", back)
	}
	next, _, _ := s.Start(slices.Values([]Request{on(4, 0)}))
	if len(next) != 1 || s.Parked() != 1 {
		t.Fatalf("stage 4 handed back: %d started, %d parked; want 1 and 1", len(next), s.Parked())
	}
	if back := s.Finish(next[0]); !slices.Equal(back, []int{7}) || s.Parked() != 0 {
		t.Fatalf("GPU 0 freed again: handed back %v (%d parked), want [7] and none", back, s.Parked())
	}
}

// TestAlone: with two stages per GPU, a stage asking to be alone (it ran
// out of the GPU's memory beside another) waits until the GPU is empty;
// meanwhile no other stage joins the GPU, and once it runs none joins
// it. When it ends, the GPU takes both parked stages at once.
func TestAlone(t *testing.T) {
	on := func(id int, alone bool) Request { return Request{ID: id, UsesGPU: true, GPUs: []int{0}, Alone: alone} }
	s := perGPU(Fixed(8, 1), 2)
	busy, _, _ := s.Start(slices.Values([]Request{on(1, false), on(2, false)}))
	if len(busy) != 2 {
		t.Fatalf("%d started on a GPU of two places, want 2", len(busy))
	}
	if got, parked, _ := s.Start(slices.Values([]Request{on(0, true)})); len(got) != 0 || len(parked) != 1 {
		t.Fatalf("alone on a busy GPU: started %d, parked %v; want it parked", len(got), parked)
	}
	if back := s.Finish(busy[0]); back != nil {
		t.Fatalf("one place freed while an alone stage waits: handed back %v, want none (the GPU drains)", back)
	}
	if got, parked, _ := s.Start(slices.Values([]Request{on(3, false)})); len(got) != 0 || len(parked) != 1 {
		t.Fatalf("a stage offered while the alone one waits: started %d, parked %v; want it parked", len(got), parked)
	}
	back := s.Finish(busy[1])
	if !slices.Equal(back, []int{0}) {
		t.Fatalf("the GPU empty: handed back %v, want the alone stage [0]", back)
	}
	alone, _, _ := s.Start(slices.Values([]Request{on(0, true)}))
	if len(alone) != 1 || alone[0].GPU != 0 {
		t.Fatalf("the alone stage on the empty GPU: started %v", alone)
	}
	if got, parked, _ := s.Start(slices.Values([]Request{on(4, false)})); len(got) != 0 || len(parked) != 1 {
		t.Fatalf("a stage beside the alone one: started %d, parked %v; want it parked", len(got), parked)
	}
	if back := s.Finish(alone[0]); !slices.Equal(back, []int{3, 4}) || s.Parked() != 0 {
		t.Fatalf("the alone stage ended: handed back %v (%d parked), want [3 4], both places", back, s.Parked())
	}

	// Offered together on an empty GPU, the alone stage takes it whole.
	s = perGPU(Fixed(8, 1), 2)
	if got, parked, _ := s.Start(slices.Values([]Request{on(0, true), on(1, false)})); len(got) != 1 || got[0].ID != 0 || len(parked) != 1 {
		t.Fatalf("alone and another offered together: started %v, parked %v; want the alone one started, the other parked", got, parked)
	}
}

func TestParseMemAvailable(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want uint64
		err  string
	}{
		{"MemTotal:       23000000 kB\nMemFree:  100 kB\nMemAvailable:   2048 kB\n", 2 << 20, ""},
		{"MemTotal: 1 kB\n", 0, "no MemAvailable"},
		{"MemAvailable: x kB\n", 0, "bad number"},
		{"MemAvailable: 12\n", 0, "want"},
	} {
		got, err := ParseMemAvailable(strings.NewReader(tc.in))
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: err %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%q: %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
	if _, ok := MemAvailable("/nonexistent/meminfo")(); ok {
		t.Error("a missing meminfo file reads as known")
	}
}

// FuzzParseMemAvailable: any input gives a value or an error, never a
// panic, and a value comes only from a well-formed line.
func FuzzParseMemAvailable(f *testing.F) {
	for _, s := range []string{
		"MemTotal:       23000000 kB\nMemAvailable:   2048 kB\n",
		"MemAvailable: 0 kB\n",
		"MemAvailable: 18446744073709551615 kB\n",
		"MemAvailable:\n",
		"",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseMemAvailable(strings.NewReader(s))
		if err == nil && (!strings.Contains(s, "MemAvailable:") || v%1024 != 0) {
			t.Fatalf("%q: value %d without a well-formed line", s, v)
		}
	})
}
