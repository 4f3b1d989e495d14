package rt

import (
	"math/rand/v2"
	"testing"
	"unsafe"
)

// runSizes takes buffers of the sizes ns from a in one run and checks that
// they have the asked lengths, no spare capacity, 64-byte aligned starts
// and no overlap.
func runSizes(t *testing.T, a *arena, ns []int) [][]float32 {
	t.Helper()
	a.reset()
	bufs := make([][]float32, len(ns))
	for i, n := range ns {
		b := a.get(n)
		if len(b) != n || cap(b) != n {
			t.Fatalf("get(%d): len %d cap %d", n, len(b), cap(b))
		}
		if p, _ := span(b); p%64 != 0 {
			t.Fatalf("get(%d): buffer at %#x is not 64-byte aligned", n, p)
		}
		for j, o := range bufs[:i] {
			if overlap(b, o) {
				t.Fatalf("buffer %d overlaps buffer %d", i, j)
			}
		}
		bufs[i] = b
	}
	return bufs
}

// TestArenaReuses checks that a run of the sizes of an earlier run takes
// the same buffers and no new memory, and that a smaller run fits too.
func TestArenaReuses(t *testing.T) {
	a := &arena{}
	ns := []int{100, 5000, 1, 70000, 300000, 16, 17, 300000}
	first := runSizes(t, a, ns)
	held := a.Bytes()
	again := runSizes(t, a, ns)
	for i := range first {
		if unsafe.SliceData(first[i]) != unsafe.SliceData(again[i]) {
			t.Errorf("buffer %d moved between equal runs", i)
		}
	}
	runSizes(t, a, ns[:4])
	if a.Bytes() != held {
		t.Errorf("arena grew from %d to %d bytes on runs it had room for", held, a.Bytes())
	}
}

// TestArenaBounded runs many runs of shuffled, varying sizes (as batches of
// different node counts give) and checks the documented bound
// Bytes ≤ 5/4·R + C·L + minChunk and that the arena stops growing once
// the largest run has been seen.
func TestArenaBounded(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	a := &arena{}
	const runs = 300
	largest := 0
	var sizes [][]int
	for r := 0; r < runs; r++ {
		rows := 64 * (1 + rng.IntN(150)) // padded node counts
		var ns []int
		for i := 0; i < 230; i++ {
			n := rows * 64 // n×d activations
			switch i % 5 {
			case 3:
				n = rows * 64 * 3 // packed gradients of several inputs
			case 4:
				n = 64 + rng.IntN(64) // small per-graph values
			}
			ns = append(ns, n)
			largest = max(largest, n)
		}
		rng.Shuffle(len(ns), func(i, j int) { ns[i], ns[j] = ns[j], ns[i] })
		sizes = append(sizes, ns)
		runSizes(t, a, ns)
	}
	R := a.Requested()
	bound := 5*R/4 + int64(len(a.chunks))*4*int64(largest) + 4*minChunk
	t.Logf("arena holds %d MB in %d chunks for runs of at most %d MB (bound %d MB)", a.Bytes()>>20, len(a.chunks), R>>20, bound>>20)
	if a.Bytes() > bound {
		t.Errorf("arena holds %d bytes, above the bound %d", a.Bytes(), bound)
	}
	// Replaying every run takes no new memory.
	held := a.Bytes()
	for _, ns := range sizes {
		runSizes(t, a, ns)
	}
	if a.Bytes() != held {
		t.Errorf("arena grew from %d to %d bytes replaying runs it had served", held, a.Bytes())
	}
}
