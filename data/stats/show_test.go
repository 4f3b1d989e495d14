package stats

import (
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
