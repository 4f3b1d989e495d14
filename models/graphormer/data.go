package graphormer

import (
	"fmt"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/models/rt"
)

// graphData is the per-batch structure Graphormer's ops read, derived from
// the batch when a compiled graph is pointed at it (Model.Prepare). One
// value per model is shared by all its compiled graphs; only one runs at
// a time.
type graphData struct {
	// n is the number of real nodes, ptr the graph offsets (len g+1).
	n   int
	ptr []int32
	// deg[u] is min(degree, MaxDegree), gof[u] the graph of node u; the
	// distance buckets of graph j are bucket[boff[j] : boff[j+1]],
	// row-major n_j × n_j: 0 for u = v, i for dist(u,v) = i < maxDist,
	// maxDist for every longer finite distance, maxDist+1 for unreachable
	// pairs.
	deg    []int32
	gof    []int32
	boff   []int
	bucket []uint8
}

// set derives the degrees and distance buckets of batch b.
func (gd *graphData) set(b *data.Batch, maxDist int) error {
	gd.n, gd.ptr = b.N, b.GraphPtr
	return gd.setGraphormer(b, maxDist)
}

func (gd *graphData) setGraphormer(b *data.Batch, maxDist int) error {
	n, g := b.N, b.NumGraphs
	if len(b.Hop) < maxDist {
		return fmt.Errorf("batch carries %d hop sets, graphormer needs max_dist = %d", len(b.Hop), maxDist)
	}
	gd.deg = rt.Resize(gd.deg, n)
	gd.gof = rt.Resize(gd.gof, n)
	copy(gd.gof, b.GraphOf)
	if len(b.GraphOf) != n {
		return fmt.Errorf("batch has %d graph indices for %d nodes", len(b.GraphOf), n)
	}
	for u := 0; u < n; u++ {
		gd.deg[u] = min(b.Adj.Ptr[u+1]-b.Adj.Ptr[u], MaxDegree)
	}
	if cap(gd.boff) < g+1 {
		gd.boff = make([]int, g+1)
	}
	gd.boff = gd.boff[:g+1]
	tot := 0
	for j := 0; j < g; j++ {
		gd.boff[j] = tot
		nj := int(b.GraphPtr[j+1] - b.GraphPtr[j])
		tot += nj * nj
	}
	gd.boff[g] = tot
	if cap(gd.bucket) < tot {
		gd.bucket = make([]uint8, tot)
	}
	gd.bucket = gd.bucket[:tot]
	comp := make([]int32, n)
	stack := make([]int32, 0, 64)
	unreach, far := uint8(maxDist+1), uint8(maxDist)
	for j := 0; j < g; j++ {
		p0, p1 := b.GraphPtr[j], b.GraphPtr[j+1]
		nj := int(p1 - p0)
		// Connected components of graph j (labels are local roots).
		for u := p0; u < p1; u++ {
			comp[u] = -1
		}
		for s := p0; s < p1; s++ {
			if comp[s] >= 0 {
				continue
			}
			comp[s] = s
			stack = append(stack[:0], s)
			for len(stack) > 0 {
				u := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				for _, v := range b.Adj.Row(int(u)) {
					if v < p0 || v >= p1 {
						return fmt.Errorf("adjacency edge %d→%d leaves graph %d", u, v, j)
					}
					if comp[v] < 0 {
						comp[v] = s
						stack = append(stack, v)
					}
				}
			}
		}
		blk := gd.bucket[gd.boff[j]:gd.boff[j+1]]
		for u := p0; u < p1; u++ {
			row := blk[int(u-p0)*nj : int(u-p0+1)*nj]
			for v := p0; v < p1; v++ {
				if comp[u] == comp[v] {
					row[v-p0] = far
				} else {
					row[v-p0] = unreach
				}
			}
			row[u-p0] = 0
			for i := maxDist - 1; i >= 1; i-- {
				for _, v := range b.Hop[i-1].Row(int(u)) {
					if v < p0 || v >= p1 {
						return fmt.Errorf("hop set N_%d: entry %d→%d leaves graph %d", i, u, v, j)
					}
					row[v-p0] = uint8(i)
				}
			}
		}
	}
	return nil
}
