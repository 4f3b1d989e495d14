// Package sched shares a machine's cores, memory and GPUs among the
// stages of a run: it decides which ready stages start, with how many
// threads each, and which running stages may take more threads when cores
// fall idle.
//
// The policy, for C cores (New):
//   - ready stages start while threads are free, at most one per free
//     thread; the stages that start together split the free threads evenly
//     (the first in order take the remainder), so N ready stages on an idle
//     machine start min(N, C) stages with C ÷ min(N, C) threads each;
//   - a stage that starts while others run gets what is free;
//   - when no stage is waiting and threads are free, the running stages
//     that can use more threads while they run (Request.Grows) share them;
//     such a stage picks its new count up at its next epoch;
//   - a stage starts only if its expected peak memory fits: at most what
//     is free now (Available) and at most what was free when the run
//     started less what the running stages are expected to take. A stage
//     held back holds back the stages after it (plan order is kept); with
//     nothing running, the first ready stage always starts.
//
// With a fixed number of jobs (Fixed), up to that many stages run at once
// with the same threads each, in plan order, and memory is not checked.
//
// In both, a stage that needs a GPU (Request.UsesGPU) has one of its
// GPUs (Request.GPUs) to itself: it starts on the first of them that no
// running stage holds (Slot.GPU); with SetStagesPerGPU(k), a GPU takes k
// stages at once, and a stage that asks to be alone on its GPU
// (Request.Alone: it ran out of the GPU's memory beside others) starts
// only on a GPU no other stage holds; while it waits for one, no other
// stage joins the GPUs it may use. A stage whose GPUs are all busy waits
// without a thread and without holding back the stages after it, which
// start as if it were not there; the scheduler keeps it (it is parked)
// until a stage holding one of its GPUs finishes, and then hands the
// first parked stage that may use that GPU back (Finish), lowest ID
// first. Only memory keeps plan order across stages.
//
// A Scheduler holds no clock and starts nothing itself: the executor asks
// it (Start, Finish, Grow) from one goroutine, and a running stage reads
// its Slot's thread count from its own.
package sched

import (
	"fmt"
	"iter"
	"slices"
	"sync/atomic"
)

// Request is a ready stage asking to start.
type Request struct {
	// ID names the stage to the caller (e.g. its plan index).
	ID int
	// Mem is the stage's expected peak memory in bytes (0: negligible).
	Mem uint64
	// Grows is true when the stage can take more threads while it runs.
	Grows bool
	// UsesGPU is true when the stage needs one of the GPUs GPUs (their
	// ordinals, N of "cuda:N"; any one, the first free one in this
	// order) to itself while it runs.
	UsesGPU bool
	GPUs    []int
	// Alone, with UsesGPU, asks for a GPU no other stage holds, whatever
	// SetStagesPerGPU allows (a stage that ran out of device memory
	// beside others, run again).
	Alone bool
}

// Slot is a running stage's share of the machine.
type Slot struct {
	ID  int
	Mem uint64
	// GPU is the ordinal of the GPU the stage holds (one of its
	// Request.GPUs), -1 when it uses none.
	GPU     int
	req     Request
	threads atomic.Int64
}

// Threads returns how many threads the stage may use now. It is safe to
// call from any goroutine; it only ever grows while the stage runs.
func (s *Slot) Threads() int { return int(s.threads.Load()) }

// Scheduler is the state of one run's sharing. Its methods are for one
// goroutine (the executor's); Slot.Threads may be called from any.
type Scheduler struct {
	cores     int
	perStage  int // threads of every stage (Fixed); 0: shared
	available func() (uint64, bool)
	budget    uint64 // free memory when the run started
	limited   bool   // memory admission is on
	running   []*Slot
	used      int             // threads held by running stages
	reserved  uint64          // expected peaks of the running stages
	gpus      map[int][]*Slot // the running stages holding each GPU
	perGPU    int             // stages a GPU takes at once (at least 1)
	parked    []Request       // the stages waiting for a GPU, by ID
}

// New returns a scheduler for cores cores (at least 1). available, if not
// nil, reports the free memory (e.g. MemAvailable of /proc/meminfo); ok
// false means unknown, and then memory does not hold stages back.
func New(cores int, available func() (free uint64, ok bool)) *Scheduler {
	s := &Scheduler{cores: max(cores, 1), available: available, gpus: map[int][]*Slot{}, perGPU: 1}
	if available != nil {
		s.budget, s.limited = available()
	}
	return s
}

// Fixed returns a scheduler that runs up to jobs stages at once (at least
// 1), each with threads threads (at least 1): no sharing, no growth and no
// memory check, only the GPUs.
func Fixed(jobs, threads int) *Scheduler {
	jobs, threads = max(jobs, 1), max(threads, 1)
	return &Scheduler{cores: jobs * threads, perStage: threads, gpus: map[int][]*Slot{}, perGPU: 1}
}

// SetStagesPerGPU makes each GPU take up to k stages at once (at least
// 1; 1 at the start), before any stage starts.
func (s *Scheduler) SetStagesPerGPU(k int) { s.perGPU = max(k, 1) }

// Cores returns the number of cores shared.
func (s *Scheduler) Cores() int { return s.cores }

// Running returns the number of running stages.
func (s *Scheduler) Running() int { return len(s.running) }

// Used returns the threads held by the running stages.
func (s *Scheduler) Used() int { return s.used }

// Held explains why a ready stage did not start.
type Held struct {
	ID   int
	Need uint64 // its expected peak
	Free uint64 // what it could have had
}

func (h *Held) String() string {
	return fmt.Sprintf("expected peak %d MiB, %d MiB free", h.Need>>20, h.Free>>20)
}

// Start decides which of the ready stages start now and returns their
// slots, in order. ready yields the ready stages in the order they should
// start; Start takes from it only what it decides on: it stops once no
// thread is free or a stage is held back for memory (held: that stage,
// which stays the caller's to offer again; nil if none was). A stage
// whose GPUs are all busy is parked (returned in parked): the scheduler keeps it
// and hands it back from Finish, and the caller must not offer it again
// before then.
func (s *Scheduler) Start(ready iter.Seq[Request]) (started []*Slot, parked []Request, held *Held) {
	free := s.cores - s.used
	if s.perStage > 0 {
		free /= s.perStage
	}
	if free <= 0 {
		return nil, nil, nil
	}
	var admitted []Request
	var gpu []int // the GPU of each admitted stage
	reserved := s.reserved
	claimed := map[int]int{} // places taken on each GPU by the stages admitted here
	for r := range ready {
		g := -1
		if r.UsesGPU {
			if g = s.freeGPU(r, claimed); g < 0 {
				s.park(r)
				parked = append(parked, r)
				continue
			}
		}
		if r.Mem > 0 && s.limited && len(s.running)+len(admitted) > 0 {
			room := s.room(reserved)
			if r.Mem > room {
				held = &Held{ID: r.ID, Need: r.Mem, Free: room}
				break
			}
		}
		admitted = append(admitted, r)
		gpu = append(gpu, g)
		reserved += r.Mem
		if r.UsesGPU {
			claimed[g] += s.places(r)
		}
		if len(admitted) == free {
			break
		}
	}
	k, threads := len(admitted), s.cores-s.used
	for i, r := range admitted {
		t := s.perStage
		if t == 0 {
			t = threads / k
			if i < threads%k {
				t++
			}
		}
		sl := &Slot{ID: r.ID, Mem: r.Mem, GPU: gpu[i], req: r}
		sl.threads.Store(int64(t))
		s.running = append(s.running, sl)
		s.used += t
		s.reserved += r.Mem
		if r.UsesGPU {
			s.gpus[sl.GPU] = append(s.gpus[sl.GPU], sl)
		}
		started = append(started, sl)
	}
	return started, parked, held
}

// A GPU has SetStagesPerGPU places; a stage takes one, an Alone stage
// all of them.
func (s *Scheduler) places(r Request) int {
	if r.Alone {
		return s.perGPU
	}
	return 1
}

// taken returns the places of GPU g its running stages take.
func (s *Scheduler) taken(g int) int {
	n := 0
	for _, sl := range s.gpus[g] {
		n += s.places(sl.req)
	}
	return n
}

// freeGPU returns the first of r's GPUs with room for r beside the
// running stages and those admitted with r (claimed places), or -1; a
// GPU that an Alone stage parked before r waits for takes no other
// stage.
func (s *Scheduler) freeGPU(r Request, claimed map[int]int) int {
	for _, g := range r.GPUs {
		if s.taken(g)+claimed[g]+s.places(r) <= s.perGPU && (r.Alone || s.aloneParked(g, r.ID) < 0) {
			return g
		}
	}
	return -1
}

// aloneParked returns the index of the first Alone stage other than
// stage except parked for GPU g, or -1: the GPU then takes no other stage
// until it has run.
func (s *Scheduler) aloneParked(g, except int) int {
	return slices.IndexFunc(s.parked, func(q Request) bool { return q.Alone && q.ID != except && slices.Contains(q.GPUs, g) })
}

// room is the memory a new stage may take when the running stages are
// expected to take reserved: what is free now, and no more than what was
// free at the start less reserved.
func (s *Scheduler) room(reserved uint64) uint64 {
	room := uint64(0)
	if s.budget > reserved {
		room = s.budget - reserved
	}
	if now, ok := s.available(); ok && now < room {
		room = now
	}
	return room
}

// Finish releases a finished stage's threads, memory and GPU, and returns
// the IDs of the stages it hands back to the caller to offer again: the
// first stages parked that may use its GPU, as many as it now takes (an
// Alone one, once the GPU is empty, before any other).
func (s *Scheduler) Finish(sl *Slot) (back []int) {
	i := slices.Index(s.running, sl)
	if i < 0 {
		return nil
	}
	s.running = slices.Delete(s.running, i, i+1)
	s.used -= sl.Threads()
	s.reserved -= sl.Mem
	held := s.gpus[sl.GPU]
	j := slices.Index(held, sl)
	if !sl.req.UsesGPU || j < 0 {
		return nil
	}
	if held = slices.Delete(held, j, j+1); len(held) == 0 {
		delete(s.gpus, sl.GPU)
	} else {
		s.gpus[sl.GPU] = held
	}
	// The first parked stages that may use the GPU, as many as its free
	// places take; an Alone stage parked for it comes back first, once the
	// GPU is empty (until then it drains).
	room := s.perGPU - s.taken(sl.GPU)
	if i := s.aloneParked(sl.GPU, -1); i >= 0 {
		if room < s.perGPU {
			return nil
		}
		return []int{s.unpark(i)}
	}
	for i := 0; i < len(s.parked) && len(back) < room; {
		if slices.Contains(s.parked[i].GPUs, sl.GPU) {
			back = append(back, s.unpark(i))
			continue
		}
		i++
	}
	return back
}

// unpark removes the i-th parked stage and returns its ID.
func (s *Scheduler) unpark(i int) int {
	id := s.parked[i].ID
	s.parked = slices.Delete(s.parked, i, i+1)
	return id
}

// park keeps r until one of its GPUs is free, in ID order.
func (s *Scheduler) park(r Request) {
	i, _ := slices.BinarySearchFunc(s.parked, r.ID, func(a Request, id int) int { return a.ID - id })
	s.parked = slices.Insert(s.parked, i, r)
}

// Parked returns the number of stages waiting for a busy GPU.
func (s *Scheduler) Parked() int { return len(s.parked) }

// Grow shares the free threads among the running stages that can grow,
// one at a time in start order, and returns the slots it gave threads to.
// Call it when no stage is waiting to start but those parked for a GPU
// (Start held none back and left threads free): the threads it hands out
// come back only when their stage finishes. A Fixed scheduler grows none.
func (s *Scheduler) Grow() []*Slot {
	if s.perStage > 0 {
		return nil
	}
	var growers []*Slot
	for _, r := range s.running {
		if r.req.Grows {
			growers = append(growers, r)
		}
	}
	if len(growers) == 0 {
		return nil
	}
	var grown []*Slot
	for i := 0; s.used < s.cores; i++ {
		g := growers[i%len(growers)]
		g.threads.Add(1)
		if i < len(growers) {
			grown = append(grown, g)
		}
		s.used++
	}
	return grown
}
