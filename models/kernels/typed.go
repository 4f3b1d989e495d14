package kernels

import (
	"math"

	"github.com/spn-project/spn/data/csr"
)

// This file holds the math of the neighbourhood ops the relational,
// edge-feature and global-readout SP-MPNNs add (R-SPN, E-SPN, SPN with
// global readout): each forward and its backward once, over Backend's
// deterministic row chunks. The Gorgonia ops of the model packages call
// these functions and nothing else.

// RelInputs are the inputs of RelAggregate: one N×D matrix per relation
// (Xs[j]) and the direct edges of every relation (Rel[j], a square CSR
// over the N rows).
type RelInputs struct {
	Xs   [][]float32
	Rel  []csr.CSR
	N, D int
}

// RelAggregate sets y (n×d) = Σ_j A_j·xs[j], where A_j is the 0/1 matrix
// of rel[j] (the direct edges of relation r_j) and xs, rel, n and d are
// in's: y_u = Σ_j Σ_{v: r_j(u,v)} xs[j]_v. sums, when not nil, receives
// A_j·xs[j] (n×d each) for the backward of a coefficient on y. An empty
// rel sets y to zero.
func RelAggregate(be Backend, y []float32, sums [][]float32, in RelInputs) {
	xs, rel, n, d := in.Xs, in.Rel, in.N, in.D
	y = y[:n*d]
	clear(y)
	one := []float32{1}
	var tmp []float32
	for j, a := range rel {
		s := tmp
		if sums != nil {
			s = sums[j][:n*d]
		} else if s == nil {
			tmp = make([]float32, n*d)
			s = tmp
		}
		be.HopAggregate(s, xs[j], HopMix{Hops: []csr.CSR{a}, Coef: one}, n, d)
		for i, v := range s {
			y[i] += v
		}
	}
}

// RelAggregateGrad sets dxs[j] (n×d) = A_jᵀ·dy for every relation, the
// gradient of RelAggregate; relT[j] is Transpose(rel[j]).
func RelAggregateGrad(be Backend, dxs [][]float32, dy []float32, relT []csr.CSR, n, d int) {
	one := []float32{1}
	for j, a := range relT {
		be.HopAggregate(dxs[j][:n*d], dy, HopMix{Hops: []csr.CSR{a}, Coef: one}, n, d)
	}
}

// EdgeInputs are the inputs of the E-SPN first-hop aggregation
// (EdgeMessages and EdgeMessagesGrad): the node states H (N×D), one edge
// embedding per entry of Adj, the square CSR Adj over the N nodes, and,
// for the gradient only, In = IncomingEntries(Adj). The embeddings are E
// (len(Adj.Idx)×D) when it is not nil; else each entry's is computed
// where it is read, EmbedSum's sum of the tables T over the entry's
// categories Cat (Cat.N = len(Adj.Idx)), the same bits without an
// entry-sized buffer.
type EdgeInputs struct {
	H, E    []float32
	T       []float32
	Cat     Categorical
	Adj, In csr.CSR
	N, D    int
}

// embedding returns entry p's embedding: a row of E, or EmbedSum's row p
// computed into buf (D floats).
func (in *EdgeInputs) embedding(buf []float32, p int) []float32 {
	if in.E != nil {
		return in.E[p*in.D : (p+1)*in.D]
	}
	embedRow(buf, in.T, in.Cat, p, in.D)
	return buf
}

// EdgeMessages sets y (n×d) to the E-SPN first-hop aggregation
//
//	y_u = Σ_{v ∈ N(u)} ReLU(h_v + e_uv)
//
// where the neighbours of u are the entries p of row u of adj (v =
// adj.Idx[p]) and e (len(adj.Idx)×d) holds one edge embedding per entry
// (h, e, adj, n and d are in's; in.In is not read).
func EdgeMessages(be Backend, y []float32, in EdgeInputs) {
	h, adj, n, d := in.H, in.Adj, in.N, in.D
	be.ForEachChunk(n, func(_, lo, hi int) {
		buf := make([]float32, d)
		for u := lo; u < hi; u++ {
			yu := y[u*d : (u+1)*d]
			clear(yu)
			for p := adj.Ptr[u]; p < adj.Ptr[u+1]; p++ {
				v := int(adj.Idx[p])
				hv, ep := h[v*d:(v+1)*d], in.embedding(buf, int(p))
				for j := range yu {
					if m := hv[j] + ep[j]; m > 0 {
						yu[j] += m
					}
				}
			}
		}
	})
}

// IncomingEntries returns, for every node v of the square CSR adj, the
// entries p with adj.Idx[p] == v in ascending order, as a CSR whose Idx
// holds entry indices: the scatter pattern of EdgeMessagesGrad, computed
// once per batch.
func IncomingEntries(adj csr.CSR) csr.CSR {
	n := adj.Len()
	in := csr.CSR{Ptr: make([]int32, n+1), Idx: make([]int32, len(adj.Idx))}
	for _, v := range adj.Idx {
		in.Ptr[v+1]++
	}
	for v := 0; v < n; v++ {
		in.Ptr[v+1] += in.Ptr[v]
	}
	next := append([]int32(nil), in.Ptr[:n]...)
	for p, v := range adj.Idx {
		in.Idx[next[v]] = int32(p)
		next[v]++
	}
	return in
}

// EdgeMessagesGrad is the backward of EdgeMessages over ei for the output
// gradient dy: it sets de_p = dy_u ⊙ 1[h_v + e_p > 0] for every entry
// p = (u, v) and dh_v = Σ_{p: adj.Idx[p] = v} de_p (in entry order; in =
// ei.In = IncomingEntries(adj)). de (len(adj.Idx)×d) is always written:
// the scatter into dh reads it.
func EdgeMessagesGrad(be Backend, dh, de, dy []float32, ei EdgeInputs) {
	h, adj, in, n, d := ei.H, ei.Adj, ei.In, ei.N, ei.D
	be.ForEachChunk(n, func(_, lo, hi int) {
		buf := make([]float32, d)
		for u := lo; u < hi; u++ {
			du := dy[u*d : (u+1)*d]
			for p := adj.Ptr[u]; p < adj.Ptr[u+1]; p++ {
				v := int(adj.Idx[p])
				hv, ep, dp := h[v*d:(v+1)*d], ei.embedding(buf, int(p)), de[int(p)*d:int(p+1)*d]
				for j := range dp {
					if hv[j]+ep[j] > 0 {
						dp[j] = du[j]
					} else {
						dp[j] = 0
					}
				}
			}
		}
	})
	be.ForEachChunk(n, func(_, lo, hi int) {
		for v := lo; v < hi; v++ {
			sumRows(dh[v*d:(v+1)*d], de, in.Idx[in.Ptr[v]:in.Ptr[v+1]], d)
		}
	})
}

// EmbedOffsets returns the first table row of every categorical column for
// the vocabulary sizes vocab (prefix sums) and the total number of rows.
func EmbedOffsets(vocab []int) (off []int32, rows int) {
	off = make([]int32, len(vocab))
	for c, v := range vocab {
		off[c] = int32(rows)
		rows += v
	}
	return off, rows
}

// Categorical are the categorical features of EmbedSum and EmbedSumGrad:
// N rows of C = len(Off) categories each, row-major in X (N×C), and the
// first table row of every column in Off (from EmbedOffsets).
type Categorical struct {
	X, Off []int32
	N      int
}

// EmbedSum sets y (n×d) to the sum of one learnable embedding per
// categorical column (OGB's AtomEncoder / BondEncoder):
//
//	y_u = Σ_c T[off[c] + x[u·C + c]]
//
// where x holds n×C categories (C = len(off); x, off and n are cat's) and
// T (rows×d) stacks the tables of the C columns (off from EmbedOffsets).
// The categories must lie in their column's vocabulary (checked when the
// batch is built).
func EmbedSum(be Backend, y, table []float32, cat Categorical, d int) {
	be.ForEachChunk(cat.N, func(_, lo, hi int) {
		for u := lo; u < hi; u++ {
			embedRow(y[u*d:(u+1)*d], table, cat, u, d)
		}
	})
}

// EmbedSumOnto sets y (n×d) to x + EmbedSum over the n rows of cat:
// y_u = x_u + Σ_c T[off[c] + x[u·C + c]], each row's sum computed as
// EmbedSum computes it and then added to x_u, the bits of EmbedSum into
// a buffer followed by an elementwise x + that buffer.
func EmbedSumOnto(be Backend, y, x, table []float32, cat Categorical, d int) {
	be.ForEachChunk(cat.N, func(_, lo, hi int) {
		buf := make([]float32, d)
		for u := lo; u < hi; u++ {
			embedRow(buf, table, cat, u, d)
			yu, xu := y[u*d:(u+1)*d], x[u*d:(u+1)*d]
			for j, v := range buf {
				yu[j] = xu[j] + v
			}
		}
	})
}

// embedRow sets y (d floats) to row u of EmbedSum: zero, then the tables'
// rows of u's categories added column by column.
func embedRow(y, table []float32, cat Categorical, u, d int) {
	C := len(cat.Off)
	y = y[:d]
	clear(y)
	for c, k := range cat.X[u*C : (u+1)*C] {
		r := int(cat.Off[c] + k)
		for j, v := range table[r*d : (r+1)*d] {
			y[j] += v
		}
	}
}

// EmbedSumGrad adds the gradient of EmbedSum to dT: dy_u to row
// off[c] + x[u·C + c] for every node u and column c (x, off and n are
// cat's), in node order (one thread: the scatter is cheap and its order
// fixed).
func EmbedSumGrad(dT, dy []float32, cat Categorical, d int) {
	x, off, n := cat.X, cat.Off, cat.N
	C := len(off)
	for u := 0; u < n; u++ {
		du := dy[u*d : (u+1)*d]
		for c := 0; c < C; c++ {
			r := int(off[c] + x[u*C+c])
			dr := dT[r*d : (r+1)*d]
			for j, v := range du {
				dr[j] += v
			}
		}
	}
}

// GraphSumBroadcast sets y (n×d) to the sum of x over each node's graph,
// y_u = Σ_{v ∈ G(u)} x_v, for the graphs ptr (len g+1: graph j holds rows
// ptr[j]..ptr[j+1]-1, ptr[g] = n). The map is symmetric, so it is its own
// gradient: dx = GraphSumBroadcast(dy).
func GraphSumBroadcast(be Backend, y, x []float32, ptr []int32, d int) {
	g := len(ptr) - 1
	be.ForEachChunk(g, func(_, lo, hi int) {
		s := make([]float32, d)
		for j := lo; j < hi; j++ {
			a, b := int(ptr[j]), int(ptr[j+1])
			clear(s)
			for u := a; u < b; u++ {
				for c, v := range x[u*d : (u+1)*d] {
					s[c] += v
				}
			}
			for u := a; u < b; u++ {
				copy(y[u*d:(u+1)*d], s)
			}
		}
	})
}

// BCEWithLogits returns the mean binary cross-entropy with logits over the
// labelled entries of z (targets y: 0, 1, or NaN for a missing label, which
// is ignored), computed stably as max(z,0) − z·y + log(1 + e^{−|z|}), and
// writes its gradient (σ(z) − y)/m into dz (0 at missing labels), m being
// the number of labelled entries. With no labelled entry the loss and the
// gradient are 0. dz may be nil.
func BCEWithLogits(dz, z []float32, y []float64) (loss float64, labelled int) {
	labelled = Labelled(y)
	for i, t := range y {
		if math.IsNaN(t) {
			if dz != nil {
				dz[i] = 0
			}
			continue
		}
		x := float64(z[i])
		loss += math.Max(x, 0) - x*t + math.Log1p(math.Exp(-math.Abs(x)))
		if dz != nil {
			dz[i] = float32((1/(1+math.Exp(-x)) - t) / float64(labelled))
		}
	}
	if labelled > 0 {
		loss /= float64(labelled)
	}
	return loss, labelled
}
