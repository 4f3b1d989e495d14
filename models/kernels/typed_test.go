package kernels

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/spn-project/spn/data/csr"
)

// typedGraph is a batch of two graphs (5 and 3 nodes, the second with an
// isolated node) with every edge entry typed by relation (u+v)%2.
func typedGraph() (adj csr.CSR, rel []csr.CSR, ptr []int32) {
	edges := [][2]int{{0, 1}, {1, 2}, {2, 3}, {3, 4}, {0, 4}, {1, 3}, {5, 6}}
	n := 8
	rows := make([][]int32, n)
	for _, e := range edges {
		rows[e[0]] = append(rows[e[0]], int32(e[1]))
		rows[e[1]] = append(rows[e[1]], int32(e[0]))
	}
	adj = csr.CSR{Ptr: []int32{0}}
	rel = []csr.CSR{{Ptr: []int32{0}}, {Ptr: []int32{0}}}
	for u := 0; u < n; u++ {
		r := rows[u]
		for i := range r { // insertion sort: rows ascending
			for j := i; j > 0 && r[j] < r[j-1]; j-- {
				r[j], r[j-1] = r[j-1], r[j]
			}
		}
		for _, v := range r {
			adj.Idx = append(adj.Idx, v)
			t := (u + int(v)) % 2
			rel[t].Idx = append(rel[t].Idx, v)
		}
		adj.Ptr = append(adj.Ptr, int32(len(adj.Idx)))
		for t := range rel {
			rel[t].Ptr = append(rel[t].Ptr, int32(len(rel[t].Idx)))
		}
	}
	return adj, rel, []int32{0, 5, 8}
}

func randVec(r *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	return x
}

// dot returns Σ w·y in float64: the scalar loss the finite differences
// differentiate.
func dot(w, y []float32) float64 {
	var s float64
	for i := range w {
		s += float64(w[i]) * float64(y[i])
	}
	return s
}

// checkFD compares the analytic gradient g of loss with respect to x
// against central differences, perturbing every entry of x by ±h.
func checkFD(t *testing.T, what string, x, g []float32, loss func() float64) {
	t.Helper()
	const h, tol = 1e-2, 2e-3
	for i := range x {
		old := x[i]
		x[i] = old + h
		lp := loss()
		x[i] = old - h
		lm := loss()
		x[i] = old
		fd := (lp - lm) / (2 * h)
		if math.Abs(fd-float64(g[i])) > tol*(1+math.Abs(fd)) {
			t.Errorf("%s[%d]: analytic %.6f, finite differences %.6f", what, i, g[i], fd)
		}
	}
}

func TestRelAggregateGrad(t *testing.T) {
	for _, be := range []Backend{CPU{}, CPU{Threads: 3}} {
		_, rel, _ := typedGraph()
		n, d := 8, 3
		r := rand.New(rand.NewPCG(1, 2))
		xs := [][]float32{randVec(r, n*d), randVec(r, n*d)}
		w := randVec(r, n*d)
		y := make([]float32, n*d)
		loss := func() float64 { RelAggregate(be, y, nil, RelInputs{Xs: xs, Rel: rel, N: n, D: d}); return dot(w, y) }
		// Reference: y_u = Σ_j Σ_{v: r_j(u,v)} xs[j]_v by brute force.
		RelAggregate(be, y, nil, RelInputs{Xs: xs, Rel: rel, N: n, D: d})
		for u := 0; u < n; u++ {
			for c := 0; c < d; c++ {
				var want float32
				for j, a := range rel {
					for _, v := range a.Row(u) {
						want += xs[j][int(v)*d+c]
					}
				}
				if math.Abs(float64(y[u*d+c]-want)) > 1e-5 {
					t.Fatalf("y[%d,%d] = %v, want %v", u, c, y[u*d+c], want)
				}
			}
		}
		relT := []csr.CSR{Transpose(rel[0]), Transpose(rel[1])}
		dxs := [][]float32{make([]float32, n*d), make([]float32, n*d)}
		RelAggregateGrad(be, dxs, w, relT, n, d)
		checkFD(t, "dx0", xs[0], dxs[0], loss)
		checkFD(t, "dx1", xs[1], dxs[1], loss)
	}
}

func TestEdgeMessagesGrad(t *testing.T) {
	for _, be := range []Backend{CPU{}, CPU{Threads: 3}} {
		adj, _, _ := typedGraph()
		n, d, E := 8, 4, len(adj.Idx)
		r := rand.New(rand.NewPCG(3, 4))
		h, e := randVec(r, n*d), randVec(r, E*d)
		// Keep every pre-activation away from the ReLU kink, so that ±h
		// perturbations do not cross it.
		for p := 0; p < E; p++ {
			v := int(adj.Idx[p])
			for j := 0; j < d; j++ {
				if m := h[v*d+j] + e[p*d+j]; math.Abs(float64(m)) < 0.1 {
					e[p*d+j] += 0.3
				}
			}
		}
		w := randVec(r, n*d)
		y := make([]float32, n*d)
		EdgeMessages(be, y, EdgeInputs{H: h, E: e, Adj: adj, N: n, D: d})
		for u := 0; u < n; u++ {
			for j := 0; j < d; j++ {
				var want float32
				for p := adj.Ptr[u]; p < adj.Ptr[u+1]; p++ {
					want += max(0, h[int(adj.Idx[p])*d+j]+e[int(p)*d+j])
				}
				if math.Abs(float64(y[u*d+j]-want)) > 1e-5 {
					t.Fatalf("y[%d,%d] = %v, want %v", u, j, y[u*d+j], want)
				}
			}
		}
		loss := func() float64 { EdgeMessages(be, y, EdgeInputs{H: h, E: e, Adj: adj, N: n, D: d}); return dot(w, y) }
		dh, de := make([]float32, n*d), make([]float32, E*d)
		EdgeMessagesGrad(be, dh, de, w, EdgeInputs{H: h, E: e, Adj: adj, In: IncomingEntries(adj), N: n, D: d})
		checkFD(t, "dh", h, dh, loss)
		checkFD(t, "de", e, de, loss)
	}
}

// TestEdgeMessagesTables checks that the kernels give the same bits when
// they compute each entry's embedding from the tables (E nil) as when the
// embeddings are given (EmbedSum's E), in both passes.
func TestEdgeMessagesTables(t *testing.T) {
	adj, _, _ := typedGraph()
	n, d, E := 8, 5, len(adj.Idx)
	vocab := []int{3, 2, 4}
	off, rows := EmbedOffsets(vocab)
	r := rand.New(rand.NewPCG(5, 6))
	x := make([]int32, E*len(vocab))
	for i := range x {
		x[i] = int32(r.IntN(vocab[i%len(vocab)]))
	}
	cat := Categorical{X: x, Off: off, N: E}
	T, h, dy := randVec(r, rows*d), randVec(r, n*d), randVec(r, n*d)
	for _, be := range []Backend{CPU{}, CPU{Threads: 3}} {
		e := make([]float32, E*d)
		EmbedSum(be, e, T, cat, d)
		given := EdgeInputs{H: h, E: e, Adj: adj, In: IncomingEntries(adj), N: n, D: d}
		tables := EdgeInputs{H: h, T: T, Cat: cat, Adj: adj, In: given.In, N: n, D: d}
		y0, y1 := make([]float32, n*d), make([]float32, n*d)
		EdgeMessages(be, y0, given)
		EdgeMessages(be, y1, tables)
		dh0, dh1 := make([]float32, n*d), make([]float32, n*d)
		de0, de1 := make([]float32, E*d), make([]float32, E*d)
		EdgeMessagesGrad(be, dh0, de0, dy, given)
		EdgeMessagesGrad(be, dh1, de1, dy, tables)
		for _, c := range []struct {
			name string
			a, b []float32
		}{{"y", y0, y1}, {"dh", dh0, dh1}, {"de", de0, de1}} {
			for i := range c.a {
				if math.Float32bits(c.a[i]) != math.Float32bits(c.b[i]) {
					t.Fatalf("%s[%d] = %v from the tables, %v from the given embeddings", c.name, i, c.b[i], c.a[i])
				}
			}
		}
	}
}

func TestIncomingEntries(t *testing.T) {
	adj, _, _ := typedGraph()
	in := IncomingEntries(adj)
	seen := make([]bool, len(adj.Idx))
	for v := 0; v < adj.Len(); v++ {
		prev := int32(-1)
		for _, p := range in.Row(v) {
			if adj.Idx[p] != int32(v) || p <= prev || seen[p] {
				t.Fatalf("node %d: entry %d (target %d) listed wrongly", v, p, adj.Idx[p])
			}
			seen[p], prev = true, p
		}
	}
	for p, s := range seen {
		if !s {
			t.Fatalf("entry %d not listed", p)
		}
	}
}

func TestEmbedSumGrad(t *testing.T) {
	vocab := []int{3, 1, 4}
	off, rows := EmbedOffsets(vocab)
	if rows != 8 || off[0] != 0 || off[1] != 3 || off[2] != 4 {
		t.Fatalf("EmbedOffsets = %v, %d", off, rows)
	}
	n, d := 5, 3
	x := []int32{0, 0, 3, 2, 0, 1, 2, 0, 1, 1, 0, 0, 0, 0, 3}
	r := rand.New(rand.NewPCG(5, 6))
	tab, w := randVec(r, rows*d), randVec(r, n*d)
	y := make([]float32, n*d)
	for _, be := range []Backend{CPU{}, CPU{Threads: 2}} {
		EmbedSum(be, y, tab, Categorical{X: x, Off: off, N: n}, d)
		for u := 0; u < n; u++ {
			for j := 0; j < d; j++ {
				want := tab[int(x[u*3])*d+j] + tab[(3+int(x[u*3+1]))*d+j] + tab[(4+int(x[u*3+2]))*d+j]
				if math.Abs(float64(y[u*d+j]-want)) > 1e-6 {
					t.Fatalf("y[%d,%d] = %v, want %v", u, j, y[u*d+j], want)
				}
			}
		}
		dT := make([]float32, rows*d)
		EmbedSumGrad(dT, w, Categorical{X: x, Off: off, N: n}, d)
		checkFD(t, "dT", tab, dT, func() float64 { EmbedSum(be, y, tab, Categorical{X: x, Off: off, N: n}, d); return dot(w, y) })
	}
}

func TestGraphSumBroadcastGrad(t *testing.T) {
	_, _, ptr := typedGraph()
	n, d := 8, 2
	r := rand.New(rand.NewPCG(7, 8))
	x, w := randVec(r, n*d), randVec(r, n*d)
	y := make([]float32, n*d)
	for _, be := range []Backend{CPU{}, CPU{Threads: 2}} {
		GraphSumBroadcast(be, y, x, ptr, d)
		for u := 0; u < n; u++ {
			a, b := 0, 5
			if u >= 5 {
				a, b = 5, 8
			}
			for j := 0; j < d; j++ {
				var want float32
				for v := a; v < b; v++ {
					want += x[v*d+j]
				}
				if math.Abs(float64(y[u*d+j]-want)) > 1e-5 {
					t.Fatalf("y[%d,%d] = %v, want %v", u, j, y[u*d+j], want)
				}
			}
		}
		dx := make([]float32, n*d)
		GraphSumBroadcast(be, dx, w, ptr, d) // self-adjoint
		checkFD(t, "dx", x, dx, func() float64 { GraphSumBroadcast(be, y, x, ptr, d); return dot(w, y) })
	}
}

func TestBCEWithLogits(t *testing.T) {
	nan := math.NaN()
	tests := []struct {
		name     string
		z        []float32
		y        []float64
		loss     float64
		labelled int
	}{
		{"zero logits", []float32{0, 0}, []float64{0, 1}, math.Ln2, 2},
		{"missing ignored", []float32{0, 50}, []float64{1, nan}, math.Ln2, 1},
		{"all missing", []float32{3, -2}, []float64{nan, nan}, 0, 0},
		{"large logits stable", []float32{100, -100}, []float64{1, 0}, 0, 2},
		{"confidently wrong", []float32{-100, 100}, []float64{1, 0}, 100, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dz := make([]float32, len(tc.z))
			loss, m := BCEWithLogits(dz, tc.z, tc.y)
			if m != tc.labelled || math.Abs(loss-tc.loss) > 1e-9 {
				t.Fatalf("loss %v over %d labels, want %v over %d", loss, m, tc.loss, tc.labelled)
			}
			for i, y := range tc.y {
				if math.IsNaN(y) && dz[i] != 0 {
					t.Fatalf("gradient %v at a missing label", dz[i])
				}
			}
		})
	}
	r := rand.New(rand.NewPCG(9, 10))
	z := randVec(r, 12)
	y := make([]float64, 12)
	for i := range y {
		y[i] = float64(i % 2)
		if i%5 == 0 {
			y[i] = nan
		}
	}
	dz := make([]float32, 12)
	BCEWithLogits(dz, z, y)
	checkFD(t, "dz", z, dz, func() float64 { l, _ := BCEWithLogits(nil, z, y); return l })
}
