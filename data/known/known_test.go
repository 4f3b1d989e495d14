package known_test

import (
	"slices"
	"testing"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/data/known"
)

// graphsOf returns a dataset of graphs with n[i] nodes and edges[i].
func graphsOf(t *testing.T, n []int, edges [][][2]int) *data.Dataset {
	t.Helper()
	ds := &data.Dataset{Name: "edges"}
	for i := range n {
		g, err := data.FromEdges(n[i], edges[i])
		if err != nil {
			t.Fatal(err)
		}
		ds.Graphs = append(ds.Graphs, g)
	}
	return ds
}

// TestEdgeEditsChangeFigures: moving one edge, within its graph or to
// another graph, changes a figure, as the package documents ("an edit of
// one label, node or edge changes at least one").
func TestEdgeEditsChangeFigures(t *testing.T) {
	for _, c := range []struct {
		name string
		n    []int
		a, b [][][2]int
	}{
		// (0+1)(5+1) = (1+1)(2+1): a sum of products of the ends cannot
		// tell these apart.
		{"within a graph", []int{6}, [][][2]int{{{0, 5}, {3, 4}}}, [][][2]int{{{1, 2}, {3, 4}}}},
		{"to another graph", []int{3, 3}, [][][2]int{{{0, 1}, {1, 2}}, {{0, 1}}}, [][][2]int{{{0, 1}}, {{0, 1}, {1, 2}}}},
		{"to another endpoint pair", []int{8}, [][][2]int{{{0, 7}, {2, 3}}}, [][][2]int{{{1, 3}, {2, 3}}}},
	} {
		fa, fb := known.Of(graphsOf(t, c.n, c.a)), known.Of(graphsOf(t, c.n, c.b))
		if slices.Equal(fa, fb) {
			t.Errorf("%s: the edited dataset has the same figures %v", c.name, fa)
		}
		if err := known.Compare("edited", "edges", fa, fb); err == nil {
			t.Errorf("%s: Compare passes the edit", c.name)
		}
	}
	// Order of the edges within a graph is not content.
	fa := known.Of(graphsOf(t, []int{4}, [][][2]int{{{0, 1}, {2, 3}, {1, 2}}}))
	fb := known.Of(graphsOf(t, []int{4}, [][][2]int{{{1, 2}, {0, 1}, {3, 2}}}))
	if !slices.Equal(fa, fb) {
		t.Errorf("reordered edges change the figures: %v, %v", fa, fb)
	}
}
