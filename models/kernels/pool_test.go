package kernels

import (
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestPoolRunsEveryChunkOnce checks that a Pool's ForEachChunk calls f once
// per chunk with the chunk's rows, over many sections in a row (workers
// spinning), while the workers nap, after they fell asleep, and after
// Close (the caller alone); and that Close returns with workers asleep.
func TestPoolRunsEveryChunkOnce(t *testing.T) {
	for _, threads := range []int{2, 3, 8} {
		pool := NewPool(threads, 20*time.Microsecond)
		be := CPU{Threads: threads, Pool: pool}
		check := func(what string, n int) {
			t.Helper()
			nc := NumChunks(n)
			calls := make([]atomic.Int32, nc)
			rows := make([]int32, n)
			be.ForEachChunk(n, func(ch, lo, hi int) {
				calls[ch].Add(1)
				if lo != ch*ChunkRows || hi != min(lo+ChunkRows, n) {
					t.Errorf("%s: chunk %d got rows [%d,%d)", what, ch, lo, hi)
				}
				for r := lo; r < hi; r++ {
					rows[r]++
				}
			})
			for ch := range calls {
				if c := calls[ch].Load(); c != 1 {
					t.Fatalf("threads %d, %s, n %d: chunk %d ran %d times", threads, what, n, ch, c)
				}
			}
			for r, c := range rows {
				if c != 1 {
					t.Fatalf("threads %d, %s, n %d: row %d written %d times", threads, what, n, r, c)
				}
			}
		}
		for i := range 300 {
			check("back to back", 1+i*37%2000)
		}
		time.Sleep(2 * time.Millisecond) // past the spin: workers napping
		check("after a nap", 1000)
		check("after a nap", 5)
		time.Sleep(80 * time.Millisecond) // past the naps: workers asleep
		check("after sleep", 1000)
		time.Sleep(80 * time.Millisecond)
		pool.Close() // wakes sleeping workers, or Close would not return
		pool.Close() // twice is fine
		check("after Close", 1000)
	}
}

// TestPoolSameBits checks that kernels give the same bits with a Pool,
// with fresh goroutines and serially.
func TestPoolSameBits(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const n, in, out = 1000, 24, 40
	x, dy := randMat(rng, n*in), randMat(rng, n*out)
	pool := NewPool(2, 0)
	defer pool.Close()
	run := func(be CPU) ([]float32, []float32) {
		dw, db := make([]float32, in*out), make([]float32, out)
		be.MatMulAT(dw, db, x, dy, MatMulShape{N: n, In: in, Out: out})
		return dw, db
	}
	dw0, db0 := run(CPU{Threads: 1})
	for _, be := range []CPU{{Threads: 2}, {Threads: 2, Pool: pool}} {
		for range 20 {
			dw, db := run(be)
			if !slices.Equal(dw, dw0) || !slices.Equal(db, db0) {
				t.Fatalf("MatMulAT with %+v differs from the serial result", be)
			}
		}
	}
}

// TestPoolConcurrentCallers checks that sections posted from several
// goroutines at once (each its own ForEachChunk) all complete correctly:
// a worker helps the latest section, the callers finish their own.
func TestPoolConcurrentCallers(t *testing.T) {
	pool := NewPool(2, 0)
	defer pool.Close()
	be := CPU{Threads: 2, Pool: pool}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				n := 200 + 50*g + i
				sum := make([]int64, NumChunks(n))
				be.ForEachChunk(n, func(ch, lo, hi int) {
					for r := lo; r < hi; r++ {
						sum[ch] += int64(r)
					}
				})
				var total int64
				for _, s := range sum {
					total += s
				}
				if want := int64(n) * int64(n-1) / 2; total != want {
					t.Errorf("caller %d: sum of rows %d, want %d", g, total, want)
					return
				}
			}
		}()
	}
	wg.Wait()
}

func TestNewPoolSerial(t *testing.T) {
	if p := NewPool(1, 0); p != nil {
		t.Fatal("NewPool(1) should be nil: one thread needs no workers")
	}
	var p *Pool
	p.Close() // a nil pool closes
}

// TestPoolGrow checks that a growable pool starts at its thread count (one
// thread: no worker, serial sections), that Grow adds threads and never
// removes any, that the kernels give the serial bits at every size, and
// that Close stops the grown workers.
func TestPoolGrow(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	const n, in, out = 1500, 16, 24
	x, dy := randMat(rng, n*in), randMat(rng, n*out)
	run := func(be CPU) []float32 {
		dw, db := make([]float32, in*out), make([]float32, out)
		be.MatMulAT(dw, db, x, dy, MatMulShape{N: n, In: in, Out: out})
		return append(dw, db...)
	}
	want := run(CPU{Threads: 1})
	pool := NewGrowablePool(1, 0)
	be := CPU{Threads: 1, Pool: pool}
	for _, tc := range []struct{ grow, want int }{{1, 1}, {3, 3}, {2, 3}, {5, 5}, {MaxPoolThreads + 9, MaxPoolThreads}} {
		pool.Grow(tc.grow)
		if got := pool.Threads(); got != tc.want {
			t.Fatalf("after Grow(%d): %d threads, want %d", tc.grow, got, tc.want)
		}
		for range 5 {
			if got := run(be); !slices.Equal(got, want) {
				t.Fatalf("MatMulAT on a pool grown to %d threads differs from the serial result", tc.want)
			}
		}
	}
	pool.Close()
	pool.Grow(8) // after Close: nothing starts
	if got := pool.Threads(); got != MaxPoolThreads {
		t.Fatalf("Grow after Close changed the threads to %d", got)
	}
	if got := run(be); !slices.Equal(got, want) {
		t.Fatal("MatMulAT after Close differs from the serial result")
	}
}
