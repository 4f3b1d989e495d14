package kernels

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// A Pool is a set of worker goroutines for ForEachChunk that stay awake for
// a while (the spin, DefaultSpin) after each parallel section before they
// sleep.
//
// A training step runs a hundred or more parallel sections of tens of
// microseconds each, mostly a few microseconds apart. Starting goroutines
// for every section wakes a sleeping thread every time, and a woken thread
// often starts only after the caller has done most of the work: measured on
// NCI1 (2 vCPUs of a virtual machine), two threads bought 11 % over one,
// for 20 % more CPU time. A worker that sleeps between sections fares no
// better: counted over 3 epochs, a worker that went to sleep after 50 µs
// missed 3.7 sections on average before it ran again, so waking it takes
// longer than several sections. Workers that spin pick up the next section
// at once; the spin only burns time the caller's serial work (the
// Gorgonia graph, batching) leaves idle anyway, as long as every thread of
// a pool has a core (spn's jobs × threads ≤ cores by default). After the
// spin, an idle worker naps, waking by itself, and only then sleeps until
// a section wakes it: posting a section never blocks the caller.
//
// Chunks go to whoever asks next — the caller works too — so the results do
// not depend on which goroutine computes a chunk, nor on the pool. A Pool
// should be closed when its stage is done; a nil *Pool runs ForEachChunk on
// fresh goroutines.
type Pool struct {
	spin    time.Duration
	threads atomic.Int32  // the caller and the workers
	seq     atomic.Uint64 // incremented once per posted section
	cur     atomic.Pointer[section]
	closed  atomic.Bool
	asleep  atomic.Int32  // workers blocked on wake
	wake    chan struct{} // one token per sleeping worker to wake
	workers sync.WaitGroup
}

// MaxPoolThreads bounds a Pool's threads (NewPool, Grow).
const MaxPoolThreads = 256

// DefaultSpin is how long a Pool's idle worker keeps looking for work before
// it sleeps: longer than the serial gaps within and between training steps
// (measured on NCI1, 3 epochs, paired runs: a 1 ms spin took 0.85× the
// wall time of a 50 µs one for 1.02× the CPU time, 250 µs 1.13× the wall
// time of 1 ms, 5 ms 0.99×).
const DefaultSpin = time.Millisecond

// A worker that found no section for its spin naps napMin, 2·napMin, … up to
// napMax (≈ 50 ms in all) before it sleeps until a section wakes it.
const (
	napMin = 50 * time.Microsecond
	napMax = 25 * time.Millisecond
)

// section is one ForEachChunk call: chunks [0, nc) of n rows. The two
// counters every thread writes sit on cache lines of their own, apart from
// the fields every thread only reads: with many workers, a claim would
// otherwise invalidate every other thread's copy of f, n and nc.
type section struct {
	f     func(chunk, lo, hi int)
	n, nc int
	_     [cacheLine]byte
	next  atomic.Int64 // next chunk to claim
	_     [cacheLine - 8]byte
	done  atomic.Int64 // chunks finished
	_     [cacheLine - 8]byte
}

// cacheLine is the padding between a section's shared counters: a cache
// line of x86-64 and most arm64 cores. (A section is allocated per
// ForEachChunk call, so the padding is kept to one line.)
const cacheLine = 64

// run claims and computes chunks until none is left.
func (s *section) run() {
	for {
		ch := int(s.next.Add(1) - 1)
		if ch >= s.nc {
			return
		}
		s.f(ch, ch*ChunkRows, min((ch+1)*ChunkRows, s.n))
		s.done.Add(1)
	}
}

// NewPool starts threads−1 workers (the caller of ForEachChunk is the other
// thread) that spin for spin (DefaultSpin if 0) before they sleep. It
// returns nil for threads ≤ 1.
func NewPool(threads int, spin time.Duration) *Pool {
	if threads <= 1 {
		return nil
	}
	return NewGrowablePool(threads, spin)
}

// NewGrowablePool is NewPool for a stage that may be given more threads
// while it runs (Grow): it returns a Pool even for one thread (no worker
// yet; ForEachChunk then runs serially).
func NewGrowablePool(threads int, spin time.Duration) *Pool {
	if spin <= 0 {
		spin = DefaultSpin
	}
	p := &Pool{spin: spin}
	p.wake = make(chan struct{}, MaxPoolThreads-1)
	p.threads.Store(1)
	p.Grow(threads)
	return p
}

// Threads returns the pool's threads: its workers and the caller (0 for a
// nil Pool).
func (p *Pool) Threads() int {
	if p == nil {
		return 0
	}
	return int(p.threads.Load())
}

// Grow raises the pool's threads to threads (at most MaxPoolThreads) by
// starting workers; it never removes any. Call it from the goroutine that
// calls ForEachChunk, between sections (a training loop between epochs):
// the chunks, and so the results, stay the same.
func (p *Pool) Grow(threads int) {
	if p == nil || p.closed.Load() {
		return
	}
	threads = min(threads, MaxPoolThreads)
	for t := int(p.threads.Load()); t < threads; t++ {
		p.workers.Add(1)
		go p.work()
		p.threads.Add(1)
	}
}

// Close stops the workers and waits for them (a napping worker finishes
// its nap: at most napMax). It is safe on a nil Pool and more than once;
// after Close, ForEachChunk runs every chunk on the caller.
func (p *Pool) Close() {
	if p == nil || p.closed.Swap(true) {
		return
	}
	p.signal(int(p.threads.Load()) - 1)
	p.workers.Wait()
}

// work is a worker's loop: wait for a new section (spinning, napping, then
// asleep), help with it, repeat.
func (p *Pool) work() {
	defer p.workers.Done()
	seen := p.seq.Load()
	for {
		if !p.await(seen) {
			return
		}
		seen = p.seq.Load()
		if s := p.cur.Load(); s != nil {
			s.run()
		}
	}
}

// await returns when p.seq differs from seen (true) or the pool is closed
// (false): it spins for p.spin, naps, then sleeps until a token on p.wake.
func (p *Pool) await(seen uint64) bool {
	deadline := time.Now().Add(p.spin)
	for i := 0; ; i++ {
		if p.seq.Load() != seen {
			return true
		}
		if p.closed.Load() {
			return false
		}
		spinPause()
		if i%512 == 511 {
			if time.Now().After(deadline) {
				break
			}
			// Let the garbage collector's workers and other goroutines
			// have this thread's P now and then.
			runtime.Gosched()
		}
	}
	// Naps of growing length next: a napping worker wakes by itself, so
	// posting a section never has to wake it (waking a goroutine puts it
	// on the caller's P, which delayed the caller by tens of µs per wake).
	for nap := napMin; nap <= napMax; nap *= 2 {
		time.Sleep(nap)
		if p.seq.Load() != seen {
			return true
		}
		if p.closed.Load() {
			return false
		}
	}
	// Then sleep until woken. Announce the sleep, then look again: a
	// section posted after the look sees asleep > 0 and sends a token; one
	// posted before it is seen here. A token left over from a section seen
	// in time only makes a later sleep end early (the loop looks again).
	p.asleep.Add(1)
	defer p.asleep.Add(-1)
	for p.seq.Load() == seen && !p.closed.Load() {
		<-p.wake
	}
	return !p.closed.Load()
}

// signal sends up to n tokens on p.wake without ever blocking (a full
// channel holds a token for every worker already).
func (p *Pool) signal(n int) {
	for range n {
		select {
		case p.wake <- struct{}{}:
		default:
			return
		}
	}
}

// forEachChunk runs f on the nc chunks of n rows with the caller and the
// workers, and returns when every chunk is done.
func (p *Pool) forEachChunk(n, nc int, f func(chunk, lo, hi int)) {
	s := &section{f: f, n: n, nc: nc}
	p.cur.Store(s)
	p.seq.Add(1)
	p.signal(int(p.asleep.Load()))
	s.run()
	// The last chunks may still run on a worker: they take at most one
	// chunk's time.
	for i := 0; s.done.Load() < int64(nc); i++ {
		spinPause()
		if i%128 == 127 {
			runtime.Gosched()
		}
	}
	p.cur.CompareAndSwap(s, nil)
}
