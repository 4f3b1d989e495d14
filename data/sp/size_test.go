package sp

import (
	"context"
	"errors"
	"testing"

	"github.com/spn-project/spn/data"
)

// pathEdges returns the edges of a path on n nodes.
func pathEdges(n int) [][2]int {
	e := make([][2]int, n-1)
	for i := range e {
		e[i] = [2]int{i, i + 1}
	}
	return e
}

// The sizes of the issue that crashed or ran for hours: a path of 10^6
// nodes and 2^24 nodes without edges. Stats and Distances refuse them
// with a *SizeError naming the size and the limit, before allocating
// anything of their size (an n² matrix of 2^24 nodes overflows).
func TestSizeRefused(t *testing.T) {
	path := mustGraph(t, 1_000_000, pathEdges(1_000_000))
	// No edges: an empty CSR with its n+1 row pointers.
	empty := data.Graph{N: 1 << 24, Adj: data.CSR{Ptr: make([]int32, 1<<24+1)}}
	for _, c := range []struct {
		name string
		g    *data.Graph
	}{{"path 1e6", &path}, {"2^24 nodes, no edges", &empty}} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Stats(context.Background(), c.g)
			var se *SizeError
			if !errors.As(err, &se) || se.Nodes != c.g.N || se.Limit != MaxStatsNodes {
				t.Fatalf("Stats: %v, want a SizeError of %d nodes, limit %d", err, c.g.N, MaxStatsNodes)
			}
			if err := CheckDistances(c.g); !errors.As(err, &se) || se.Nodes != c.g.N || se.Limit != MaxDistancesNodes {
				t.Fatalf("CheckDistances: %v", err)
			}
			if d := Distances(c.g); d != nil {
				t.Fatalf("Distances returned %d values", len(d))
			}
		})
	}
	want := "statistics (a BFS from every node): the graph has 1000000 nodes, at most 65536 are allowed (the cost grows at least with the square of the nodes)"
	if _, err := Stats(context.Background(), &path); err.Error() != want {
		t.Errorf("message %q\nwant %q", err, want)
	}
}

// A cancelled context stops Stats inside one graph: a path of 60,000
// nodes, under the limit, whose full BFS takes hours.
func TestStatsCancelled(t *testing.T) {
	g := mustGraph(t, 60_000, pathEdges(60_000))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Stats(ctx, &g); !errors.Is(err, context.Canceled) {
		t.Fatalf("Stats with a cancelled context: %v", err)
	}
}
