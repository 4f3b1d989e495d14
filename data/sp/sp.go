// Package sp computes shortest-path hop sets N_i(u) = {v : dist(u,v) = i}
// of unweighted graphs by breadth-first search, and the distance-based
// statistics derived from them (eccentricity, diameter, Wiener index,
// connectivity).
package sp

import (
	"context"
	"fmt"
	"math"
	"math/bits"
	"slices"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/internal/par"
)

// DefaultKMax is the default largest hop distance.
const DefaultKMax = 10

// Compute returns the hop sets N_1..N_kmax of every graph, and N_∞ (nodes
// in other connected components) when keepUnreachable is set, with their
// symmetry recorded (data.Hops.RecordSymmetry). Graphs are
// processed by up to threads goroutines (threads <= 0 means GOMAXPROCS);
// each result is stored at its graph's index, so the output does not depend
// on scheduling. A graph may have at most MaxEntries entries (ComputeLimit).
func Compute(ctx context.Context, graphs []data.Graph, kmax int, keepUnreachable bool, threads int) (*data.Hops, error) {
	return ComputeLimit(ctx, graphs, kmax, keepUnreachable, threads, MaxEntries)
}

// MaxEntries is the most hop-set entries one graph may have, its N_1..N_kmax
// (and N_∞) together: the row offsets of a data.CSR are int32.
const MaxEntries = math.MaxInt32

// ComputeLimit is Compute for at most limit entries per graph (limit ≤ 0
// or above MaxEntries: MaxEntries). A graph with more is a *LimitError,
// found before its hop sets are built past the limit: a hub's N_2 grows
// with the square of its size.
func ComputeLimit(ctx context.Context, graphs []data.Graph, kmax int, keepUnreachable bool, threads int, limit int64) (*data.Hops, error) {
	if kmax < 1 {
		return nil, fmt.Errorf("computing hop sets: kmax must be >= 1, got %d", kmax)
	}
	if limit <= 0 || limit > MaxEntries {
		limit = MaxEntries
	}
	for i := range graphs {
		if err := checkAdj(&graphs[i]); err != nil {
			return nil, fmt.Errorf("computing hop sets: graph %d: %w", i, err)
		}
	}
	out := &data.Hops{KMax: kmax, Graphs: make([]data.GraphHops, len(graphs))}
	err := par.For(ctx, len(graphs), threads, func(s *scratch, i int) error {
		s.limit = limit
		gh, ok := s.graphHops(&graphs[i], kmax, keepUnreachable)
		if !ok {
			return &LimitError{Graph: i, Limit: limit}
		}
		out.Graphs[i] = gh
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("computing hop sets: %w", err)
	}
	out.RecordSymmetry()
	return out, nil
}

// LimitError says that graph Graph has more than Limit hop-set entries.
type LimitError struct {
	Graph int
	Limit int64
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("graph %d: its hop sets have more than %d entries", e.Graph, e.Limit)
}

// checkAdj verifies the adjacency is a well-formed CSR over g.N nodes, so
// the BFS below cannot index out of range.
func checkAdj(g *data.Graph) error {
	if g.N < 0 {
		return fmt.Errorf("negative node count %d", g.N)
	}
	if err := data.ValidateCSR(g.Adj, g.N, g.N, true); err != nil {
		return fmt.Errorf("adjacency: %w", err)
	}
	// Symmetry makes the transpose in graphHops fill every row exactly.
	for u := 0; u < g.N; u++ {
		for _, v := range g.Adj.Row(u) {
			if _, ok := slices.BinarySearch(g.Adj.Row(int(v)), int32(u)); !ok {
				return fmt.Errorf("adjacency is not symmetric: edge %d->%d has no reverse", u, v)
			}
		}
	}
	return nil
}

// scratch is a worker's reusable BFS state.
type scratch struct {
	queue                []int32
	comp                 []int32
	seen, frontier, next []uint64
	cnt                  [64]int32
	pos                  [64]int32
	// raw[d] collects the entries of N_{d+1} of the current graph; it is
	// reused across graphs and copied out at exact size.
	raw [][]int32
	// entries counts those of the current graph; past limit, emit stops
	// and sets over.
	entries, limit int64
	over           bool
}

func (s *scratch) reset(n int) {
	if cap(s.queue) < n {
		s.queue = make([]int32, n)
		s.seen = make([]uint64, n)
		s.frontier = make([]uint64, n)
		s.next = make([]uint64, n)
	}
	s.queue = s.queue[:n]
	s.seen = s.seen[:n]
	s.frontier = s.frontier[:n]
	s.next = s.next[:n]
}

func (s *scratch) resetRaw(kmax int) {
	for len(s.raw) < kmax {
		s.raw = append(s.raw, nil)
	}
	for d := range s.raw {
		s.raw[d] = s.raw[d][:0]
	}
}

// startBlock starts a bit-parallel BFS from the (up to 64) sources
// b0, b0+1, ...: bit j of frontier and seen marks source b0+j at distance
// 0. It returns the number of sources.
func startBlock(seen, frontier []uint64, b0 int) int {
	k := min(64, len(seen)-b0)
	clear(seen)
	clear(frontier)
	for j := 0; j < k; j++ {
		frontier[b0+j] = 1 << j
		seen[b0+j] = 1 << j
	}
	return k
}

// bfsLevel advances the bit-parallel BFS by one level: next[v] is the set
// of sources first reaching v at this distance (the OR of frontier over
// v's neighbours, minus seen[v]), and seen is updated. It returns the union
// of next: the sources that reached some node at this distance.
func bfsLevel(ptr, idx []int32, frontier, seen, next []uint64) uint64 {
	var level uint64
	for v := range next {
		var acc uint64
		for _, w := range idx[ptr[v]:ptr[v+1]] {
			acc |= frontier[w]
		}
		acc &^= seen[v]
		next[v] = acc
		seen[v] |= acc
		level |= acc
	}
	return level
}

// graphHops runs a multi-source BFS (64 sources per machine word, Then et
// al., VLDB 2015) truncated at kmax. For a batch of sources b0..b0+63, bit
// j of frontier[v] says v is at the current distance from source b0+j; one
// level is next[v] = OR of frontier over v's neighbours, minus seen[v].
// Rows b0..b0+63 of N_d are then filled by scanning v in increasing order,
// so every row comes out sorted without a sort, and batches are appended
// in source order. It returns false, and no hop sets, when they would
// have more than s.limit entries.
func (s *scratch) graphHops(g *data.Graph, kmax int, keepUnreachable bool) (data.GraphHops, bool) {
	return s.graphHopsBy(g, kmax, keepUnreachable, g.N > sparseFrom)
}

// graphHopsBy is graphHops with the BFS variant chosen by the caller
// (tests compare the two).
func (s *scratch) graphHopsBy(g *data.Graph, kmax int, keepUnreachable, sparse bool) (data.GraphHops, bool) {
	n := g.N
	s.reset(n)
	s.resetRaw(kmax)
	s.entries, s.over = 0, false
	if s.limit == 0 {
		s.limit = MaxEntries
	}
	ptr, idx := g.Adj.Ptr, g.Adj.Idx
	hops := make([]data.CSR, kmax)
	for i := range hops {
		hops[i].Ptr = make([]int32, n+1)
	}
	seen, frontier, next := s.seen, s.frontier, s.next
	if sparse {
		s.sparseHops(g, kmax, hops)
	}
	for b0 := 0; !sparse && !s.over && b0 < n; b0 += 64 {
		k := startBlock(seen, frontier, b0)
		d := 1
		for ; d <= kmax && !s.over; d++ {
			any := bfsLevel(ptr, idx, frontier, seen, next)
			s.raw[d-1] = s.emit(hops[d-1].Ptr, s.raw[d-1], next, b0, k)
			if any == 0 {
				d++
				break
			}
			frontier, next = next, frontier
		}
		for ; d <= kmax; d++ {
			for j := 0; j < k; j++ {
				hops[d-1].Ptr[b0+j+1] = int32(len(s.raw[d-1]))
			}
		}
	}
	if s.over {
		return data.GraphHops{}, false
	}
	for d := range hops {
		if len(s.raw[d]) > 0 {
			hops[d].Idx = slices.Clone(s.raw[d])
		}
	}
	gh := data.GraphHops{Hop: hops}
	if keepUnreachable {
		c, ok := s.unreachable(g)
		if !ok {
			return data.GraphHops{}, false
		}
		gh.Unreachable = &c
	}
	return gh, true
}

// take counts total more entries of the current graph and reports whether
// they fit its limit (setting over when not).
func (s *scratch) take(total int64) bool {
	if s.over || s.entries+total > s.limit {
		s.over = true
		return false
	}
	s.entries += total
	return true
}

// sparseFrom is the node count above which graphHops visits only the
// nodes each block of sources reaches (sparseHops) instead of scanning
// all n nodes per level: the dense scan costs n²/64 · kmax, which is
// quadratic for the large graphs spn predict may get, while the sparse
// one costs what the 64 sources' kmax-balls hold (plus a sort per level).
// Both give the same bytes.
const sparseFrom = 4096

// sparseHops fills hops (row pointers allocated, raw entries in s.raw)
// like the dense loop of graphHops, touching per block of 64 sources only
// the nodes within kmax hops of them: the frontier is a list, the
// neighbours of frontier nodes are pushed into next, and the reached
// nodes of each level are sorted so that rows come out sorted.
func (s *scratch) sparseHops(g *data.Graph, kmax int, hops []data.CSR) {
	n := g.N
	ptr, idx := g.Adj.Ptr, g.Adj.Idx
	seen, frontier, next := s.seen, s.frontier, s.next
	clear(seen)
	clear(frontier)
	clear(next)
	var touched, front, reached []int32
	for b0 := 0; b0 < n; b0 += 64 {
		k := min(64, n-b0)
		touched, front = touched[:0], front[:0]
		for j := 0; j < k; j++ {
			frontier[b0+j] = 1 << j
			seen[b0+j] = 1 << j
			touched = append(touched, int32(b0+j))
			front = append(front, int32(b0+j))
		}
		d := 1
		for ; d <= kmax; d++ {
			reached = reached[:0]
			for _, v := range front {
				f := frontier[v]
				for _, w := range idx[ptr[v]:ptr[v+1]] {
					acc := f &^ seen[w]
					if acc == 0 {
						continue
					}
					if next[w] == 0 {
						reached = append(reached, w)
					}
					next[w] |= acc
				}
			}
			slices.Sort(reached)
			s.raw[d-1] = s.emitList(hops[d-1].Ptr, s.raw[d-1], next, reached, b0, k)
			if s.over {
				return
			}
			for _, v := range front {
				frontier[v] = 0
			}
			for _, w := range reached {
				seen[w] |= next[w]
				touched = append(touched, w)
			}
			frontier, next = next, frontier
			front, reached = reached, front
			if len(front) == 0 {
				d++
				break
			}
		}
		for ; d <= kmax; d++ {
			for j := 0; j < k; j++ {
				hops[d-1].Ptr[b0+j+1] = int32(len(s.raw[d-1]))
			}
		}
		for _, v := range front {
			frontier[v] = 0
		}
		for _, v := range touched {
			seen[v] = 0
		}
	}
}

// rows takes the entries counted in s.cnt[:k] against the graph's limit
// and lays out rows b0..b0+k-1 of a hop CSR after idx's entries: their
// row pointers in ptr, in s.pos where each row's next entry goes. It
// returns idx grown to hold them and whether there are any to fill
// (false, idx unchanged, also past the limit).
func (s *scratch) rows(ptr, idx []int32, b0, k int) ([]int32, bool) {
	var sum int64
	for _, c := range s.cnt[:k] {
		sum += int64(c)
	}
	if !s.take(sum) {
		return idx, false
	}
	base, total := int32(len(idx)), int32(0)
	for j := 0; j < k; j++ {
		s.pos[j] = base + total
		total += s.cnt[j]
		ptr[b0+j+1] = base + total
	}
	if total == 0 {
		return idx, false
	}
	return slices.Grow(idx, int(total))[:int(base+total)], true
}

// emitList is emit over the nodes of list only (sorted, the only nodes
// whose level mask may be non-zero).
func (s *scratch) emitList(ptr, idx []int32, level []uint64, list []int32, b0, k int) []int32 {
	cnt := &s.cnt
	clear(cnt[:])
	for _, v := range list {
		for m := level[v]; m != 0; m &= m - 1 {
			cnt[bits.TrailingZeros64(m)]++
		}
	}
	idx, fill := s.rows(ptr, idx, b0, k)
	if !fill {
		return idx
	}
	for _, v := range list {
		for m := level[v]; m != 0; m &= m - 1 {
			j := bits.TrailingZeros64(m)
			idx[s.pos[j]] = v
			s.pos[j]++
		}
	}
	return idx
}

// emit appends rows b0..b0+k-1 of one hop CSR (row pointers ptr, entries
// idx) from the level masks and returns the extended entries.
func (s *scratch) emit(ptr, idx []int32, level []uint64, b0, k int) []int32 {
	cnt := &s.cnt
	clear(cnt[:])
	for _, m := range level {
		for m != 0 {
			cnt[bits.TrailingZeros64(m)]++
			m &= m - 1
		}
	}
	idx, fill := s.rows(ptr, idx, b0, k)
	if !fill {
		return idx
	}
	for v, m := range level {
		for m != 0 {
			j := bits.TrailingZeros64(m)
			idx[s.pos[j]] = int32(v)
			s.pos[j]++
			m &= m - 1
		}
	}
	return idx
}

// unreachable returns N_∞(u) for every u: the nodes of other components.
func (s *scratch) unreachable(g *data.Graph) (data.CSR, bool) {
	n := g.N
	comp, ncomp := components(g, &s.comp, s.queue)
	out := data.CSR{Ptr: make([]int32, n+1)}
	if ncomp <= 1 {
		return out, true
	}
	size := make([]int64, ncomp)
	for _, c := range comp {
		size[c]++
	}
	var total int64
	for _, c := range comp {
		total += int64(n) - size[c]
	}
	if !s.take(total) {
		return data.CSR{}, false
	}
	out.Idx = make([]int32, 0, total)
	for u := 0; u < n; u++ {
		for v := 0; v < n; v++ {
			if comp[v] != comp[u] {
				out.Idx = append(out.Idx, int32(v))
			}
		}
		out.Ptr[u+1] = int32(len(out.Idx))
	}
	return out, true
}

// components labels the connected components of g 0..k-1 in order of their
// smallest node, using buf for the labels and queue (len >= g.N) as BFS
// queue; it returns the labels and k.
func components(g *data.Graph, buf *[]int32, queue []int32) ([]int32, int) {
	n := g.N
	if cap(*buf) < n {
		*buf = make([]int32, n)
	}
	comp := (*buf)[:n]
	for i := range comp {
		comp[i] = -1
	}
	k := 0
	for s := 0; s < n; s++ {
		if comp[s] >= 0 {
			continue
		}
		comp[s] = int32(k)
		queue[0] = int32(s)
		lo, hi := 0, 1
		for lo < hi {
			x := queue[lo]
			lo++
			for _, y := range g.Adj.Row(int(x)) {
				if comp[y] < 0 {
					comp[y] = int32(k)
					queue[hi] = y
					hi++
				}
			}
		}
		k++
	}
	return comp, k
}
