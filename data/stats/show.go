package stats

import (
	"fmt"
	"io"
	"strings"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/data/sp"
)

// Shown is one graph of a dataset with its shortest-path distances (the
// JSON form of spn data show).
type Shown struct {
	Dataset   string      `json:"dataset"`
	Graph     int         `json:"graph"`
	Nodes     int         `json:"nodes"`
	Edges     [][2]int    `json:"edges"`
	X         []int32     `json:"x,omitempty"`
	Attrs     [][]float32 `json:"attrs,omitempty"`
	Y         *int        `json:"y,omitempty"`
	Target    []float64   `json:"target,omitempty"`
	Distances [][]int32   `json:"distances"`
}

// Show returns graph idx of ds (which must have it) with its distance
// matrix; a graph too large for the matrix is an error.
func Show(ds *data.Dataset, idx int) (*Shown, error) {
	g := &ds.Graphs[idx]
	if err := sp.CheckDistances(g); err != nil {
		return nil, fmt.Errorf("%s graph %d: %w", ds.Name, idx, err)
	}
	dist := sp.Distances(g)
	sg := &Shown{Dataset: ds.Name, Graph: idx, Nodes: g.N, Edges: g.Edges(), X: g.Labels, Target: g.Target}
	if sg.Edges == nil {
		sg.Edges = [][2]int{}
	}
	if ds.NumTargets == 0 {
		y := g.Y
		sg.Y = &y
	}
	if g.Attrs != nil && ds.AttrDim > 0 {
		for u := 0; u < g.N; u++ {
			sg.Attrs = append(sg.Attrs, g.Attrs[u*ds.AttrDim:(u+1)*ds.AttrDim])
		}
	}
	sg.Distances = make([][]int32, g.N)
	for u := range sg.Distances {
		sg.Distances[u] = dist[u*g.N : (u+1)*g.N]
	}
	return sg, nil
}

// WriteText writes sg as spn data show prints it: a header line, the
// node labels, attributes and edges, and the distance matrix (-1 for an
// unreachable pair).
func (sg *Shown) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s graph %d: %d nodes, %d edges", sg.Dataset, sg.Graph, sg.Nodes, len(sg.Edges))
	if sg.Y != nil {
		fmt.Fprintf(&b, ", class %d", *sg.Y)
	}
	if sg.Target != nil {
		fmt.Fprintf(&b, ", targets %v", sg.Target)
	}
	b.WriteString("\n")
	if sg.X != nil {
		fmt.Fprintf(&b, "labels: %v\n", sg.X)
	}
	for u, row := range sg.Attrs {
		fmt.Fprintf(&b, "attrs %d: %v\n", u, row)
	}
	b.WriteString("edges:")
	for _, e := range sg.Edges {
		fmt.Fprintf(&b, " %d-%d", e[0], e[1])
	}
	b.WriteString("\ndistances (-1: unreachable):\n")
	for _, row := range sg.Distances {
		for j, d := range row {
			if j > 0 {
				b.WriteString(" ")
			}
			fmt.Fprintf(&b, "%2d", d)
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}
