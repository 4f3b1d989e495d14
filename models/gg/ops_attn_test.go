package gg

import (
	"github.com/spn-project/spn/models/op"

	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/data/sp"
	"github.com/spn-project/spn/models/kernels"
)

// attnBatch returns a batch of random graphs with their hop sets up to
// kmax: sizes from sizes (0 = an empty graph); every graph of 6 or more
// nodes has two components, so unreachable pairs occur.
func attnBatch(t testing.TB, seed uint64, sizes []int, kmax int) (*data.Dataset, *data.Batch) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 3))
	ds := &data.Dataset{Name: "attn", NumLabels: 3, NumClasses: 2}
	for gi, n := range sizes {
		var edges [][2]int
		cut := n
		if n >= 6 {
			cut = n - 2 // nodes cut.. form a second component
		}
		for v := 1; v < cut; v++ { // a random tree on 0..cut-1, plus chords
			edges = append(edges, [2]int{rng.IntN(v), v})
		}
		for i := 0; i < cut/3; i++ {
			u, v := rng.IntN(cut), rng.IntN(cut)
			if u != v && !hasEdge(edges, u, v) {
				edges = append(edges, [2]int{u, v})
			}
		}
		if cut < n {
			edges = append(edges, [2]int{cut, cut + 1})
		}
		g, err := data.FromEdges(n, edges)
		if err != nil {
			t.Fatal(err)
		}
		g.Labels = make([]int32, n)
		for u := range g.Labels {
			g.Labels[u] = int32(rng.IntN(3))
		}
		g.Y = gi % 2
		ds.Graphs = append(ds.Graphs, g)
	}
	hops, err := sp.Compute(context.Background(), ds.Graphs, kmax, false, 1)
	if err != nil {
		t.Fatal(err)
	}
	idx := make([]int, len(sizes))
	for i := range idx {
		idx[i] = i
	}
	b, err := data.NewBatch(ds, hops, idx, kmax)
	if err != nil {
		t.Fatal(err)
	}
	return ds, b
}

func hasEdge(edges [][2]int, u, v int) bool {
	for _, e := range edges {
		if (e[0] == u && e[1] == v) || (e[0] == v && e[1] == u) {
			return true
		}
	}
	return false
}

// bfs returns the distance matrix of graph j of b (-1 = unreachable).
func bfs(b *data.Batch, j int) [][]int {
	p0, p1 := int(b.GraphPtr[j]), int(b.GraphPtr[j+1])
	n := p1 - p0
	dist := make([][]int, n)
	for s := 0; s < n; s++ {
		dist[s] = make([]int, n)
		for i := range dist[s] {
			dist[s][i] = -1
		}
		dist[s][s] = 0
		q := []int{s}
		for len(q) > 0 {
			u := q[0]
			q = q[1:]
			for _, v := range b.Adj.Row(p0 + u) {
				if w := int(v) - p0; dist[s][w] < 0 {
					dist[s][w] = dist[s][u] + 1
					q = append(q, w)
				}
			}
		}
	}
	return dist
}

// TestDistanceBuckets checks Graphormer's buckets against BFS distances,
// with kmax = max_dist and kmax > max_dist: self 0, distance i < max_dist
// is i, every longer finite distance max_dist (also those beyond kmax),
// unreachable max_dist+1.
func TestDistanceBuckets(t *testing.T) {
	for _, tc := range []struct{ maxDist, kmax int }{{2, 2}, {3, 5}, {5, 5}} {
		_, b := attnBatch(t, 5, []int{12, 0, 9, 30, 1}, tc.kmax)
		gd := &graphData{}
		if err := gd.set(b, KindGraphormer, tc.maxDist); err != nil {
			t.Fatal(err)
		}
		far := 0
		for j := 0; j < b.NumGraphs; j++ {
			dist := bfs(b, j)
			nj := len(dist)
			for u := range dist {
				for v, dv := range dist[u] {
					want := dv
					switch {
					case dv < 0:
						want = tc.maxDist + 1
					case dv >= tc.maxDist:
						want = tc.maxDist
						if dv > tc.kmax {
							far++
						}
					}
					if got := int(gd.bucket[gd.boff[j]+u*nj+v]); got != want {
						t.Fatalf("max_dist %d kmax %d graph %d: bucket(%d,%d) = %d, want %d (distance %d)", tc.maxDist, tc.kmax, j, u, v, got, want, dv)
					}
				}
			}
		}
		if tc.kmax == 2 && far == 0 {
			t.Errorf("no pair beyond kmax: the clamp past kmax is not exercised")
		}
	}
}

// refCase is a float64 reference forward of an op for the float64
// finite-difference check.
type refCase struct {
	opCase
	ref func(in [][]float64) []float64
}

func attnTo64(x []float32) []float64 {
	y := make([]float64, len(x))
	for i, v := range x {
		y[i] = float64(v)
	}
	return y
}

// checkRef checks (a) the float32 op forward against the float64 reference
// and (b) the op's analytic gradients (Gorgonia over SymDiff) against
// central differences of the float64 reference with a small step.
func checkRef(t *testing.T, c refCase) {
	t.Helper()
	vals := make([]G.Value, len(c.in))
	in64 := make([][]float64, len(c.in))
	for i, v := range c.in {
		vals[i] = tensor.New(tensor.WithShape(c.shapes[i]...), tensor.WithBacking(append([]float32(nil), v...)))
		in64[i] = attnTo64(v)
	}
	y, err := c.op.Do(vals...)
	if err != nil {
		t.Fatalf("%s: %v", c.name, err)
	}
	y32 := y.Data().([]float32)
	y64 := c.ref(in64)
	if len(y64) != len(y32) {
		t.Fatalf("%s: reference has %d outputs, op %d", c.name, len(y64), len(y32))
	}
	for i := range y64 {
		if d := math.Abs(float64(y32[i]) - y64[i]); d > 1e-4*(1+math.Abs(y64[i])) {
			t.Fatalf("%s: output[%d] = %v, float64 reference %v", c.name, i, y32[i], y64[i])
		}
	}
	rng := rand.New(rand.NewPCG(11, 11))
	r := randFloats(rng, len(y32), 1)
	grads := gradThroughGorgonia(t, c.opCase, r)
	loss := func() float64 {
		var s float64
		for i, v := range c.ref(in64) {
			s += v * float64(r[i])
		}
		return s
	}
	const h = 1e-6
	gi := 0
	for i := range in64 {
		if c.diff != nil && !c.diff[i] {
			continue
		}
		an := grads[gi]
		gi++
		if len(an) != len(in64[i]) {
			t.Fatalf("%s: gradient of input %d has %d values, want %d", c.name, i, len(an), len(in64[i]))
		}
		for _, j := range sampleIdx(rng, len(in64[i]), 48) {
			old := in64[i][j]
			in64[i][j] = old + h
			lp := loss()
			in64[i][j] = old - h
			lm := loss()
			in64[i][j] = old
			num := (lp - lm) / (2 * h)
			if d := math.Abs(float64(an[j]) - num); d > 1e-3*(1+math.Abs(num)) {
				t.Errorf("%s: d input%d[%d] analytic %.7g, float64 numeric %.7g", c.name, i, j, an[j], num)
				break
			}
		}
	}
}

// sampleIdx returns up to k distinct indices of [0,n): the first and last
// and random others, in increasing order.
func sampleIdx(rng *rand.Rand, n, k int) []int {
	if n <= k {
		idx := make([]int, n)
		for i := range idx {
			idx[i] = i
		}
		return idx
	}
	seen := map[int]bool{0: true, n - 1: true}
	for len(seen) < k {
		seen[rng.IntN(n)] = true
	}
	idx := make([]int, 0, k)
	for i := 0; i < n; i++ {
		if seen[i] {
			idx = append(idx, i)
		}
	}
	return idx
}

// TestAttnOpGradients checks every op of the competitor models against a
// float64 reference forward: the float32 forward must match it, and the
// op's gradients (through Gorgonia) must match central differences of the
// reference at sampled entries (padding rows included, where the gradient
// must be zero), with one and two threads, on a batch of 300+ real nodes
// (three row chunks) padded to more than a multiple of 64 rows.
func TestAttnOpGradients(t *testing.T) {
	const d, H, maxDist = 8, 2, 3
	sizes := []int{40, 0, 7, 1, 130, 60, 80}
	_, b := attnBatch(t, 9, sizes, maxDist)
	n := b.N
	N := roundUp(n, NodeBucket) + NodeBucket
	for _, threads := range []int{1, 2} {
		be := env{Backend: kernels.CPU{Threads: threads}}
		rng := rand.New(rand.NewPCG(1, uint64(threads)))
		bd := newBatchData(b, []data.CSR{b.Adj})
		gcn, gat, gph := &graphData{}, &graphData{}, &graphData{}
		for _, x := range []struct {
			gd   *graphData
			kind string
		}{{gcn, KindGCN}, {gat, KindGAT}, {gph, KindGraphormer}} {
			if err := x.gd.set(b, x.kind, maxDist); err != nil {
				t.Fatal(err)
			}
		}
		B := maxDist + 2
		cases := []refCase{
			{opCase{name: "gcn aggregation", op: op.Adapt(nil, newGCNAgg("gcn", be, bd, gcn, N, d)),
				in: [][]float32{randFloats(rng, N*d, 1)}, shapes: [][]int{{N, d}}, h: 1e-2, tol: 2e-2, zeroFrom: n * d},
				func(in [][]float64) []float64 { return refGCN(b, in[0], N, d) }},
			{opCase{name: "gat attention", op: op.Adapt(nil, newGATAttn("gat", be, bd, gat, H, N, d)),
				in:     [][]float32{randFloats(rng, N*d, 1), randFloats(rng, d, 0.7), randFloats(rng, d, 0.7)},
				shapes: [][]int{{N, d}, {H, d / H}, {H, d / H}}, h: 1e-3, tol: 3e-2, zeroFrom: n * d},
				func(in [][]float64) []float64 { return refGAT(b, in[0], in[1], in[2], H, N, d) }},
			{opCase{name: "graph attention", op: op.Adapt(nil, newGraphAttn("attn", be, bd, gph, H, B, N, d)),
				in: [][]float32{randFloats(rng, N*d, 1), randFloats(rng, N*d, 1), randFloats(rng, N*d, 1),
					randFloats(rng, B*H, 1)},
				shapes: [][]int{{N, d}, {N, d}, {N, d}, {B, H}}, h: 1e-2, tol: 2e-2, zeroFrom: n * d},
				func(in [][]float64) []float64 { return refGraphAttn(b, gph, in[0], in[1], in[2], in[3], H, B, N, d) }},
			{opCase{name: "degree embedding", op: op.Adapt(nil, newDegEmb("deg", be, bd, gph, N, d)),
				in:     [][]float32{randFloats(rng, N*d, 1), randFloats(rng, (MaxDegree+1)*d, 1)},
				shapes: [][]int{{N, d}, {MaxDegree + 1, d}}, h: 1e-2, tol: 1e-2, zeroFrom: n * d},
				func(in [][]float64) []float64 { return refDegEmb(b, in[0], in[1], N, d) }},
			{opCase{name: "layer norm", op: op.Adapt(nil, newLayerNorm("ln", be, bd, N, d)),
				in:     [][]float32{randFloats(rng, N*d, 1), randFloats(rng, d, 1), randFloats(rng, d, 1)},
				shapes: [][]int{{N, d}, {d}, {d}}, h: 1e-2, tol: 3e-2, zeroFrom: n * d},
				func(in [][]float64) []float64 { return refLayerNorm(n, in[0], in[1], in[2], N, d) }},
			{opCase{name: "relu", op: op.Adapt(nil, newReLU("relu", 50, 3)),
				in: [][]float32{awayFromZero(randFloats(rng, 150, 1))}, shapes: [][]int{{50, 3}}, h: 1e-3, tol: 1e-3},
				func(in [][]float64) []float64 {
					y := make([]float64, len(in[0]))
					for i, v := range in[0] {
						y[i] = math.Max(v, 0)
					}
					return y
				}},
		}
		for _, c := range cases {
			c.name = fmt.Sprintf("%s (threads %d)", c.name, threads)
			t.Run(c.name, func(t *testing.T) {
				checkRef(t, c)
			})
		}
	}
}

// awayFromZero moves entries out of (-0.05, 0.05) so that no central
// difference crosses the ReLU kink.
func awayFromZero(x []float32) []float32 {
	for i, v := range x {
		if math.Abs(float64(v)) < 0.05 {
			x[i] = 0.1
		}
	}
	return x
}

func degreeOf(b *data.Batch, u int) int { return int(b.Adj.Ptr[u+1] - b.Adj.Ptr[u]) }

func refGCN(b *data.Batch, x []float64, N, d int) []float64 {
	y := make([]float64, N*d)
	for u := 0; u < b.N; u++ {
		du := float64(degreeOf(b, u) + 1)
		for j := 0; j < d; j++ {
			y[u*d+j] = x[u*d+j] / du
		}
		for _, v := range b.Adj.Row(u) {
			w := 1 / math.Sqrt(du*float64(degreeOf(b, int(v))+1))
			for j := 0; j < d; j++ {
				y[u*d+j] += w * x[int(v)*d+j]
			}
		}
	}
	return y
}

func refGAT(b *data.Batch, z, aSrc, aDst []float64, H, N, d int) []float64 {
	dh := d / H
	y := make([]float64, N*d)
	for u := 0; u < b.N; u++ {
		nb := append([]int32{int32(u)}, b.Adj.Row(u)...)
		for h := 0; h < H; h++ {
			c := h * dh
			e := make([]float64, len(nb))
			m := math.Inf(-1)
			for i, v := range nb {
				var p float64
				for j := 0; j < dh; j++ {
					p += aDst[c+j]*z[u*d+c+j] + aSrc[c+j]*z[int(v)*d+c+j]
				}
				if p < 0 {
					p *= GATSlope
				}
				e[i] = p
				m = math.Max(m, p)
			}
			var s float64
			for i := range e {
				e[i] = math.Exp(e[i] - m)
				s += e[i]
			}
			for i, v := range nb {
				for j := 0; j < dh; j++ {
					y[u*d+c+j] += e[i] / s * z[int(v)*d+c+j]
				}
			}
		}
	}
	return y
}

func refGraphAttn(b *data.Batch, gd *graphData, q, k, v, bias []float64, H, B, N, d int) []float64 {
	dh := d / H
	y := make([]float64, N*d)
	for j := 0; j < b.NumGraphs; j++ {
		p0, p1 := int(b.GraphPtr[j]), int(b.GraphPtr[j+1])
		nj := p1 - p0
		for u := p0; u < p1; u++ {
			for h := 0; h < H; h++ {
				c := h * dh
				s := make([]float64, nj)
				m := math.Inf(-1)
				for w := 0; w < nj; w++ {
					var x float64
					for i := 0; i < dh; i++ {
						x += q[u*d+c+i] * k[(p0+w)*d+c+i]
					}
					bk := int(gd.bucket[gd.boff[j]+(u-p0)*nj+w])
					s[w] = x/math.Sqrt(float64(dh)) + bias[bk*H+h]
					m = math.Max(m, s[w])
				}
				var sum float64
				for w := range s {
					s[w] = math.Exp(s[w] - m)
					sum += s[w]
				}
				for w := range s {
					for i := 0; i < dh; i++ {
						y[u*d+c+i] += s[w] / sum * v[(p0+w)*d+c+i]
					}
				}
			}
		}
	}
	return y
}

func refDegEmb(b *data.Batch, x, emb []float64, N, d int) []float64 {
	y := make([]float64, N*d)
	for u := 0; u < b.N; u++ {
		dg := min(degreeOf(b, u), MaxDegree)
		for j := 0; j < d; j++ {
			y[u*d+j] = x[u*d+j] + emb[dg*d+j]
		}
	}
	return y
}

func refLayerNorm(n int, x, gamma, beta []float64, N, d int) []float64 {
	y := make([]float64, N*d)
	for u := 0; u < n; u++ {
		var mu, s float64
		for j := 0; j < d; j++ {
			mu += x[u*d+j]
		}
		mu /= float64(d)
		for j := 0; j < d; j++ {
			s += (x[u*d+j] - mu) * (x[u*d+j] - mu)
		}
		inv := 1 / math.Sqrt(s/float64(d)+LayerNormEps)
		for j := 0; j < d; j++ {
			y[u*d+j] = (x[u*d+j]-mu)*inv*gamma[j] + beta[j]
		}
	}
	return y
}
