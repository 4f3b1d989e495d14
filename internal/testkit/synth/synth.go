// Package synth generates small labelled graph tasks with known answers for
// spn's model tests and benchmarks (not for experiments: those use the
// datasets of data/...).
package synth

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/data/sp"
)

// Colours of the Layered task.
const (
	ColourPlain = 0
	ColourRed   = 1
	ColourBlue  = 2
)

// Layered returns n connected layered graphs — levels drawn from
// levels[0]..levels[1], each of width[0]..width[1] nodes, every node joined
// to one to three nodes of the next level — with one red and one blue node.
// A graph's class is 1 when dist(red, blue) ≤ h, else 0; classes are
// balanced by rejection. The dataset has one 60/20/20 split; hop sets are
// computed up to kmax.
func Layered(seed uint64, n, h int, levels, width [2]int, kmax int) (*data.Dataset, *data.Hops, error) {
	if n < 2 || h < 1 || levels[0] < 1 || levels[1] < levels[0] || width[0] < 1 || width[1] < width[0] {
		return nil, nil, fmt.Errorf("synth.Layered: bad parameters n=%d h=%d levels=%v width=%v", n, h, levels, width)
	}
	rng := rand.New(rand.NewPCG(seed, 0x1a7e))
	ds := &data.Dataset{Name: fmt.Sprintf("layered-h%d", h), NumLabels: 3, NumClasses: 2}
	want := [2]int{n / 2, n - n/2}
	for tries := 0; len(ds.Graphs) < n; tries++ {
		if tries > 200*n {
			return nil, nil, fmt.Errorf("synth.Layered: could not balance classes for h=%d", h)
		}
		g, err := layeredGraph(rng, h, levels, width)
		if err != nil {
			return nil, nil, err
		}
		if want[g.Y] == 0 {
			continue
		}
		want[g.Y]--
		ds.Graphs = append(ds.Graphs, g)
	}
	perm := rng.Perm(n)
	a, b := n*6/10, n*8/10
	ds.Splits = []data.Split{{Train: perm[:a], Val: perm[a:b], Test: perm[b:]}}
	hops, err := sp.Compute(context.Background(), ds.Graphs, kmax, false, 1)
	if err != nil {
		return nil, nil, fmt.Errorf("synth.Layered: %w", err)
	}
	return ds, hops, nil
}

func layeredGraph(rng *rand.Rand, h int, levels, width [2]int) (data.Graph, error) {
	nl := levels[0] + rng.IntN(levels[1]-levels[0]+1)
	var start []int
	n := 0
	for l := 0; l < nl; l++ {
		start = append(start, n)
		n += width[0] + rng.IntN(width[1]-width[0]+1)
	}
	start = append(start, n)
	var edges [][2]int
	for l := 0; l+1 < nl; l++ {
		for u := start[l]; u < start[l+1]; u++ {
			for e := 0; e < 1+rng.IntN(3); e++ {
				v := start[l+1] + rng.IntN(start[l+2]-start[l+1])
				edges = append(edges, [2]int{u, v})
			}
		}
		// Every node of the next level gets a parent, so the graph is connected.
		for v := start[l+1]; v < start[l+2]; v++ {
			edges = append(edges, [2]int{start[l] + rng.IntN(start[l+1]-start[l]), v})
		}
	}
	g, err := data.FromEdges(n, edges)
	if err != nil {
		return g, fmt.Errorf("synth.Layered: %w", err)
	}
	g.Labels = make([]int32, n)
	red := rng.IntN(n)
	blue := rng.IntN(n - 1)
	if blue >= red {
		blue++
	}
	g.Labels[red], g.Labels[blue] = ColourRed, ColourBlue
	d := sp.Distances(&g)
	if d[red*n+blue] <= int32(h) {
		g.Y = 1
	}
	return g, nil
}
