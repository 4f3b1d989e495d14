package par_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spn-project/spn/internal/par"
)

// TestForRunsEveryItemOnce: every item runs exactly once, on at most
// threads goroutines, each with scratch state of its own that it keeps
// across its items.
func TestForRunsEveryItemOnce(t *testing.T) {
	for _, c := range []struct{ n, threads int }{{0, 4}, {1, 4}, {100, 1}, {100, 3}, {1000, 0}, {5, 64}} {
		runs := make([]atomic.Int32, c.n)
		var mu sync.Mutex
		scratch := map[*int]int{} // scratch state → the items it saw
		err := par.For(context.Background(), c.n, c.threads, func(s *int, i int) error {
			runs[i].Add(1)
			*s++
			mu.Lock()
			scratch[s]++
			if *s != scratch[s] {
				t.Errorf("n=%d threads=%d: scratch state at %d after %d items: not its goroutine's own", c.n, c.threads, *s, scratch[s])
			}
			mu.Unlock()
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		for i := range runs {
			if r := runs[i].Load(); r != 1 {
				t.Errorf("n=%d threads=%d: item %d ran %d times", c.n, c.threads, i, r)
			}
		}
		if c.threads > 0 && len(scratch) > c.threads {
			t.Errorf("n=%d threads=%d: %d goroutines' scratch states", c.n, c.threads, len(scratch))
		}
	}
}

// TestForLowestError: with several failing items, finishing in an order
// the sleeps scramble, the error is always the lowest item's.
func TestForLowestError(t *testing.T) {
	fail := map[int]bool{13: true, 40: true, 77: true}
	for round := range 30 {
		err := par.Each(context.Background(), 100, 8, func(i int) error {
			time.Sleep(time.Duration((i*7919+round)%5) * 50 * time.Microsecond)
			if fail[i] {
				return fmt.Errorf("item %d", i)
			}
			return nil
		})
		if err == nil || err.Error() != "item 13" {
			t.Fatalf("round %d: %v, want item 13's error", round, err)
		}
	}
}

// TestForCancelled: a context cancelled before or during the loop is the
// error, and no item starts after the goroutines have seen it.
func TestForCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	called := false
	if err := par.Each(ctx, 10, 2, func(int) error { called = true; return nil }); !errors.Is(err, context.Canceled) || called {
		t.Errorf("cancelled before: %v, items run %v", err, called)
	}
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	var ran atomic.Int32
	err := par.Each(ctx, 1000, 4, func(i int) error {
		if ran.Add(1) == 10 {
			cancel()
		}
		return nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled during: %v", err)
	}
	if n := ran.Load(); n < 10 || n > 13 { // the other 3 goroutines finish the item each holds
		t.Errorf("cancelled at the 10th item of 4 goroutines, %d ran", n)
	}
}
