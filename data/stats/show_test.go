package stats

import (
	"strings"
	"testing"

	"github.com/spn-project/spn/data"
)

// Show gives the graph's edges, class and distance matrix (−1 between
// components).
func TestShow(t *testing.T) {
	g, err := data.FromEdges(3, [][2]int{{0, 1}})
	if err != nil {
		t.Fatal(err)
	}
	g.Y = 1
	ds := &data.Dataset{Name: "d", Graphs: []data.Graph{g}}
	sg, err := Show(ds, 0)
	if err != nil {
		t.Fatal(err)
	}
	if sg.Nodes != 3 || len(sg.Edges) != 1 || sg.Y == nil || *sg.Y != 1 || sg.Distances[0][1] != 1 || sg.Distances[0][0] != 0 || sg.Distances[0][2] >= 0 {
		t.Errorf("shown %+v", sg)
	}
}

// WriteText prints the header with the class, the labels, the edges and
// the distance matrix with -1 between components.
func TestShownWriteText(t *testing.T) {
	y := 1
	sg := &Shown{Dataset: "d", Graph: 0, Nodes: 3, Edges: [][2]int{{0, 1}}, X: []int32{2, 0, 1}, Y: &y,
		Distances: [][]int32{{0, 1, -1}, {1, 0, -1}, {-1, -1, 0}}}
	var b strings.Builder
	if err := sg.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	want := "d graph 0: 3 nodes, 1 edges, class 1\nlabels: [2 0 1]\nedges: 0-1\n" +
		"distances (-1: unreachable):\n 0  1 -1\n 1  0 -1\n-1 -1  0\n"
	if got := b.String(); got != want {
		t.Errorf("text:\n%s\nwant:\n%s", got, want)
	}
}
