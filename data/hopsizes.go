package data

// HopSizes are the sizes of a dataset's hop sets: how many (u, v) pairs
// each holds over all graphs.
type HopSizes struct {
	// Entries[d-1] are the pairs of N_d, d = 1..KMax.
	Entries []int
	// Unreachable are the pairs of N_∞, in Split graphs of more than one
	// component (0 when N_∞ was not kept).
	Unreachable, Split int
}

// Total is the number of pairs of all the hop sets, N_∞'s included.
func (s HopSizes) Total() int {
	t := s.Unreachable
	for _, e := range s.Entries {
		t += e
	}
	return t
}

// Sizes counts the pairs of every hop set of h, packed or not (a packed
// h's counts are stored, nothing is decoded).
func (h *Hops) Sizes() HopSizes {
	s := HopSizes{Entries: make([]int, h.KMax)}
	if p := h.packed; p != nil {
		for g := range p.numGraphs() {
			for i := 1; i <= h.KMax; i++ {
				s.Entries[i-1] += max(int(p.nnz[p.hop(g, i)]), 0)
			}
			if u := p.unr(g); u >= 0 && p.nnz[u] > 0 {
				s.Unreachable += int(p.nnz[u])
				s.Split++
			}
		}
		return s
	}
	for _, gh := range h.Graphs {
		for d, c := range gh.Hop {
			s.Entries[d] += len(c.Idx)
		}
		if gh.Unreachable != nil && len(gh.Unreachable.Idx) > 0 {
			s.Unreachable += len(gh.Unreachable.Idx)
			s.Split++
		}
	}
	return s
}
