// Package proxcheck decides the h-Proximity property of a coloured graph
// independently of the generator in package prox (it shares no code with
// it): a graph is positive when every red node has at most MaxBlue blue
// nodes within h hops.
package proxcheck

import (
	"errors"
	"fmt"

	"github.com/spn-project/spn/data"
)

// Colours of the h-Proximity node labels.
const (
	White = 0
	Red   = 1
	Blue  = 2
	// NumColours is the size of the label vocabulary: white, red, blue and
	// the auxiliary colours 3..9.
	NumColours = 10
)

// MaxBlue is the largest number of blue nodes a red node may have within h
// hops in a positive graph (the official SP-MPNN generator's
// count_threshold - 1).
const MaxBlue = 2

// Check reports whether g is positive for h-Proximity: every red node has at
// most MaxBlue blue nodes at distance <= h. Graphs without labels, with
// labels outside 0..NumColours-1, or without a red node are errors.
func Check(g *data.Graph, h int) (positive bool, err error) {
	return CheckMax(g, h, MaxBlue)
}

// CheckMax is Check with an explicit blue-count threshold.
func CheckMax(g *data.Graph, h, maxBlue int) (bool, error) {
	if h < 1 {
		return false, fmt.Errorf("h-proximity check: h must be >= 1, got %d", h)
	}
	nbrs, err := lists(g)
	if err != nil {
		return false, fmt.Errorf("h-proximity check: %w", err)
	}
	var reds []int
	for u, c := range g.Labels {
		if c < 0 || c >= NumColours {
			return false, fmt.Errorf("h-proximity check: node %d has colour %d outside 0..%d", u, c, NumColours-1)
		}
		if c == Red {
			reds = append(reds, u)
		}
	}
	if len(reds) == 0 {
		return false, errors.New("h-proximity check: no red node")
	}
	for _, r := range reds {
		if blueWithin(nbrs, g.Labels, r, h) > maxBlue {
			return false, nil
		}
	}
	return true, nil
}

// CodeEdge reports whether the ordered pair (src, dst) is an edge the
// official SP-MPNN generator may add to the positive graph g to make its
// negative twin (graph_modifier.py, modify_add_edge): src != dst, no edge
// src–dst in g, and min_r d(dst, r) + min_b d(src, b) < h over the red
// nodes r and blue nodes b of g. Whether the new graph breaks the rule is
// Check's question, not this one's.
func CodeEdge(g *data.Graph, h, src, dst int) (bool, error) {
	if h < 1 {
		return false, fmt.Errorf("h-proximity code edge: h must be >= 1, got %d", h)
	}
	nbrs, err := lists(g)
	if err != nil {
		return false, fmt.Errorf("h-proximity code edge: %w", err)
	}
	if src < 0 || dst < 0 || src >= g.N || dst >= g.N {
		return false, fmt.Errorf("h-proximity code edge: pair (%d, %d) out of range for %d nodes", src, dst, g.N)
	}
	if src == dst {
		return false, nil
	}
	for _, v := range nbrs[src] {
		if v == dst {
			return false, nil
		}
	}
	dr, okR := nearest(nbrs, g.Labels, dst, Red)
	db, okB := nearest(nbrs, g.Labels, src, Blue)
	return okR && okB && dr+db < h, nil
}

// Noise counts the graphs of class 0 in graphs (the negatives) and those
// of them that are positive for h-Proximity (Check true): twins that do
// not violate the rule.
func Noise(graphs []data.Graph, h int) (positive, negatives int, err error) {
	for i := range graphs {
		if graphs[i].Y != 0 {
			continue
		}
		negatives++
		ok, err := Check(&graphs[i], h)
		if err != nil {
			return 0, 0, fmt.Errorf("graph %d: %w", i, err)
		}
		if ok {
			positive++
		}
	}
	return positive, negatives, nil
}

// Violating returns the share of the negatives (class 0) of graphs that
// violate h-Proximity's rule, as a negative should; the rest (Noise's
// positive) are label noise. Without negatives it is 1.
func Violating(graphs []data.Graph, h int) (float64, error) {
	noisy, negs, err := Noise(graphs, h)
	if err != nil {
		return 0, err
	}
	return 1 - float64(noisy)/float64(max(negs, 1)), nil
}

// lists returns g's adjacency as plain lists, checked as it is read.
func lists(g *data.Graph) ([][]int, error) {
	if len(g.Labels) != g.N {
		return nil, fmt.Errorf("%d labels for %d nodes", len(g.Labels), g.N)
	}
	if len(g.Adj.Ptr) != g.N+1 {
		return nil, errors.New("malformed adjacency")
	}
	nbrs := make([][]int, g.N)
	for u := 0; u < g.N; u++ {
		a, b := int(g.Adj.Ptr[u]), int(g.Adj.Ptr[u+1])
		if a < 0 || b < a || b > len(g.Adj.Idx) {
			return nil, errors.New("malformed adjacency")
		}
		for _, v := range g.Adj.Idx[a:b] {
			if v < 0 || int(v) >= g.N {
				return nil, fmt.Errorf("neighbour %d of node %d out of range", v, u)
			}
			nbrs[u] = append(nbrs[u], int(v))
		}
	}
	return nbrs, nil
}

// nearest returns the distance from s to the nearest node of colour c
// (breadth-first), and false when none is reachable.
func nearest(nbrs [][]int, colour []int32, s int, c int32) (int, bool) {
	dist := map[int]int{s: 0}
	queue := []int{s}
	for len(queue) > 0 {
		x := queue[0]
		queue = queue[1:]
		if colour[x] == c {
			return dist[x], true
		}
		for _, y := range nbrs[x] {
			if _, seen := dist[y]; !seen {
				dist[y] = dist[x] + 1
				queue = append(queue, y)
			}
		}
	}
	return 0, false
}

// blueWithin counts blue nodes at distance <= h from r by a depth-bounded
// breadth-first search.
func blueWithin(nbrs [][]int, colour []int32, r, h int) int {
	seen := map[int]bool{r: true}
	frontier := []int{r}
	count := 0
	for depth := 1; depth <= h && len(frontier) > 0; depth++ {
		var next []int
		for _, x := range frontier {
			for _, y := range nbrs[x] {
				if seen[y] {
					continue
				}
				seen[y] = true
				next = append(next, y)
				if colour[y] == Blue {
					count++
				}
			}
		}
		frontier = next
	}
	return count
}
