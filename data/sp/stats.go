package sp

import (
	"context"
	"fmt"
	"math/bits"

	"github.com/spn-project/spn/data"
)

// MaxDistancesNodes bounds the nodes of a graph whose full distance
// matrix Distances builds: 4096 nodes, 2^24 distances (64 MiB). The matrix
// is for looking at one graph (spn data show); beyond this it is neither
// readable nor cheap.
const MaxDistancesNodes = 1 << 12

// MaxStatsNodes bounds the nodes of a graph whose statistics Stats
// computes: 65,536. Stats is exact, a BFS from every node, whose cost
// grows at least as n²/64 word operations (and as n³/64 on a path);
// the largest graph of any built-in dataset has under 6,000 nodes.
const MaxStatsNodes = 1 << 16

// SizeError is a graph too large for a computation whose cost or memory
// grows with the square of its nodes; it is refused before anything is
// allocated.
type SizeError struct {
	// What is the computation ("distance matrix", "statistics ...").
	What string
	// Nodes is the graph's node count, Limit the most allowed.
	Nodes, Limit int
}

func (e *SizeError) Error() string {
	return fmt.Sprintf("%s: the graph has %d nodes, at most %d are allowed (the cost grows at least with the square of the nodes)", e.What, e.Nodes, e.Limit)
}

// CheckDistances returns a *SizeError when g is over MaxDistancesNodes.
func CheckDistances(g *data.Graph) error {
	if g.N > MaxDistancesNodes {
		return &SizeError{What: "distance matrix", Nodes: g.N, Limit: MaxDistancesNodes}
	}
	return nil
}

// Distances returns the n×n matrix of shortest-path distances of g,
// row-major, with -1 for unreachable pairs. A malformed adjacency, or a
// graph over MaxDistancesNodes (CheckDistances), yields nil.
func Distances(g *data.Graph) []int32 {
	if CheckDistances(g) != nil || checkAdj(g) != nil {
		return nil
	}
	n := g.N
	out := make([]int32, n*n)
	queue := make([]int32, n)
	for u := 0; u < n; u++ {
		bfsAll(g, u, out[u*n:(u+1)*n], queue)
	}
	return out
}

// bfsAll fills dist (len n) with distances from u, -1 when unreachable, and
// returns the number of reached nodes (including u).
func bfsAll(g *data.Graph, u int, dist []int32, queue []int32) int {
	for i := range dist {
		dist[i] = -1
	}
	dist[u] = 0
	queue[0] = int32(u)
	lo, hi := 0, 1
	for lo < hi {
		x := queue[lo]
		lo++
		dx := dist[x] + 1
		for _, y := range g.Adj.Row(int(x)) {
			if dist[y] < 0 {
				dist[y] = dx
				queue[hi] = y
				hi++
			}
		}
	}
	return hi
}

// GraphStats are distance-based statistics of one graph.
type GraphStats struct {
	// Nodes and Edges count nodes and undirected edges.
	Nodes, Edges int
	// Components is the number of connected components; Connected is
	// Components <= 1.
	Components int
	Connected  bool
	// Eccentricity[u] is the largest distance from u to a node of its own
	// component.
	Eccentricity []int
	// Diameter is the largest eccentricity (the maximum over components).
	Diameter int
	// Wiener is the sum of distances over unordered reachable pairs.
	Wiener int64
	// HopSizes[i-1] is the total number of ordered pairs (u,v) at distance
	// i, i = 1..Diameter: the sum over u of |N_i(u)|.
	HopSizes []int64
	// UnreachablePairs is the number of ordered pairs in different components.
	UnreachablePairs int64
}

// Stats computes the statistics of g by an unbounded bit-parallel BFS
// from every node (64 sources per word, as in Compute). A graph over
// MaxStatsNodes is refused with a *SizeError before anything is
// allocated; ctx is checked at every BFS level, so that a cancellation
// stops the work on one large graph at once.
func Stats(ctx context.Context, g *data.Graph) (GraphStats, error) {
	if g.N > MaxStatsNodes {
		return GraphStats{}, &SizeError{What: "statistics (a BFS from every node)", Nodes: g.N, Limit: MaxStatsNodes}
	}
	if err := checkAdj(g); err != nil {
		return GraphStats{}, fmt.Errorf("graph statistics: %w", err)
	}
	n := g.N
	st := GraphStats{Nodes: n, Edges: g.NumEdges(), Eccentricity: make([]int, n)}
	var compBuf []int32
	_, st.Components = components(g, &compBuf, make([]int32, n))
	st.Connected = st.Components <= 1
	ptr, idx := g.Adj.Ptr, g.Adj.Idx
	seen := make([]uint64, n)
	frontier := make([]uint64, n)
	next := make([]uint64, n)
	var reachedPairs int64
	for b0 := 0; b0 < n; b0 += 64 {
		startBlock(seen, frontier, b0)
		for d := 1; ; d++ {
			if err := ctx.Err(); err != nil {
				return GraphStats{}, err
			}
			level := bfsLevel(ptr, idx, frontier, seen, next) // sources that reach some node at distance d
			if level == 0 {
				break
			}
			var pairs int64
			for _, acc := range next {
				pairs += int64(bits.OnesCount64(acc))
			}
			for len(st.HopSizes) < d {
				st.HopSizes = append(st.HopSizes, 0)
			}
			st.HopSizes[d-1] += pairs
			st.Wiener += int64(d) * pairs
			reachedPairs += pairs
			for m := level; m != 0; m &= m - 1 {
				st.Eccentricity[b0+bits.TrailingZeros64(m)] = d
			}
			st.Diameter = max(st.Diameter, d)
			frontier, next = next, frontier
		}
	}
	st.UnreachablePairs = int64(n)*int64(n-1) - reachedPairs
	st.Wiener /= 2
	return st, nil
}
