// Package par runs the independent items of a loop on several goroutines,
// with results that do not depend on the scheduling: each item writes its
// own result, and the error returned is that of the lowest item that
// failed.
package par

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
)

// For calls do(s, i) for every i in [0, n) on up to threads goroutines
// (threads <= 0: GOMAXPROCS), each taking the next item in turn and
// passing its own scratch state s, a zero S at its start, so that do may
// reuse buffers across the items of one goroutine.
//
// It returns ctx's error if a goroutine found ctx done (each checks it
// before taking an item), else the error of the lowest i whose call
// failed: once an item fails no goroutine takes another, and every item
// below it was taken, and so run, before it, so that error is the same
// whatever the scheduling.
func For[S any](ctx context.Context, n, threads int, do func(s *S, i int) error) error {
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	threads = min(threads, n)
	var (
		next      atomic.Int64
		failed    atomic.Bool
		cancelled atomic.Bool
		wg        sync.WaitGroup
	)
	type failure struct {
		i   int
		err error
	}
	fails := make([]failure, threads)
	done := ctx.Done()
	for w := range threads {
		fails[w].i = -1
		wg.Add(1)
		go func() {
			defer wg.Done()
			var s S
			for !failed.Load() {
				select {
				case <-done: // a channel receive, not ctx.Err's mutex, for items of microseconds
					cancelled.Store(true)
					return
				default:
				}
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := do(&s, i); err != nil {
					fails[w] = failure{i, err}
					failed.Store(true)
					return
				}
			}
		}()
	}
	wg.Wait()
	if cancelled.Load() {
		return ctx.Err()
	}
	first := failure{i: -1}
	for _, f := range fails {
		if f.i >= 0 && (first.i < 0 || f.i < first.i) {
			first = f
		}
	}
	return first.err
}

// Each is For without scratch state.
func Each(ctx context.Context, n, threads int, do func(i int) error) error {
	return For(ctx, n, threads, func(_ *struct{}, i int) error { return do(i) })
}
