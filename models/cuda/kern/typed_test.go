package kern_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/internal/testkit/kerntest"
	"github.com/spn-project/spn/internal/testkit/synth"
	"github.com/spn-project/spn/models/kernels"
	"github.com/spn-project/spn/models/nbop"
)

// relBatch returns a batch of synth.Relational graphs (three relations,
// hop sets up to k) over more than one chunk of rows.
func relBatch(t *testing.T, k int) *data.Batch {
	t.Helper()
	ds, hops, err := synth.Relational(3, 40, k)
	if err != nil {
		t.Fatal(err)
	}
	b := kerntest.AllGraphs(t, ds, hops, k)
	if len(b.Rel) < 2 {
		t.Fatalf("%d relations: want relations", len(b.Rel))
	}
	return b
}

// transposes returns kernels.Transpose of every set.
func transposes(sets []data.CSR) []data.CSR {
	var out []data.CSR
	for _, s := range sets {
		out = append(out, kernels.Transpose(s))
	}
	return out
}

// TestRelAggregate compares R-SPN's relation sums, forward and backward
// (spn_rel_sum, spn_rel_gather_t: the relations in one launch and in two),
// with models/nbop's RelAgg (kernels.RelAggregate and RelAggregateGrad):
// the same bits.
func TestRelAggregate(t *testing.T) {
	const d = 5
	b := relBatch(t, 2)
	n, R := b.N, len(b.Rel)
	rng := rand.New(rand.NewPCG(20, 21))
	xs := make([][]float32, R)
	for j := range xs {
		xs[j] = kerntest.Randn(rng, n*d, 1)
	}
	dy := kerntest.Randn(rng, n*d, 1)
	D := &nbop.Data{N: n, Rel: b.Rel, RelT: transposes(b.Rel)}
	op := nbop.RelAgg{ID: "rel", Be: kernels.CPU{Threads: 2}, D: D, R: R, N: n, W: d}
	y := make([]float32, n*d)
	if err := op.Forward(xs, y); err != nil {
		t.Fatal(err)
	}
	g := make([][]float32, R)
	for j := range g {
		g[j] = make([]float32, n*d)
	}
	if err := op.Backward(xs, y, dy, g); err != nil {
		t.Fatal(err)
	}

	ptr, idx := flat(t, b.Rel, n)
	ptrT, idxT := flat(t, D.RelT, n)
	// All R relations in one launch, and split in two launches (the
	// first relation, then the others from r0 = 1), as RelAgg splits
	// more than eight.
	for _, split := range [][]int{{0, R}, {0, 1, R}} {
		for _, block := range []int{64, 7} {
			ky := make([]float32, n*d)
			dx := make([][]float32, R)
			for j := range dx {
				dx[j] = kerntest.Randn(rng, n*d, 1) // overwritten
			}
			for s := 0; s+1 < len(split); s++ {
				r0, count := split[s], split[s+1]-split[s]
				launch(t, "spn_rel_sum", cover(n*d, block), block, append(append([]any{ky}, group(xs[r0:r0+count])...), ptr, idx, r0, count, n, d)...)
				launch(t, "spn_rel_gather_t", cover(count*n*d, block), block, append(group(dx[r0:r0+count]), dy, ptrT, idxT, r0, count, n, d)...)
			}
			equalBits(t, "y", ky, y)
			for j := range dx {
				equalBits(t, "dX_r", dx[j], g[j])
			}
		}
	}
}

// TestCombineGiven compares the kernels of the combination with a given
// first hop (R-SPN's: y = (1+ε)·S + α_1·R + Σ_{i≥2} α_i·A_i·H), forward
// and backward, with nbop.GivenFirstHop: y, dS, dR and dH bit for bit, dα
// and dε within 1e-6·Σ|products| (float32 partial dot products on the
// CPU, double ones in the kernel). k = 1 has no higher hops.
func TestCombineGiven(t *testing.T) {
	const d = 6
	for _, k := range []int{3, 1} {
		b := relBatch(t, k)
		n := b.N
		rng := rand.New(rand.NewPCG(22, uint64(k)))
		S, Rs, H, dy := kerntest.Randn(rng, n*d, 1), kerntest.Randn(rng, n*d, 1), kerntest.Randn(rng, n*d, 1), kerntest.Randn(rng, n*d, 1)
		alpha, eps := kerntest.Randn(rng, k, 0.5), []float32{0.3}
		D := &nbop.Data{N: n, Hops: b.Hop[1:k], HopsT: transposes(b.Hop[1:k])}
		op := nbop.GivenFirstHop{ID: "combine", Be: kernels.CPU{Threads: 2}, D: D, K: k, N: n, W: d}
		in := [][]float32{S, Rs, H, alpha, eps}
		y := make([]float32, n*d)
		if err := op.Forward(in, y); err != nil {
			t.Fatal(err)
		}
		g := [][]float32{make([]float32, n*d), make([]float32, n*d), make([]float32, n*d), make([]float32, k), make([]float32, 1)}
		if err := op.Backward(in, y, dy, g); err != nil {
			t.Fatal(err)
		}

		ptr, idx := flat(t, D.Hops, n)
		ky := make([]float32, n*d)
		launch(t, "spn_hop_aggregate", cover(n*d, 64), 64, ky, []float32(nil), H, ptr, idx, alpha[1:], []float32(nil), k-1, n, d)
		launch(t, "spn_combine_terms", cover(n*d, 64), 64, ky, S, Rs, alpha, eps, n*d)
		equalBits(t, "y", ky, y)

		dS, dR := make([]float32, n*d), make([]float32, n*d)
		launch(t, "spn_combine_terms_backward", cover(n*d, 64), 64, dS, dR, dy, alpha, eps, n*d)
		equalBits(t, "dS", dS, g[0])
		equalBits(t, "dR", dR, g[1])
		ptrT, idxT := flat(t, D.HopsT, n)
		dH, T := make([]float32, n*d), make([]float32, max(k-1, 1)*n*d)
		launch(t, "spn_hop_aggregate", cover(n*d, 64), 64, dH, T, dy, ptrT, idxT, alpha[1:], []float32(nil), k-1, n, d)
		equalBits(t, "dH", dH, g[2])

		// dα_1 = ⟨dy, R⟩, dε = ⟨dy, S⟩, dα_i = ⟨H, A_iᵀ·dy⟩.
		dot := func(what string, g, xs []float32, m int, want []float32) {
			t.Helper()
			got := dots(t, g, xs, m, nil, n, d, 8)
			for i := 0; i < m; i++ {
				near(t, what, got[i:i+1], want[i:i+1], dotTol*kerntest.AbsDot(g, xs[i*n*d:(i+1)*n*d]), 0)
			}
		}
		dot("dα_1", dy, Rs, 1, g[3][:1])
		dot("dε", dy, S, 1, g[4])
		if k > 1 {
			dot("dα_i", H, T, k-1, g[3][1:])
		}
	}
}

// TestGatedSum compares GNN-FiLM's gated sum and its gradient with the
// loops of models/rt's op (σ in double: Go's math.Exp against the C
// library's, 1e-6 relative) on graphs with an empty one and padding rows,
// and spn_copy_cols's concatenation and split with plain copies.
func TestGatedSum(t *testing.T) {
	const c, N = 3, 150
	off := []int32{0, 3, 3, 10, 140, 141}
	G := len(off) - 1
	rng := rand.New(rand.NewPCG(24, 25))
	z, tv, dy := kerntest.Randn(rng, N*c, 2), kerntest.Randn(rng, N*c, 1), kerntest.Randn(rng, G*c, 1)
	sig := func(x float32) float64 { return 1 / (1 + math.Exp(-float64(x))) }
	y, dz, dt := make([]float32, G*c), make([]float32, N*c), make([]float32, N*c)
	for g := 0; g < G; g++ {
		for r := int(off[g]); r < int(off[g+1]); r++ {
			for j := 0; j < c; j++ {
				i := r*c + j
				s := sig(z[i])
				y[g*c+j] += float32(s) * tv[i]
				dz[i] = float32(float64(dy[g*c+j]) * float64(tv[i]) * s * (1 - s))
				dt[i] = float32(float64(dy[g*c+j]) * s)
			}
		}
	}
	ky, kdz, kdt := make([]float32, G*c), make([]float32, N*c), make([]float32, N*c)
	launch(t, "spn_gated_sum", cover(G*c, 4), 4, ky, z, tv, off, G, c)
	near(t, "y", ky, y, 1e-6, expTol)
	launch(t, "spn_gated_sum_backward", cover(G*c, 4), 4, kdz, kdt, z, tv, dy, off, G, c)
	near(t, "dz", kdz, dz, 1e-12, expTol)
	near(t, "dt", kdt, dt, 1e-12, expTol)

	const n, a, b = 7, 2, 3
	x1, x2 := kerntest.Randn(rng, n*a, 1), kerntest.Randn(rng, n*b, 1)
	cat := make([]float32, n*(a+b))
	launch(t, "spn_copy_cols", cover(n*a, 4), 4, cat, x1, n, a, a+b, 0, a, 0)
	launch(t, "spn_copy_cols", cover(n*b, 4), 4, cat, x2, n, b, a+b, a, b, 0)
	want := make([]float32, 0, n*(a+b))
	for r := 0; r < n; r++ {
		want = append(append(want, x1[r*a:(r+1)*a]...), x2[r*b:(r+1)*b]...)
	}
	equalBits(t, "[x1, x2]", cat, want)
	back := make([]float32, n*b)
	launch(t, "spn_copy_cols", cover(n*b, 4), 4, back, cat, n, b, b, 0, a+b, a)
	equalBits(t, "the columns of x2", back, x2)
}

// TestGCNPropagate compares GCN's propagation with the loop of
// models/gcn's op (self loop first, then the adjacency's entries in
// order): the same bits.
func TestGCNPropagate(t *testing.T) {
	const d = 4
	b := relBatch(t, 1)
	n, a := b.N, b.Adj
	rng := rand.New(rand.NewPCG(26, 27))
	x := kerntest.Randn(rng, n*d, 1)
	w, self := kerntest.Randn(rng, len(a.Idx), 0.5), kerntest.Randn(rng, n, 0.5)
	want := make([]float32, n*d)
	for u := 0; u < n; u++ {
		for j := 0; j < d; j++ {
			s := self[u] * x[u*d+j]
			for e := a.Ptr[u]; e < a.Ptr[u+1]; e++ {
				s += w[e] * x[int(a.Idx[e])*d+j]
			}
			want[u*d+j] = s
		}
	}
	for _, block := range []int{64, 3} {
		y := make([]float32, n*d)
		launch(t, "spn_gcn_propagate", cover(n*d, block), block, y, x, a.Ptr, a.Idx, w, self, n, d)
		equalBits(t, "y", y, want)
	}
}

// TestEmbedSum compares OGB's categorical embedding sum and the gradient
// of its tables (spn_embed_part and spn_embed_backward over
// nbop.EmbedRows) with kernels.EmbedSum and EmbedSumGrad, for the node
// features and the edge features of a batch of synth.Relational graphs:
// the same bits (the gradient's rows of more than one chunk of entries
// within rounding, checkEmbedGrad).
func TestEmbedSum(t *testing.T) {
	const d = 6
	b := relBatch(t, 1)
	rng := rand.New(rand.NewPCG(28, 29))
	for _, c := range []struct {
		name  string
		x     []int32
		vocab []int
		n     int
	}{
		{"node features", b.NodeCat, b.NodeCatVocab, b.N},
		{"edge features", b.EdgeFeat, b.EdgeFeatVocab, len(b.Adj.Idx)},
	} {
		off, rows := kernels.EmbedOffsets(c.vocab)
		if len(off) < 2 || len(c.x) != c.n*len(off) {
			t.Fatalf("%s: %d values for %d entries × %d columns: want two columns or more", c.name, len(c.x), c.n, len(off))
		}
		T := kerntest.Randn(rng, rows*d, 1)
		dy := kerntest.Randn(rng, c.n*d, 1)
		want, wantT := make([]float32, c.n*d), make([]float32, rows*d)
		kernels.EmbedSum(kernels.CPU{Threads: 1}, want, T, kernels.Categorical{X: c.x, Off: off, N: c.n}, d)
		kernels.EmbedSumGrad(wantT, dy, kernels.Categorical{X: c.x, Off: off, N: c.n}, d)
		y, dT := make([]float32, c.n*d), make([]float32, rows*d)
		launch(t, "spn_embed_sum", cover(c.n*d, 32), 32, y, T, c.x, off, c.n, len(off), d)
		equalBits(t, c.name+": y", y, want)
		ptr, idx := nbop.EmbedRows(c.x, off, c.n)
		used := len(ptr) - 1
		if used > rows {
			t.Fatalf("%s: %d table rows used, %d in the tables", c.name, used, rows)
		}
		embedGrad(t, dT[:used*d], dy, ptr, idx, d, 32)
		checkEmbedGrad(t, c.name+": dT", dT, wantT, dy, ptr, idx, d)
	}
}

// TestEdgeMessages compares E-SPN's first hop, forward and backward, with
// models/kernels' EdgeMessages and EdgeMessagesGrad (the gradients of h
// and of the edge embeddings, the latter through spn_embed_part and
// spn_embed_backward over the entries' bond features as nbop.EdgeMsg adds
// it), over a batch of synth.Relational graphs with half the messages
// below 0: the same bits (the edge embeddings' gradient rows of more than
// one chunk of entries within rounding, checkEmbedGrad).
func TestEdgeMessages(t *testing.T) {
	const d = 5
	b := relBatch(t, 1)
	n, a := b.N, b.Adj
	E := len(a.Idx)
	in := kernels.IncomingEntries(a)
	off, rows := kernels.EmbedOffsets(b.EdgeFeatVocab)
	rng := rand.New(rand.NewPCG(30, 31))
	h, T, dy := kerntest.Randn(rng, n*d, 1), kerntest.Randn(rng, rows*d, 1), kerntest.Randn(rng, n*d, 1)
	be := kernels.CPU{Threads: 1}
	e := make([]float32, E*d)
	kernels.EmbedSum(be, e, T, kernels.Categorical{X: b.EdgeFeat, Off: off, N: E}, d)
	want, wantDh, wantDe, wantDT := make([]float32, n*d), make([]float32, n*d), make([]float32, E*d), make([]float32, rows*d)
	kernels.EdgeMessages(be, want, kernels.EdgeInputs{H: h, E: e, Adj: a, N: n, D: d})
	kernels.EdgeMessagesGrad(be, wantDh, wantDe, dy, kernels.EdgeInputs{H: h, E: e, Adj: a, In: in, N: n, D: d})
	kernels.EmbedSumGrad(wantDT, wantDe, kernels.Categorical{X: b.EdgeFeat, Off: off, N: E}, d)
	zeros := 0
	for _, v := range wantDe {
		if v == 0 {
			zeros++
		}
	}
	if zeros < E*d/4 || zeros > 3*E*d/4 {
		t.Fatalf("%d of %d messages cut by the ReLU: want about half", zeros, E*d)
	}
	ke := make([]float32, E*d)
	launch(t, "spn_embed_sum", cover(E*d, 32), 32, ke, T, b.EdgeFeat, off, E, len(off), d)
	equalBits(t, "e", ke, e)
	y, dh, de, dT := make([]float32, n*d), make([]float32, n*d), make([]float32, E*d), make([]float32, rows*d)
	launch(t, "spn_edge_messages", cover(n*d, 32), 32, y, h, ke, a.Ptr, a.Idx, n, d)
	equalBits(t, "y", y, want)
	launch(t, "spn_edge_messages_mask", cover(n*d, 32), 32, de, dy, h, ke, a.Ptr, a.Idx, n, d)
	equalBits(t, "de", de, wantDe)
	launch(t, "spn_gather_rows", cover(n*d, 32), 32, dh, de, in.Ptr, in.Idx, n, d)
	equalBits(t, "dh", dh, wantDh)
	ptr, idx := nbop.EmbedRows(b.EdgeFeat, off, E)
	embedGrad(t, dT[:(len(ptr)-1)*d], de, ptr, idx, d, 32)
	checkEmbedGrad(t, "dT", dT, wantDT, de, ptr, idx, d)
}

// TestGraphSumBroadcast compares the global readout's graph sums with
// models/kernels' GraphSumBroadcast over a batch of synth.Relational
// graphs of more than one row chunk: the same bits.
func TestGraphSumBroadcast(t *testing.T) {
	const d = 5
	b := relBatch(t, 1)
	G, n := b.NumGraphs, b.N
	rng := rand.New(rand.NewPCG(32, 33))
	x := kerntest.Randn(rng, n*d, 1)
	want, y := make([]float32, n*d), make([]float32, n*d)
	kernels.GraphSumBroadcast(kernels.CPU{Threads: 1}, want, x, b.GraphPtr, d)
	launch(t, "spn_graph_sum_broadcast", cover(G*d, 8), 8, y, x, b.GraphPtr, G, d)
	equalBits(t, "y", y, want)
}
