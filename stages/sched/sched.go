// Package sched shares a machine's cores and memory among the stages of a
// run: it decides which ready stages start, with how many threads each,
// and which running stages may take more threads when cores fall idle.
//
// The policy, for C cores:
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
// A Scheduler holds no clock and starts nothing itself: the executor asks
// it (Start, Finish, Grow) from one goroutine, and a running stage reads
// its Slot's thread count from its own.
package sched

import (
	"fmt"
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
}

// Slot is a running stage's share of the machine.
type Slot struct {
	ID      int
	Mem     uint64
	grows   bool
	threads atomic.Int64
}

// Threads returns how many threads the stage may use now. It is safe to
// call from any goroutine; it only ever grows while the stage runs.
func (s *Slot) Threads() int { return int(s.threads.Load()) }

// Scheduler is the state of one run's sharing. Its methods are for one
// goroutine (the executor's); Slot.Threads may be called from any.
type Scheduler struct {
	cores     int
	available func() (uint64, bool)
	budget    uint64 // free memory when the run started
	limited   bool   // memory admission is on
	running   []*Slot
	used      int    // threads held by running stages
	reserved  uint64 // expected peaks of the running stages
}

// New returns a scheduler for cores cores (at least 1). available, if not
// nil, reports the free memory (e.g. MemAvailable of /proc/meminfo); ok
// false means unknown, and then memory does not hold stages back.
func New(cores int, available func() (free uint64, ok bool)) *Scheduler {
	s := &Scheduler{cores: max(cores, 1), available: available}
	if available != nil {
		s.budget, s.limited = available()
	}
	return s
}

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

// Start decides which of the ready stages (in the order they should
// start) start now and returns their slots, in that order. held is the
// first stage that memory held back (nil if none did).
func (s *Scheduler) Start(ready []Request) (started []*Slot, held *Held) {
	free := s.cores - s.used
	if free <= 0 || len(ready) == 0 {
		return nil, nil
	}
	var admitted []Request
	reserved := s.reserved
	for _, r := range ready {
		if len(admitted) == free {
			break
		}
		if r.Mem > 0 && s.limited && len(s.running)+len(admitted) > 0 {
			room := s.room(reserved)
			if r.Mem > room {
				held = &Held{ID: r.ID, Need: r.Mem, Free: room}
				break
			}
		}
		admitted = append(admitted, r)
		reserved += r.Mem
	}
	k := len(admitted)
	for i, r := range admitted {
		t := free / k
		if i < free%k {
			t++
		}
		sl := &Slot{ID: r.ID, Mem: r.Mem, grows: r.Grows}
		sl.threads.Store(int64(t))
		s.running = append(s.running, sl)
		s.used += t
		s.reserved += r.Mem
		started = append(started, sl)
	}
	return started, held
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

// Finish releases a finished stage's threads and memory.
func (s *Scheduler) Finish(sl *Slot) {
	for i, r := range s.running {
		if r == sl {
			s.running = append(s.running[:i], s.running[i+1:]...)
			s.used -= sl.Threads()
			s.reserved -= sl.Mem
			return
		}
	}
}

// Grow shares the free threads among the running stages that can grow,
// one at a time in start order, and returns the slots it gave threads to.
// Call it when no stage is waiting to start: the threads it hands out
// come back only when their stage finishes.
func (s *Scheduler) Grow() []*Slot {
	var growers []*Slot
	for _, r := range s.running {
		if r.grows {
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
