package sp

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/data/tu"
	"github.com/spn-project/spn/internal/testkit/mirrortest"
)

var tuCache sync.Map

func loadTU(tb testing.TB, name string) *data.Dataset {
	tb.Helper()
	if ds, ok := tuCache.Load(name); ok {
		return ds.(*data.Dataset)
	}
	ds, err := tu.Load(mirrortest.TUZip(tb, name), "")
	if err != nil {
		tb.Fatal(err)
	}
	tuCache.Store(name, ds)
	return ds
}

// refDistances is an independent single-source BFS over an adjacency-list
// copy of the graph built from its edge list (not from the CSR rows).
func refDistances(adj [][]int, s int) []int {
	dist := make([]int, len(adj))
	for i := range dist {
		dist[i] = -1
	}
	dist[s] = 0
	q := []int{s}
	for len(q) > 0 {
		x := q[0]
		q = q[1:]
		for _, y := range adj[x] {
			if dist[y] == -1 {
				dist[y] = dist[x] + 1
				q = append(q, y)
			}
		}
	}
	return dist
}

// TestHopsAllTU checks the hop sets N_1..N_10 and N_∞ of every graph of the
// four TU datasets against the reference BFS.
func TestHopsAllTU(t *testing.T) {
	if testing.Short() {
		t.Skip("all-TU distance check skipped in -short mode")
	}
	const kmax = 10
	for _, name := range []string{"DD", "NCI1", "PROTEINS", "ENZYMES"} {
		t.Run(name, func(t *testing.T) {
			ds := loadTU(t, name)
			h, err := Compute(context.Background(), ds.Graphs, kmax, true, 2)
			if err != nil {
				t.Fatal(err)
			}
			if err := h.Validate(); err != nil {
				t.Fatal(err)
			}
			if err := h.Matches(ds); err != nil {
				t.Fatal(err)
			}
			var pairs int64
			for gi := range ds.Graphs {
				g := &ds.Graphs[gi]
				adj := make([][]int, g.N)
				for _, e := range g.Edges() {
					adj[e[0]] = append(adj[e[0]], e[1])
					adj[e[1]] = append(adj[e[1]], e[0])
				}
				gh := h.Graphs[gi]
				for u := 0; u < g.N; u++ {
					dist := refDistances(adj, u)
					var want [kmax + 1]int
					unreach := 0
					for _, d := range dist {
						switch {
						case d == -1:
							unreach++
						case d >= 1 && d <= kmax:
							want[d]++
						}
					}
					for i := 1; i <= kmax; i++ {
						row := gh.Hop[i-1].Row(u)
						if len(row) != want[i] {
							t.Fatalf("graph %d node %d: |N_%d| = %d, reference %d", gi, u, i, len(row), want[i])
						}
						for _, v := range row {
							if dist[v] != i {
								t.Fatalf("graph %d node %d: %d in N_%d but at distance %d", gi, u, v, i, dist[v])
							}
						}
						pairs += int64(len(row))
					}
					row := gh.Unreachable.Row(u)
					if len(row) != unreach {
						t.Fatalf("graph %d node %d: |N_inf| = %d, reference %d", gi, u, len(row), unreach)
					}
					for _, v := range row {
						if dist[v] != -1 {
							t.Fatalf("graph %d node %d: %d in N_inf but at distance %d", gi, u, v, dist[v])
						}
					}
				}
			}
			t.Logf("%s: %d graphs, %d (u,v) pairs within %d hops checked", name, len(ds.Graphs), pairs, kmax)
		})
	}
}

// TestHopsFileDeterministic checks that two computations with different
// thread counts give byte-identical hops files.
func TestHopsFileDeterministic(t *testing.T) {
	ds := loadTU(t, "PROTEINS")
	var files [2][]byte
	for i, threads := range []int{1, 2} {
		h, err := Compute(context.Background(), ds.Graphs, DefaultKMax, false, threads)
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := data.WriteHops(&buf, h); err != nil {
			t.Fatal(err)
		}
		files[i] = buf.Bytes()
	}
	if !bytes.Equal(files[0], files[1]) {
		t.Fatal("hops files differ between 1 and 2 threads")
	}
}

// BenchmarkComputeDD computes N_1..N_10 for all 1178 graphs of D&D with
// two threads.
//
//	go test ./data/sp -run '^$' -bench ComputeDD -benchmem -benchtime 5x
func BenchmarkComputeDD(b *testing.B) {
	ds := loadTU(b, "DD")
	b.ReportAllocs()
	var entries int
	for b.Loop() {
		h, err := Compute(context.Background(), ds.Graphs, DefaultKMax, false, 2)
		if err != nil {
			b.Fatal(err)
		}
		entries = 0
		for _, gh := range h.Graphs {
			for _, c := range gh.Hop {
				entries += len(c.Idx)
			}
		}
	}
	b.ReportMetric(float64(entries), "hop-entries")
	b.ReportMetric(float64(entries*4)/1e6, "hop-MB")
}

// BenchmarkStatsDD computes the full distance statistics of all of D&D.
func BenchmarkStatsDD(b *testing.B) {
	ds := loadTU(b, "DD")
	for b.Loop() {
		for i := range ds.Graphs {
			if _, err := Stats(context.Background(), &ds.Graphs[i]); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkReadHopsDD reads the hops file of D&D (kmax 10) back.
//
//	go test ./data/sp -run '^$' -bench ReadHopsDD -benchmem -benchtime 3x
func BenchmarkReadHopsDD(b *testing.B) {
	ds := loadTU(b, "DD")
	h, err := Compute(context.Background(), ds.Graphs, DefaultKMax, false, 2)
	if err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(b.TempDir(), "hops.bin")
	if err := data.WriteHopsFile(path, h); err != nil {
		b.Fatal(err)
	}
	h = nil
	st, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := data.ReadHopsFile(path); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(st.Size())/1e6, "file-MB")
}

// TestStatsAgainstDistances compares Stats with statistics derived from the
// per-source BFS distance matrix on every graph of ENZYMES and PROTEINS.
func TestStatsAgainstDistances(t *testing.T) {
	for _, name := range []string{"ENZYMES", "PROTEINS"} {
		ds := loadTU(t, name)
		for gi := range ds.Graphs {
			g := &ds.Graphs[gi]
			st, err := Stats(context.Background(), g)
			if err != nil {
				t.Fatal(err)
			}
			dist := Distances(g)
			n := g.N
			var wiener, unreach int64
			diam := 0
			for u := 0; u < n; u++ {
				ecc := 0
				for v := 0; v < n; v++ {
					d := int(dist[u*n+v])
					switch {
					case d < 0:
						unreach++
					case v > u:
						wiener += int64(d)
					}
					ecc = max(ecc, d)
				}
				if st.Eccentricity[u] != ecc {
					t.Fatalf("%s graph %d node %d: eccentricity %d, distances say %d", name, gi, u, st.Eccentricity[u], ecc)
				}
				diam = max(diam, ecc)
			}
			if st.Wiener != wiener || st.UnreachablePairs != unreach || st.Diameter != diam {
				t.Fatalf("%s graph %d: wiener/unreachable/diameter %d/%d/%d, distances say %d/%d/%d", name, gi, st.Wiener, st.UnreachablePairs, st.Diameter, wiener, unreach, diam)
			}
		}
	}
}
