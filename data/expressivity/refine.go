// Package expressivity decides, exactly, which pairs of graphs the
// distinguishing procedures of the SP-MPNN paper (Abboud, Dimitrov, Ceylan,
// LoG 2022, Section 4) tell apart:
//
//   - 1-WL: colour refinement over direct neighbours, the upper bound of
//     message passing neural networks;
//   - the SP kernel: the multiset of per-node shortest-path distance
//     histograms (unreachable pairs counted as their own value, N_∞);
//   - SP-MPNN(k): colour refinement in which a node's new colour is its
//     colour with the multisets of colours in each of N_1..N_k (and N_∞
//     when asked), the SP-MPNN analogue of 1-WL and the upper bound of any
//     SP-MPNN with hop limit k; k = 1 is 1-WL.
//
// Colours are never hashed: each round collects every node's signature
// (its colour, then per hop set the sorted colours of its members, each
// list prefixed by its length) over all graphs together, sorts the
// distinct signatures and numbers them in that order. A colour is thus the
// rank of a canonical multiset, equal colours mean equal signatures, and
// no collision can decide a result. Refinement stops when a round leaves
// the number of colours unchanged (the new partition then equals the old
// one, since a signature starts with the old colour).
//
// Distances and hop sets come from data/sp; graph statistics (Wiener
// index, diameter, connectedness) from sp.Stats.
package expressivity

import (
	"fmt"
	"math"
	"slices"

	"github.com/spn-project/spn/data"
)

// Colouring is the stable colouring of a joint refinement.
type Colouring struct {
	// Colours[i][u] is the colour of node u of graph i, 0..Count-1.
	Colours [][]int32
	// Count is the number of distinct colours over all graphs.
	Count int
	// Rounds is the number of refinement rounds that changed the partition.
	Rounds int
}

// Histogram returns graph i's colours, sorted: its colour multiset.
func (c Colouring) Histogram(i int) []int32 {
	h := slices.Clone(c.Colours[i])
	slices.Sort(h)
	return h
}

// Separates reports whether graphs i and j have different colour
// multisets.
func (c Colouring) Separates(i, j int) bool {
	return !slices.Equal(c.Histogram(i), c.Histogram(j))
}

// initialSignatures returns the colour signature of every node before
// refinement: its label (0 when the graph has none), its categorical
// features (NodeCat) and the bits of its real attributes.
func initialSignatures(g *data.Graph) [][]int32 {
	sig := make([][]int32, g.N)
	dim, cats := 0, 0
	if g.N > 0 {
		dim, cats = len(g.Attrs)/g.N, len(g.NodeCat)/g.N
	}
	for u := range sig {
		s := make([]int32, 0, 1+2*dim)
		l := int32(0)
		if g.Labels != nil {
			l = g.Labels[u]
		}
		s = append(s, l, int32(cats))
		s = append(s, g.NodeCat[u*cats:(u+1)*cats]...)
		for _, a := range g.Attrs[u*dim : (u+1)*dim] {
			s = append(s, int32(math.Float32bits(a)))
		}
		sig[u] = s
	}
	return sig
}

// intern numbers the signatures of all graphs by the rank of each distinct
// signature in sorted order, so that equal signatures get equal colours
// whatever the node order. It returns the colours and their count.
func intern(sigs [][][]int32) ([][]int32, int) {
	type ref struct{ g, u int }
	var refs []ref
	for g := range sigs {
		for u := range sigs[g] {
			refs = append(refs, ref{g, u})
		}
	}
	slices.SortFunc(refs, func(a, b ref) int { return slices.Compare(sigs[a.g][a.u], sigs[b.g][b.u]) })
	out := make([][]int32, len(sigs))
	for g := range sigs {
		out[g] = make([]int32, len(sigs[g]))
	}
	next := int32(-1)
	for i, r := range refs {
		if i == 0 || slices.Compare(sigs[r.g][r.u], sigs[refs[i-1].g][refs[i-1].u]) != 0 {
			next++
		}
		out[r.g][r.u] = next
	}
	return out, int(next + 1)
}

// Refine runs SP-MPNN(k) colour refinement on graphs together, starting
// from their node labels, categorical node features and attributes (edge
// types and features are rejected): a node's new colour is its colour
// with the multiset of colours of N_i(u) for i = 1..k, and of N_∞(u) when
// unreachable is set. hops[i] are graph i's hop sets; they must hold at
// least k hop distances, and N_∞ when unreachable is set. k = 1 without
// unreachable is 1-WL (colour refinement).
func Refine(graphs []*data.Graph, hops []data.GraphHops, k int, unreachable bool) (Colouring, error) {
	if k < 1 {
		return Colouring{}, fmt.Errorf("colour refinement: k must be >= 1, got %d", k)
	}
	if len(hops) != len(graphs) {
		return Colouring{}, fmt.Errorf("colour refinement: %d hop sets for %d graphs", len(hops), len(graphs))
	}
	for i, g := range graphs {
		if g.EdgeType != nil || g.EdgeFeat != nil {
			return Colouring{}, fmt.Errorf("colour refinement: graph %d has edge types or features, which the refinement does not model", i)
		}
	}
	for i, h := range hops {
		if len(h.Hop) < k {
			return Colouring{}, fmt.Errorf("colour refinement: graph %d has hop sets up to %d, want %d", i, len(h.Hop), k)
		}
		if unreachable && h.Unreachable == nil {
			return Colouring{}, fmt.Errorf("colour refinement: graph %d has no N_∞ sets", i)
		}
		for j := 0; j < k; j++ {
			if h.Hop[j].Len() != graphs[i].N {
				return Colouring{}, fmt.Errorf("colour refinement: graph %d: hop set %d has %d rows for %d nodes", i, j+1, h.Hop[j].Len(), graphs[i].N)
			}
		}
	}
	sigs := make([][][]int32, len(graphs))
	for i, g := range graphs {
		sigs[i] = initialSignatures(g)
	}
	colours, count := intern(sigs)
	rounds := 0
	var members []int32
	for {
		for i, g := range graphs {
			for u := 0; u < g.N; u++ {
				s := sigs[i][u][:0]
				s = append(s, colours[i][u])
				sets := hops[i].Hop[:k]
				for j := 0; j <= len(sets); j++ {
					var row []int32
					switch {
					case j < len(sets):
						row = sets[j].Row(u)
					case unreachable:
						row = hops[i].Unreachable.Row(u)
					default:
						continue
					}
					members = members[:0]
					for _, v := range row {
						members = append(members, colours[i][v])
					}
					slices.Sort(members)
					s = append(s, int32(len(members)))
					s = append(s, members...)
				}
				sigs[i][u] = s
			}
		}
		next, n := intern(sigs)
		if n == count {
			return Colouring{Colours: colours, Count: count, Rounds: rounds}, nil
		}
		colours, count = next, n
		rounds++
	}
}
