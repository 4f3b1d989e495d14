package expressivity

import (
	"context"
	"fmt"
	"slices"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/data/sp"
)

// Pair is two graphs to compare.
type Pair struct {
	Name string
	A, B data.Graph
}

// GraphInfo are the distance statistics of one graph.
type GraphInfo struct {
	Nodes      int  `json:"nodes"`
	Edges      int  `json:"edges"`
	Connected  bool `json:"connected"`
	Components int  `json:"components"`
	// Diameter is the largest distance within a component.
	Diameter int `json:"diameter"`
	// Wiener is the sum of distances over unordered reachable pairs (the
	// Wiener index when the graph is connected).
	Wiener int64 `json:"wiener"`
}

// KResult is the SP-MPNN(k) refinement's answer for one k.
type KResult struct {
	K             int  `json:"k"`
	Distinguishes bool `json:"distinguishes"`
	// Rounds is the number of refinement rounds until the colouring was
	// stable.
	Rounds int `json:"rounds"`
}

// Result is what the procedures decide for one pair.
type Result struct {
	Name string    `json:"name"`
	A    GraphInfo `json:"a"`
	B    GraphInfo `json:"b"`
	// WL: 1-WL (colour refinement over direct neighbours) distinguishes.
	WL       bool `json:"wl"`
	WLRounds int  `json:"wl_rounds"`
	// SP: the SP kernel (multisets of per-node distance histograms)
	// distinguishes.
	SP bool `json:"sp"`
	// Unreachable: the SP-MPNN refinement also used N_∞.
	Unreachable bool `json:"unreachable"`
	// SPMPNN holds the SP-MPNN(k) refinement for every k asked, ascending.
	SPMPNN []KResult `json:"sp_mpnn"`
	// MinK is the smallest k asked whose refinement distinguishes, 0 if
	// none does.
	MinK int `json:"min_k"`
}

// MaxNodes bounds the node count of each graph Check accepts: it keeps
// every pair's distance, n² entries.
const MaxNodes = 4096

// Options choose what Check computes.
type Options struct {
	// Ks are the hop limits k of the SP-MPNN refinement; nil means 1..n−1
	// with n the larger node count of the pair (at least 1).
	Ks []int
	// Unreachable adds N_∞ to the SP-MPNN refinement.
	Unreachable bool
}

// DefaultKs returns 1..n−1 for the pair's larger node count n (just 1 when
// n ≤ 2).
func DefaultKs(p *Pair) []int {
	n := max(p.A.N, p.B.N)
	ks := []int{1}
	for k := 2; k <= n-1; k++ {
		ks = append(ks, k)
	}
	return ks
}

// Info returns the distance statistics of g.
func Info(g *data.Graph) (GraphInfo, error) {
	st, err := sp.Stats(context.Background(), g)
	if err != nil {
		return GraphInfo{}, err
	}
	return GraphInfo{Nodes: st.Nodes, Edges: st.Edges, Connected: st.Connected, Components: st.Components, Diameter: st.Diameter, Wiener: st.Wiener}, nil
}

// spHistograms returns the SP kernel's multiset for one graph: per node
// the counts |N_1(u)|..|N_kmax(u)| and |N_∞(u)|, sorted. With kmax at
// least the diameter, this is the node's full distance histogram.
func spHistograms(h data.GraphHops, n int) [][]int32 {
	out := make([][]int32, n)
	for u := range out {
		row := make([]int32, 0, len(h.Hop)+1)
		for _, c := range h.Hop {
			row = append(row, int32(len(c.Row(u))))
		}
		row = append(row, int32(len(h.Unreachable.Row(u))))
		out[u] = row
	}
	slices.SortFunc(out, slices.Compare)
	return out
}

// Check runs every procedure on p.
func Check(ctx context.Context, p *Pair, opt Options) (*Result, error) {
	ks := opt.Ks
	if ks == nil {
		ks = DefaultKs(p)
	}
	ks = slices.Clone(ks)
	slices.Sort(ks)
	ks = slices.Compact(ks)
	if len(ks) == 0 || ks[0] < 1 {
		return nil, fmt.Errorf("pair %s: every k must be >= 1", p.Name)
	}
	if p.A.N > MaxNodes || p.B.N > MaxNodes {
		return nil, fmt.Errorf("pair %s: %d and %d nodes; at most %d per graph (all-pairs distances are kept)", p.Name, p.A.N, p.B.N, MaxNodes)
	}
	r := &Result{Name: p.Name, Unreachable: opt.Unreachable}
	var err error
	if r.A, err = Info(&p.A); err != nil {
		return nil, fmt.Errorf("pair %s, graph a: %w", p.Name, err)
	}
	if r.B, err = Info(&p.B); err != nil {
		return nil, fmt.Errorf("pair %s, graph b: %w", p.Name, err)
	}
	// Hop sets beyond the larger diameter are empty, so SP-MPNN(k) for
	// k > kcap computes what SP-MPNN(kcap) does, and N_1..N_kcap with N_∞
	// hold every distance the SP kernel needs.
	kcap := max(r.A.Diameter, r.B.Diameter, 1)
	graphs := []*data.Graph{&p.A, &p.B}
	hops, err := sp.Compute(ctx, []data.Graph{p.A, p.B}, kcap, true, 1)
	if err != nil {
		return nil, fmt.Errorf("pair %s: %w", p.Name, err)
	}
	wl, err := Refine(graphs, hops.Graphs, 1, false)
	if err != nil {
		return nil, fmt.Errorf("pair %s: %w", p.Name, err)
	}
	r.WL, r.WLRounds = wl.Separates(0, 1), wl.Rounds
	ha, hb := spHistograms(hops.Graphs[0], p.A.N), spHistograms(hops.Graphs[1], p.B.N)
	r.SP = !slices.EqualFunc(ha, hb, slices.Equal)
	byK := map[int]KResult{}
	for _, k := range ks {
		e := min(k, kcap)
		kr, ok := byK[e]
		if !ok {
			c, err := Refine(graphs, hops.Graphs, e, opt.Unreachable)
			if err != nil {
				return nil, fmt.Errorf("pair %s: %w", p.Name, err)
			}
			kr = KResult{Distinguishes: c.Separates(0, 1), Rounds: c.Rounds}
			byK[e] = kr
		}
		kr.K = k
		r.SPMPNN = append(r.SPMPNN, kr)
		if kr.Distinguishes && r.MinK == 0 {
			r.MinK = k
		}
	}
	return r, nil
}
