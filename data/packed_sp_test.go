package data_test

import (
	"context"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"unsafe"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/data/sp"
)

// peptideLike returns count molecule-like graphs of about meanN nodes, as
// Peptides-func's (151 nodes, 154 bonds and a diameter of 57 on average):
// a backbone path with short side chains and a six-ring now and then.
// Every fifth graph has a second component (a short chain), so that N_∞
// is not empty.
func peptideLike(rng *rand.Rand, count, meanN int) []data.Graph {
	graphs := make([]data.Graph, count)
	for i := range graphs {
		target := meanN/2 + rng.IntN(meanN+1)
		var edges [][2]int
		n := 0
		add := func(u int) int { // a new node bonded to u (-1: none)
			v := n
			n++
			if u >= 0 {
				edges = append(edges, [2]int{u, v})
			}
			return v
		}
		prev := add(-1)
		for n < target {
			prev = add(prev)
			switch r := rng.IntN(10); {
			case r < 3: // a side chain of 1..3 atoms
				u := prev
				for range 1 + rng.IntN(3) {
					u = add(u)
				}
			case r == 3: // a six-ring on the backbone
				first := add(prev)
				u := first
				for range 4 {
					u = add(u)
				}
				edges = append(edges, [2]int{u, prev})
			}
		}
		if i%5 == 0 {
			u := add(-1)
			for range 2 {
				u = add(u)
			}
		}
		g, err := data.FromEdges(n, edges)
		if err != nil {
			panic(err)
		}
		g.Y = i % 2
		graphs[i] = g
	}
	return graphs
}

// TestPackedComputed: the hop sets of data/sp, packed, decode to
// themselves, and give the batches they give, their symmetry included.
func TestPackedComputed(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 5))
	ds := &data.Dataset{Name: "peptides", NumClasses: 2, Graphs: peptideLike(rng, 24, 40)}
	for _, kmax := range []int{1, 4} {
		for _, unr := range []bool{false, true} {
			h, err := sp.Compute(context.Background(), ds.Graphs, kmax, unr, 1)
			if err != nil {
				t.Fatal(err)
			}
			p := h.Packed()
			for i := range h.Graphs {
				if !reflect.DeepEqual(p.Graph(i), h.Graphs[i]) {
					t.Fatalf("kmax %d, N_∞ %v: graph %d decodes to other hop sets", kmax, unr, i)
				}
			}
			if !reflect.DeepEqual(p.Sizes(), h.Sizes()) || p.KeptUnreachable() != unr || p.Matches(ds) != nil {
				t.Fatalf("kmax %d, N_∞ %v: sizes %+v, want %+v; KeptUnreachable %v; Matches %v", kmax, unr, p.Sizes(), h.Sizes(), p.KeptUnreachable(), p.Matches(ds))
			}
			idxs := [][]int{rng.Perm(len(ds.Graphs)), rng.Perm(7), {3, 3, 0}}
			for _, k := range []int{0, 1, kmax - 1, kmax} {
				for _, idx := range idxs {
					opt := data.BatchOptions{K: k, Unreachable: unr}
					want, err := data.NewBatchWith(ds, h, idx, opt)
					if err != nil {
						t.Fatal(err)
					}
					got, err := data.NewBatchWith(ds, p, idx, opt)
					if err != nil {
						t.Fatal(err)
					}
					if !reflect.DeepEqual(got, want) {
						t.Fatalf("kmax %d, %+v, graphs %v: the batches differ", kmax, opt, idx)
					}
					// Shortest-path sets are symmetric: the flags are set.
					if slices.Contains(got.HopSymmetric, false) || got.UnreachableSymmetric != unr {
						t.Fatalf("kmax %d, %+v: flags %v, %v", kmax, opt, got.HopSymmetric, got.UnreachableSymmetric)
					}
				}
			}
		}
	}
}

// decodedBytes returns the bytes of h's int32 CSRs and their headers.
func decodedBytes(h *data.Hops) int {
	size := int(unsafe.Sizeof(data.GraphHops{})) * len(h.Graphs)
	csr := func(c data.CSR) int { return int(unsafe.Sizeof(c)) + 4*(len(c.Ptr)+len(c.Idx)) }
	for _, gh := range h.Graphs {
		for _, c := range gh.Hop {
			size += csr(c)
		}
		if gh.Unreachable != nil {
			size += csr(*gh.Unreachable)
		}
	}
	return size
}

// BenchmarkNewBatchPacked builds batches of 128 Peptides-like graphs (150
// nodes on average) with k = 10 hop sets, from the decoded and from the
// packed hop sets, so that the cost of decoding the packed rows shows.
// It reports the hop sets' bytes per graph of each form.
func BenchmarkNewBatchPacked(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	ds := &data.Dataset{Name: "peptides", NumClasses: 2, Graphs: peptideLike(rng, 1024, 150)}
	const k = 10
	h, err := sp.Compute(context.Background(), ds.Graphs, k, false, 0)
	if err != nil {
		b.Fatal(err)
	}
	p := h.Packed()
	idx := rng.Perm(len(ds.Graphs))[:128]
	for _, c := range []struct {
		name  string
		hops  *data.Hops
		bytes int
	}{{"decoded", h, decodedBytes(h)}, {"packed", p, data.PackedBytes(p)}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			var batch *data.Batch
			for b.Loop() {
				if batch, err = data.NewBatch(ds, c.hops, idx, k); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(c.bytes)/float64(len(ds.Graphs)), "hop-B/graph")
			entries := 0
			for _, s := range batch.Hop {
				entries += len(s.Idx)
			}
			b.ReportMetric(float64(entries), "entries/batch")
		})
	}
}
