package prox

import (
	"fmt"
	"math/rand/v2"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/data/proxcheck"
	"github.com/spn-project/spn/data/sp"
)

// auxColours are the colours of nodes that are neither red nor blue.
var auxColours = [...]int32{proxcheck.White, 3, 4, 5, 6, 7, 8, 9}

// layered returns the graph of levels×width nodes with consecutive levels
// completely connected.
func layered(levels, width int) (data.Graph, error) {
	var edges [][2]int
	for l := 0; l+1 < levels; l++ {
		for i := 0; i < width; i++ {
			for j := 0; j < width; j++ {
				edges = append(edges, [2]int{l*width + i, (l+1)*width + j})
			}
		}
	}
	return data.FromEdges(levels*width, edges)
}

// pair draws one positive graph with numRed red nodes and its negative
// twin, both verified by proxcheck (see Config for the variants).
func pair(rng *rand.Rand, cfg Config, numRed int) (pos, neg data.Graph, err error) {
	for redraw := 0; redraw < maxRedraws; redraw++ {
		levels := cfg.Levels[0] + rng.IntN(cfg.Levels[1]-cfg.Levels[0]+1)
		width := cfg.Width[0] + rng.IntN(cfg.Width[1]-cfg.Width[0]+1)
		g, err := layered(levels, width)
		if err != nil {
			return pos, neg, err
		}
		dist := sp.Distances(&g)
		colours, ok := colour(rng, g.N, dist, cfg.H, numRed)
		if !ok {
			continue
		}
		var edge [2]int
		if cfg.Negatives == NegCode {
			edge, ok = codeEdge(rng, &g, dist, colours, cfg.H)
		} else {
			edge, ok = breakingEdge(rng, &g, dist, colours, cfg.H)
		}
		if !ok {
			continue
		}
		pos = g
		if cfg.Balanced {
			keep, ok := keepingEdge(rng, colouredGraph{G: &g, Dist: dist, Colours: colours}, cfg.H, width, edge)
			if !ok {
				continue
			}
			if pos, err = data.FromEdges(g.N, append(g.Edges(), keep)); err != nil {
				return pos, neg, err
			}
		}
		pos.Labels = colours
		pos.Y = 1
		neg, err = data.FromEdges(g.N, append(g.Edges(), edge))
		if err != nil {
			return pos, neg, err
		}
		neg.Labels = append([]int32(nil), colours...)
		neg.Y = 0
		if err := verify(&g, &pos, &neg, edge, cfg); err != nil {
			return pos, neg, fmt.Errorf("%d levels × %d, %d red: %w", levels, width, numRed, err)
		}
		return pos, neg, nil
	}
	return pos, neg, fmt.Errorf("no valid pair after %d graphs (h=%d, %d red); widen the level/width ranges", maxRedraws, cfg.H, numRed)
}

// verify checks a pair with package proxcheck: the positive graph is
// positive; the twin is negative ("strict") or its edge, added to the
// layered graph g coloured like the pair, satisfies the official rule in
// one orientation ("code").
func verify(g, pos, neg *data.Graph, edge [2]int, cfg Config) error {
	if ok, err := proxcheck.Check(pos, cfg.H); err != nil || !ok {
		return fmt.Errorf("checker rejects the positive graph: positive=%v, %v", ok, err)
	}
	if cfg.Negatives == NegCode {
		base := *g
		base.Labels = pos.Labels
		a, err := proxcheck.CodeEdge(&base, cfg.H, edge[0], edge[1])
		if err != nil {
			return err
		}
		b, err := proxcheck.CodeEdge(&base, cfg.H, edge[1], edge[0])
		if err != nil {
			return err
		}
		if !a && !b {
			return fmt.Errorf("checker rejects the negative graph's edge %v under the official rule", edge)
		}
		return nil
	}
	if ok, err := proxcheck.Check(neg, cfg.H); err != nil || ok {
		return fmt.Errorf("checker rejects the negative graph (edge %v): positive=%v, %v", edge, ok, err)
	}
	return nil
}

// colour runs the official rejection-sampling colouring: numRed red nodes,
// then blue nodes one at a time among the candidates that keep every red
// node at or below MaxBlue blue nodes within h, until every red node has
// exactly MaxBlue; then 0..3 distant blue nodes and auxiliary colours.
func colour(rng *rand.Rand, n int, dist []int32, h, numRed int) ([]int32, bool) {
	const taken = -1
	within := make([][]int8, n) // within[x][i]: x within h of red i, or taken
	for try := 0; try < ColouringTries; try++ {
		colours := make([]int32, n)
		reds := rng.Perm(n)[:numRed]
		for x := range within {
			within[x] = make([]int8, numRed)
			for i, r := range reds {
				if d := dist[r*n+x]; d >= 0 && int(d) <= h {
					within[x][i] = 1
				}
			}
		}
		for _, r := range reds {
			colours[r] = proxcheck.Red
			for i := range within[r] {
				within[r][i] = taken
			}
		}
		count := make([]int, numRed)
		ok := true
		for {
			need := false
			for _, c := range count {
				if c < proxcheck.MaxBlue {
					need = true
				}
			}
			if !need {
				break
			}
			var cands []int
			for x := 0; x < n; x++ {
				if within[x][0] == taken {
					continue
				}
				fits, any := true, false
				for i, w := range within[x] {
					if w == 1 {
						any = true
						if count[i]+1 > proxcheck.MaxBlue {
							fits = false
						}
					}
				}
				if fits && any {
					cands = append(cands, x)
				}
			}
			if len(cands) == 0 {
				ok = false
				break
			}
			b := cands[rng.IntN(len(cands))]
			for i, w := range within[b] {
				if w == 1 {
					count[i]++
				}
			}
			for i := range within[b] {
				within[b][i] = taken
			}
			colours[b] = proxcheck.Blue
		}
		if !ok {
			continue
		}
		// Distant blue nodes: farther than h from every red node.
		var outer []int
		for x := 0; x < n; x++ {
			far := true
			for _, w := range within[x] {
				if w != 0 {
					far = false
				}
			}
			if far {
				outer = append(outer, x)
			}
		}
		if k := rng.IntN(4); len(outer) >= k {
			rng.Shuffle(len(outer), func(i, j int) { outer[i], outer[j] = outer[j], outer[i] })
			for _, x := range outer[:k] {
				colours[x] = proxcheck.Blue
			}
		}
		for x := range colours {
			if colours[x] == proxcheck.White {
				colours[x] = auxColours[rng.IntN(len(auxColours))]
			}
		}
		return colours, true
	}
	return nil, false
}

// breakingEdge draws uniformly a non-edge {u,v} whose addition brings a blue
// node b within h of a red node r with dist(r,b) > h: the new distance is
// min over orientations of dist(r,u) + 1 + dist(v,b).
func breakingEdge(rng *rand.Rand, g *data.Graph, dist []int32, colours []int32, h int) ([2]int, bool) {
	n := g.N
	d := distFunc(dist, n)
	reds, blues := redsAndBlues(colours)
	// near[r][v] = distance from v to the nearest blue farther than h from r.
	near := make([][]int, len(reds))
	for i, r := range reds {
		near[i] = make([]int, n)
		for v := 0; v < n; v++ {
			near[i][v] = 1 << 30
			for _, b := range blues {
				if d(r, b) > h {
					near[i][v] = min(near[i][v], d(v, b))
				}
			}
		}
	}
	adj := edgeSet(g)
	var cands [][2]int
	for u := 0; u < n; u++ {
		for v := u + 1; v < n; v++ {
			if adj[[2]int{u, v}] {
				continue
			}
			for i, r := range reds {
				if d(r, u)+1+near[i][v] <= h || d(r, v)+1+near[i][u] <= h {
					cands = append(cands, [2]int{u, v})
					break
				}
			}
		}
	}
	if len(cands) == 0 {
		return [2]int{}, false
	}
	return cands[rng.IntN(len(cands))], true
}

// edgeSet returns the set of edges of g, keyed {u, v} with u < v.
func edgeSet(g *data.Graph) map[[2]int]bool {
	adj := make(map[[2]int]bool, g.NumEdges())
	for _, e := range g.Edges() {
		adj[e] = true
	}
	return adj
}

// distFunc returns the distance lookup of an n-node distance matrix, with
// unreachable pairs at 1<<30.
func distFunc(dist []int32, n int) func(a, b int) int {
	return func(a, b int) int {
		x := dist[a*n+b]
		if x < 0 {
			return 1 << 30
		}
		return int(x)
	}
}

// codeCandidates lists the ordered non-edges (src, dst), src != dst, of
// the official rule: min_r d(dst, r) + min_b d(src, b) < h, r over the red
// and b over the blue nodes (graph_modifier.py, modify_add_edge).
func codeCandidates(g *data.Graph, dist []int32, colours []int32, h int) [][2]int {
	n := g.N
	d := distFunc(dist, n)
	minRed, minBlue := make([]int, n), make([]int, n)
	for x := 0; x < n; x++ {
		minRed[x], minBlue[x] = 1<<30, 1<<30
		for y, c := range colours {
			switch c {
			case proxcheck.Red:
				minRed[x] = min(minRed[x], d(x, y))
			case proxcheck.Blue:
				minBlue[x] = min(minBlue[x], d(x, y))
			}
		}
	}
	adj := edgeSet(g)
	var cands [][2]int
	for src := 0; src < n; src++ {
		for dst := 0; dst < n; dst++ {
			if src == dst || adj[[2]int{min(src, dst), max(src, dst)}] {
				continue
			}
			if minRed[dst]+minBlue[src] < h {
				cands = append(cands, [2]int{src, dst})
			}
		}
	}
	return cands
}

// codeEdge draws the twin's edge by the official rule: uniformly among
// the ordered candidates of codeCandidates (so a pair valid in both
// orientations is twice as likely, as in the official code).
func codeEdge(rng *rand.Rand, g *data.Graph, dist []int32, colours []int32, h int) ([2]int, bool) {
	cands := codeCandidates(g, dist, colours, h)
	if len(cands) == 0 {
		return [2]int{}, false
	}
	e := cands[rng.IntN(len(cands))]
	return [2]int{min(e[0], e[1]), max(e[0], e[1])}, true
}

// colouredGraph is a layered graph G of a pair being drawn with its
// all-pairs distances Dist (sp.Distances) and the colours of its nodes
// (proxcheck.Red, Blue or neither).
type colouredGraph struct {
	G       *data.Graph
	Dist    []int32
	Colours []int32
}

// keepingEdge draws uniformly a non-edge {u, v} of cg.G whose addition
// leaves every red node with at most MaxBlue blue nodes within h (new
// distances min(d(a,b), d(a,u)+1+d(v,b), d(a,v)+1+d(u,b))), among those
// spanning as many levels (of width nodes) as twin when there are any,
// else among all.
func keepingEdge(rng *rand.Rand, cg colouredGraph, h, width int, twin [2]int) ([2]int, bool) {
	g, dist, colours := cg.G, cg.Dist, cg.Colours
	n := g.N
	d := distFunc(dist, n)
	reds, blues := redsAndBlues(colours)
	span := func(e [2]int) int { return abs(e[0]/width - e[1]/width) }
	want := span(twin)
	adj := edgeSet(g)
	var same, all [][2]int
	for u := 0; u < n; u++ {
		for v := u + 1; v < n; v++ {
			if adj[[2]int{u, v}] {
				continue
			}
			keeps := true
			for _, r := range reds {
				count := 0
				for _, b := range blues {
					if min(d(r, b), d(r, u)+1+d(v, b), d(r, v)+1+d(u, b)) <= h {
						count++
					}
				}
				if count > proxcheck.MaxBlue {
					keeps = false
					break
				}
			}
			if !keeps {
				continue
			}
			all = append(all, [2]int{u, v})
			if span([2]int{u, v}) == want {
				same = append(same, [2]int{u, v})
			}
		}
	}
	if len(same) > 0 {
		return same[rng.IntN(len(same))], true
	}
	if len(all) == 0 {
		return [2]int{}, false
	}
	return all[rng.IntN(len(all))], true
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// redsAndBlues returns the red and the blue nodes of a colouring, in node
// order.
func redsAndBlues(colours []int32) (reds, blues []int) {
	for x, c := range colours {
		switch c {
		case proxcheck.Red:
			reds = append(reds, x)
		case proxcheck.Blue:
			blues = append(blues, x)
		}
	}
	return reds, blues
}
