package expressivity

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/spn-project/spn/data"
)

// edgeIndex enumerates the node pairs of n nodes: pairs[i] is the pair of
// bit i of an edge mask.
func edgeIndex(n int) [][2]int {
	var pairs [][2]int
	for u := 0; u < n; u++ {
		for v := u + 1; v < n; v++ {
			pairs = append(pairs, [2]int{u, v})
		}
	}
	return pairs
}

// permutations returns every permutation of 0..n-1.
func permutations(n int) [][]int {
	if n == 0 {
		return [][]int{{}}
	}
	var out [][]int
	for _, p := range permutations(n - 1) {
		for i := 0; i <= len(p); i++ {
			q := slices.Insert(slices.Clone(p), i, n-1)
			out = append(out, q)
		}
	}
	return out
}

// allGraphs returns every labelled simple graph on n nodes as edge masks,
// with canon[mask] the smallest mask of its isomorphism class, found by
// trying every permutation (brute-force isomorphism).
func allGraphs(n int) (canon []uint32, pairs [][2]int) {
	pairs = edgeIndex(n)
	pos := map[[2]int]int{}
	for i, p := range pairs {
		pos[p] = i
	}
	perms := permutations(n)
	// moved[p][i]: the bit of pair i under permutation p.
	moved := make([][]uint32, len(perms))
	for pi, p := range perms {
		moved[pi] = make([]uint32, len(pairs))
		for i, e := range pairs {
			u, v := p[e[0]], p[e[1]]
			moved[pi][i] = 1 << pos[[2]int{min(u, v), max(u, v)}]
		}
	}
	canon = make([]uint32, 1<<len(pairs))
	for m := range canon {
		best := uint32(m)
		for pi := range perms {
			var q uint32
			for i := range pairs {
				if m&(1<<i) != 0 {
					q |= moved[pi][i]
				}
			}
			best = min(best, q)
		}
		canon[m] = best
	}
	return canon, pairs
}

func maskGraph(t *testing.T, n int, pairs [][2]int, m uint32) data.Graph {
	var edges [][2]int
	for i, p := range pairs {
		if m&(1<<i) != 0 {
			edges = append(edges, p)
		}
	}
	g, err := data.FromEdges(n, edges)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// refDistances is Floyd–Warshall, -1 for unreachable.
func refDistances(g *data.Graph) [][]int {
	const inf = 1 << 20
	d := make([][]int, g.N)
	for u := range d {
		d[u] = make([]int, g.N)
		for v := range d[u] {
			if u != v {
				d[u][v] = inf
			}
		}
		for _, v := range g.Adj.Row(u) {
			d[u][v] = 1
		}
	}
	for w := 0; w < g.N; w++ {
		for u := 0; u < g.N; u++ {
			for v := 0; v < g.N; v++ {
				d[u][v] = min(d[u][v], d[u][w]+d[w][v])
			}
		}
	}
	for u := range d {
		for v := range d[u] {
			if d[u][v] == inf {
				d[u][v] = -1
			}
		}
	}
	return d
}

// refSeparates is an independent reference of the SP-MPNN(k) refinement:
// string signatures interned in a map shared by both graphs, distances by
// Floyd–Warshall, and a fixed n+1 rounds instead of a stability test.
func refSeparates(a, b *data.Graph, k int, unreachable bool) bool {
	gs := []*data.Graph{a, b}
	ds := [][][]int{refDistances(a), refDistances(b)}
	col := [][]int{make([]int, a.N), make([]int, b.N)}
	for i, g := range gs {
		for u := range col[i] {
			if g.Labels != nil {
				col[i][u] = int(g.Labels[u])
			}
		}
	}
	for round := 0; round <= max(a.N, b.N); round++ {
		ids := map[string]int{}
		next := [][]int{make([]int, a.N), make([]int, b.N)}
		for i := range gs {
			for u := range col[i] {
				var sb strings.Builder
				fmt.Fprintf(&sb, "%d", col[i][u])
				for h := 1; h <= k; h++ {
					var cs []int
					for v, dv := range ds[i][u] {
						if dv == h {
							cs = append(cs, col[i][v])
						}
					}
					slices.Sort(cs)
					fmt.Fprintf(&sb, "|%v", cs)
				}
				if unreachable {
					var cs []int
					for v, dv := range ds[i][u] {
						if dv < 0 {
							cs = append(cs, col[i][v])
						}
					}
					slices.Sort(cs)
					fmt.Fprintf(&sb, "|inf%v", cs)
				}
				s := sb.String()
				id, ok := ids[s]
				if !ok {
					id = len(ids)
					ids[s] = id
				}
				next[i][u] = id
			}
		}
		col = next
	}
	ha, hb := slices.Sorted(slices.Values(col[0])), slices.Sorted(slices.Values(col[1]))
	return !slices.Equal(ha, hb)
}

// refSP is a reference SP kernel decision from Floyd–Warshall distances.
func refSP(a, b *data.Graph) bool {
	n := max(a.N, b.N)
	hist := func(g *data.Graph) []string {
		var out []string
		for _, row := range refDistances(g) {
			h := make([]int, n+1) // h[0]: unreachable, h[d]: distance d
			for v, d := range row {
				switch {
				case d < 0:
					h[0]++
				case d > 0:
					h[d]++
				default:
					_ = v
				}
			}
			out = append(out, fmt.Sprint(h))
		}
		slices.Sort(out)
		return out
	}
	return !slices.Equal(hist(a), hist(b))
}

// TestIsomorphicNeverSeparated checks, for every labelled graph on up to 6
// nodes, that no procedure separates it from its isomorphism class's
// canonical representative (found by trying all permutations).
func TestIsomorphicNeverSeparated(t *testing.T) {
	ctx := context.Background()
	for n := 1; n <= 6; n++ {
		canon, pairs := allGraphs(n)
		for m := range canon {
			if testing.Short() && n == 6 && m%16 != 0 {
				continue
			}
			p := Pair{Name: fmt.Sprint(n, m), A: maskGraph(t, n, pairs, uint32(m)), B: maskGraph(t, n, pairs, canon[m])}
			for _, unreachable := range []bool{false, true} {
				r, err := Check(ctx, &p, Options{Unreachable: unreachable})
				if err != nil {
					t.Fatal(err)
				}
				if r.WL || r.SP || r.MinK != 0 {
					t.Fatalf("n=%d: graph %b and its isomorphic representative %b separated: %+v", n, m, canon[m], r)
				}
			}
		}
	}
}

// TestNonIsomorphicAgainstReference checks every pair of non-isomorphic
// graphs on the same n ≤ 6 nodes: each procedure agrees with the
// independent reference; whatever separates them is correct (they are
// non-isomorphic by brute force); Theorem 1 holds (what 1-WL or SP
// separates, SP-MPNN(n−1) with N_∞ separates); and SP-MPNN(k) is
// monotone in k.
func TestNonIsomorphicAgainstReference(t *testing.T) {
	ctx := context.Background()
	wlFails := map[int]int{}
	for n := 2; n <= 6; n++ {
		canon, pairs := allGraphs(n)
		var reps []uint32
		for m := range canon {
			if canon[m] == uint32(m) {
				reps = append(reps, uint32(m))
			}
		}
		for i := range reps {
			for j := i + 1; j < len(reps); j++ {
				if testing.Short() && n == 6 && (i+j)%8 != 0 {
					continue
				}
				p := Pair{A: maskGraph(t, n, pairs, reps[i]), B: maskGraph(t, n, pairs, reps[j])}
				for _, unreachable := range []bool{false, true} {
					r, err := Check(ctx, &p, Options{Unreachable: unreachable})
					if err != nil {
						t.Fatal(err)
					}
					if want := refSeparates(&p.A, &p.B, 1, false); r.WL != want {
						t.Fatalf("n=%d %b vs %b: 1-WL says %v, reference %v", n, reps[i], reps[j], r.WL, want)
					}
					if want := refSP(&p.A, &p.B); r.SP != want {
						t.Fatalf("n=%d %b vs %b: SP says %v, reference %v", n, reps[i], reps[j], r.SP, want)
					}
					prev := false
					for _, kr := range r.SPMPNN {
						if want := refSeparates(&p.A, &p.B, kr.K, unreachable); kr.Distinguishes != want {
							t.Fatalf("n=%d %b vs %b: SP-MPNN(%d, unreachable %v) says %v, reference %v", n, reps[i], reps[j], kr.K, unreachable, kr.Distinguishes, want)
						}
						if prev && !kr.Distinguishes {
							t.Fatalf("n=%d %b vs %b: SP-MPNN not monotone in k at k=%d", n, reps[i], reps[j], kr.K)
						}
						prev = kr.Distinguishes
					}
					if unreachable && (r.WL || r.SP) && !r.SPMPNN[len(r.SPMPNN)-1].Distinguishes {
						t.Fatalf("n=%d %b vs %b: Theorem 1 fails: WL %v SP %v but SP-MPNN(n-1) does not separate", n, reps[i], reps[j], r.WL, r.SP)
					}
					if !unreachable && !r.WL {
						wlFails[n]++
					}
				}
			}
		}
	}
	if testing.Short() {
		return
	}
	// Below 6 nodes 1-WL separates every non-isomorphic pair. On 6 nodes
	// both this package and the reference find exactly 4 pairs it does not
	// separate: C6 vs two triangles, K_{3,3} vs the prism (their
	// complements), a 7-edge pair (C6 plus a chord vs two triangles joined
	// by an edge) and its complement.
	for n := 2; n <= 5; n++ {
		if wlFails[n] != 0 {
			t.Errorf("n=%d: 1-WL fails on %d non-isomorphic pairs, want 0", n, wlFails[n])
		}
	}
	if wlFails[6] != 4 {
		t.Errorf("n=6: 1-WL fails on %d non-isomorphic pairs, want 4", wlFails[6])
	}
	t.Logf("non-isomorphic pairs 1-WL does not separate: %v", wlFails)
}

// TestLabelsAndPermutations checks labelled graphs: a random relabelling
// of node ids (an isomorphism carrying the labels along) is never
// separated; changing one label of a 1-WL-equivalent pair is.
func TestLabelsAndPermutations(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 200; trial++ {
		n := 2 + rng.IntN(12)
		var edges [][2]int
		for u := 0; u < n; u++ {
			for v := u + 1; v < n; v++ {
				if rng.Float64() < 0.3 {
					edges = append(edges, [2]int{u, v})
				}
			}
		}
		a, _ := data.FromEdges(n, edges)
		a.Labels = make([]int32, n)
		for u := range a.Labels {
			a.Labels[u] = int32(rng.IntN(3))
		}
		perm := rng.Perm(n)
		var pe [][2]int
		for _, e := range edges {
			pe = append(pe, [2]int{perm[e[0]], perm[e[1]]})
		}
		b, _ := data.FromEdges(n, pe)
		b.Labels = make([]int32, n)
		for u := range a.Labels {
			b.Labels[perm[u]] = a.Labels[u]
		}
		p := Pair{A: a, B: b}
		r, err := Check(ctx, &p, Options{Unreachable: true})
		if err != nil {
			t.Fatal(err)
		}
		if r.WL || r.SP || r.MinK != 0 {
			t.Fatalf("trial %d: isomorphic labelled graphs separated: %+v", trial, r)
		}
		// A different label multiset is always separated by 1-WL, never by
		// the (label-agnostic) SP kernel.
		b.Labels[0] += 5
		p = Pair{A: a, B: b}
		if r, err = Check(ctx, &p, Options{Ks: []int{1}}); err != nil {
			t.Fatal(err)
		}
		if !r.WL || r.SP || r.MinK != 1 {
			t.Fatalf("trial %d: relabelled graph: WL %v SP %v min k %d, want true false 1", trial, r.WL, r.SP, r.MinK)
		}
	}
}
