package sp

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/spn-project/spn/data"
)

func mustGraph(t *testing.T, n int, edges [][2]int) data.Graph {
	t.Helper()
	g, err := data.FromEdges(n, edges)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestComputeSmall(t *testing.T) {
	tests := []struct {
		name  string
		n     int
		edges [][2]int
		kmax  int
		// want[u][i] is N_{i+1}(u)
		want  [][][]int32
		unrch [][]int32
	}{
		{
			name: "path of 4", n: 4, edges: [][2]int{{0, 1}, {1, 2}, {2, 3}}, kmax: 2,
			want: [][][]int32{
				{{1}, {2}}, {{0, 2}, {3}}, {{1, 3}, {0}}, {{2}, {1}},
			},
			unrch: [][]int32{{}, {}, {}, {}},
		},
		{
			name: "two components", n: 5, edges: [][2]int{{0, 1}, {2, 3}, {3, 4}}, kmax: 3,
			want: [][][]int32{
				{{1}, {}, {}}, {{0}, {}, {}}, {{3}, {4}, {}}, {{2, 4}, {}, {}}, {{3}, {2}, {}},
			},
			unrch: [][]int32{{2, 3, 4}, {2, 3, 4}, {0, 1}, {0, 1}, {0, 1}},
		},
		{
			name: "cycle of 6 kmax 1 is adjacency", n: 6, edges: [][2]int{{0, 1}, {1, 2}, {2, 3}, {3, 4}, {4, 5}, {5, 0}}, kmax: 1,
			want:  [][][]int32{{{1, 5}}, {{0, 2}}, {{1, 3}}, {{2, 4}}, {{3, 5}}, {{0, 4}}},
			unrch: [][]int32{{}, {}, {}, {}, {}, {}},
		},
		{
			name: "isolated node", n: 1, kmax: 2,
			want: [][][]int32{{{}, {}}}, unrch: [][]int32{{}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := mustGraph(t, tc.n, tc.edges)
			h, err := Compute(context.Background(), []data.Graph{g}, tc.kmax, true, 2)
			if err != nil {
				t.Fatal(err)
			}
			gh := h.Graphs[0]
			if len(gh.Hop) != tc.kmax {
				t.Fatalf("got %d hops, want %d", len(gh.Hop), tc.kmax)
			}
			for u := range tc.n {
				for i := range tc.kmax {
					if got := gh.Hop[i].Row(u); !slices.Equal(got, tc.want[u][i]) {
						t.Errorf("N_%d(%d) = %v, want %v", i+1, u, got, tc.want[u][i])
					}
				}
				if got := gh.Unreachable.Row(u); !slices.Equal(got, tc.unrch[u]) {
					t.Errorf("N_inf(%d) = %v, want %v", u, got, tc.unrch[u])
				}
			}
		})
	}
}

func TestComputeDeterministicAcrossThreads(t *testing.T) {
	var graphs []data.Graph
	for n := 2; n < 40; n++ {
		var edges [][2]int
		for u := 0; u < n; u++ {
			edges = append(edges, [2]int{u, (u*7 + 3) % n})
		}
		var clean [][2]int
		for _, e := range edges {
			if e[0] != e[1] {
				clean = append(clean, e)
			}
		}
		graphs = append(graphs, mustGraph(t, n, clean))
	}
	a, err := Compute(context.Background(), graphs, 5, true, 1)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Compute(context.Background(), graphs, 5, true, 3)
	if err != nil {
		t.Fatal(err)
	}
	for i := range graphs {
		for k := range 5 {
			if !slices.Equal(a.Graphs[i].Hop[k].Ptr, b.Graphs[i].Hop[k].Ptr) || !slices.Equal(a.Graphs[i].Hop[k].Idx, b.Graphs[i].Hop[k].Idx) {
				t.Fatalf("graph %d hop %d differs between 1 and 3 threads", i, k+1)
			}
		}
	}
}

func TestComputeRejectsBadInput(t *testing.T) {
	bad := data.Graph{N: 2, Adj: data.CSR{Ptr: []int32{0, 1, 2}, Idx: []int32{1, 5}}}
	if _, err := Compute(context.Background(), []data.Graph{bad}, 3, false, 1); err == nil {
		t.Fatal("want error for out-of-range adjacency")
	}
	if _, err := Compute(context.Background(), nil, 0, false, 1); err == nil {
		t.Fatal("want error for kmax 0")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	g := mustGraph(t, 2, [][2]int{{0, 1}})
	if _, err := Compute(ctx, []data.Graph{g}, 3, false, 1); err == nil {
		t.Fatal("want error for cancelled context")
	}
}

func TestStats(t *testing.T) {
	// Path 0-1-2 plus an isolated edge 3-4.
	g := mustGraph(t, 5, [][2]int{{0, 1}, {1, 2}, {3, 4}})
	st, err := Stats(context.Background(), &g)
	if err != nil {
		t.Fatal(err)
	}
	if st.Components != 2 || st.Connected {
		t.Errorf("components = %d connected=%v, want 2 false", st.Components, st.Connected)
	}
	if !slices.Equal(st.Eccentricity, []int{2, 1, 2, 1, 1}) {
		t.Errorf("eccentricity = %v", st.Eccentricity)
	}
	if st.Diameter != 2 {
		t.Errorf("diameter = %d, want 2", st.Diameter)
	}
	// Wiener: 1+2+1 (path) + 1 (edge) = 5.
	if st.Wiener != 5 {
		t.Errorf("wiener = %d, want 5", st.Wiener)
	}
	if !slices.Equal(st.HopSizes, []int64{6, 2}) {
		t.Errorf("hop sizes = %v, want [6 2]", st.HopSizes)
	}
	if st.UnreachablePairs != 12 {
		t.Errorf("unreachable pairs = %d, want 12", st.UnreachablePairs)
	}
	d := Distances(&g)
	want := []int32{0, 1, 2, -1, -1, 1, 0, 1, -1, -1, 2, 1, 0, -1, -1, -1, -1, -1, 0, 1, -1, -1, -1, 1, 0}
	if !slices.Equal(d, want) {
		t.Errorf("distances = %v", d)
	}
}

// The sparse BFS (large graphs) gives the same hop sets as the dense one,
// on random graphs of every density, with and without N_∞.
func TestSparseMatchesDense(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	for trial := 0; trial < 60; trial++ {
		n := 1 + rng.IntN(300)
		m := rng.IntN(3 * n)
		if trial%5 == 0 {
			m = rng.IntN(n*(n-1)/2 + 1)
		}
		var edges [][2]int
		seen := map[[2]int]bool{}
		for len(edges) < m && n > 1 {
			u, v := rng.IntN(n), rng.IntN(n)
			if u == v {
				continue
			}
			e := [2]int{min(u, v), max(u, v)}
			if seen[e] {
				if len(seen) == n*(n-1)/2 {
					break
				}
				continue
			}
			seen[e] = true
			edges = append(edges, e)
		}
		g, err := data.FromEdges(n, edges)
		if err != nil {
			t.Fatal(err)
		}
		kmax := 1 + rng.IntN(12)
		var s1, s2 scratch
		dense, ok1 := s1.graphHopsBy(&g, kmax, trial%2 == 0, false)
		sparse, ok2 := s2.graphHopsBy(&g, kmax, trial%2 == 0, true)
		if !ok1 || !ok2 {
			t.Fatalf("trial %d: over the default limit", trial)
		}
		if !reflect.DeepEqual(dense, sparse) {
			t.Fatalf("trial %d (n=%d, m=%d, kmax=%d): sparse hop sets differ from dense", trial, n, len(edges), kmax)
		}
	}
}

// BenchmarkPathGraph is a long path: the dense BFS is quadratic in n
// there, the sparse one linear.
func BenchmarkPathGraph(b *testing.B) {
	for _, n := range []int{100_000, 400_000, 2_000_000} {
		edges := make([][2]int, n-1)
		for i := range edges {
			edges[i] = [2]int{i, i + 1}
		}
		g, err := data.FromEdges(n, edges)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			for b.Loop() {
				if _, err := Compute(context.Background(), []data.Graph{g}, DefaultKMax, false, 1); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestComputeLimit checks the entry limit of a graph's hop sets: a graph
// of exactly limit entries (N_1..N_kmax, and N_∞ when kept) is computed,
// one entry fewer allowed is a *LimitError naming the lowest graph over
// it, on both BFS variants.
func TestComputeLimit(t *testing.T) {
	star, err := data.FromEdges(6, [][2]int{{0, 1}, {0, 2}, {0, 3}, {0, 4}, {0, 5}})
	if err != nil {
		t.Fatal(err)
	}
	// Two components: a path 0-1-2 and an edge 3-4.
	two, err := data.FromEdges(5, [][2]int{{0, 1}, {1, 2}, {3, 4}})
	if err != nil {
		t.Fatal(err)
	}
	small, err := data.FromEdges(2, [][2]int{{0, 1}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name    string
		g       data.Graph
		kmax    int
		unreach bool
		entries int64
	}{
		// N_1: 5+5 (star edges both ways); N_2: the 5 leaves see 4 others.
		{"star k=2", star, 2, false, 10 + 20},
		// N_1: 4+2 = 6 entries; N_2: 0↔2 = 2; N_∞: 3·2 + 2·3 = 12.
		{"two components, N_∞", two, 2, true, 6 + 2 + 12},
	} {
		for _, sparse := range []bool{false, true} {
			for _, limit := range []int64{c.entries, c.entries - 1} {
				var s scratch
				s.limit = limit
				_, ok := s.graphHopsBy(&c.g, c.kmax, c.unreach, sparse)
				if want := limit >= c.entries; ok != want {
					t.Errorf("%s, sparse %v, limit %d: fits = %v, want %v", c.name, sparse, limit, ok, want)
				}
			}
		}
		_, err := ComputeLimit(context.Background(), []data.Graph{small, c.g, c.g}, c.kmax, c.unreach, 2, c.entries-1)
		var le *LimitError
		if !errors.As(err, &le) || le.Graph != 1 || le.Limit != c.entries-1 {
			t.Errorf("%s: ComputeLimit error %v, want a LimitError for graph 1 at %d", c.name, err, c.entries-1)
		}
		if _, err := ComputeLimit(context.Background(), []data.Graph{small, c.g}, c.kmax, c.unreach, 2, c.entries); err != nil {
			t.Errorf("%s: at its entry count: %v", c.name, err)
		}
	}
}
