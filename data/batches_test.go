package data

import (
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestBatches: the batches of Batches are NewBatch's, in order; an error
// ends the sequence after the batches before it; a caller that stops
// early leaves no goroutine behind.
func TestBatches(t *testing.T) {
	ds, hops := pathDataset([]int{3, 2, 4, 1, 5}, 2)
	groups := [][]int{{0, 1}, {2}, {3, 4, 0}, {1}}
	var got []*Batch
	for b, err := range Batches(ds, hops, groups, BatchOptions{K: 2}) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, b)
	}
	if len(got) != len(groups) {
		t.Fatalf("%d batches for %d groups", len(got), len(groups))
	}
	for i, idx := range groups {
		want, err := NewBatch(ds, hops, idx, 2)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got[i], want) {
			t.Errorf("batch %d differs from NewBatch's", i)
		}
	}

	bad := [][]int{{0}, {1}, {7}, {2}}
	n := 0
	var last error
	for b, err := range Batches(ds, hops, bad, BatchOptions{K: 2}) {
		if err != nil {
			if b != nil {
				t.Error("a batch with the error")
			}
			last = err
			continue
		}
		n++
	}
	if n != 2 || last == nil || !strings.Contains(last.Error(), "graph index 7 out of range") {
		t.Errorf("%d batches, then %v; want 2, then graph 7's error, and nothing after it", n, last)
	}

	before := runtime.NumGoroutine()
	for i := 0; i < 20; i++ {
		for range Batches(ds, hops, groups, BatchOptions{K: 2}) {
			break
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if g := runtime.NumGoroutine(); g > before {
		t.Errorf("%d goroutines after 20 sequences stopped early, %d before", g, before)
	}
}
