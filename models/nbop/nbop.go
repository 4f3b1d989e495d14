// Package nbop holds the differentiable ops of the SP-MPNNs over typed
// neighbourhoods (R-SPN, E-SPN, and the global readout of the SPN kinds),
// each an op.Op written once over the kernels of models/kernels:
//
//   - Combine: y = (1+ε)·S + α_1·R + Σ_{i=2..k} α_i·A_i·H, the SP-MPNN
//     combination whose first-hop term R is given (relation sums, edge
//     messages, …) and whose higher hops aggregate H over N_2..N_k;
//   - RelAgg: y_u = Σ_j Σ_{v: r_j(u,v)} X_j[v], the relation sums of R-SPN;
//   - EdgeMsg: y_u = Σ_{v∈N(u)} ReLU(h_v + e_uv) with e_uv from a
//     BondEncoder table, E-SPN's first hop;
//   - CatEmbed: OGB's AtomEncoder/BondEncoder sum of one embedding per
//     categorical column;
//   - GlobalRead: y_u = (Σ_{v∈G(u)} x_v)·W, the learnable global readout
//     term of an SP-MPNN with global readout;
//   - BCE: multi-task binary cross-entropy with logits, missing labels
//     (NaN) ignored.
//
// Node-level tensors have N ≥ n rows (the compiled graph's padded size):
// the ops compute on the batch's n real rows (graph-level: g rows) and
// write zeros into the padding.
package nbop

import (
	"fmt"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/models/kernels"
	"github.com/spn-project/spn/models/op"
)

// Data is the per-batch data the ops read when they run; Set points it at
// a batch before every run of a compiled graph.
type Data struct {
	// N and G are the batch's real node and graph counts.
	N, G int
	// Ptr are the graph offsets (len G+1).
	Ptr []int32
	// Hops are N_2..N_k (Combine's higher hops), HopsT their transposes.
	Hops, HopsT []data.CSR
	// Hop1 is N_1 (or the adjacency) when Combine aggregates the first hop
	// itself (Combine.Hop1), Hop1T its transpose.
	Hop1, Hop1T data.CSR
	// Rel are the relations r_1..r_R, RelT their transposes.
	Rel, RelT []data.CSR
	// Adj is the adjacency, AdjIn its incoming entries
	// (kernels.IncomingEntries), EdgeFeat its categorical edge features
	// and EdgeOff the first table row of every edge feature column.
	Adj, AdjIn data.CSR
	EdgeFeat   []int32
	EdgeOff    []int32
	// NodeCat are the categorical node features, NodeOff the first table
	// row of every column.
	NodeCat []int32
	NodeOff []int32
	// Target are the G×t targets (BCE: 0, 1 or NaN).
	Target []float64
}

// Need says which parts of a batch Set prepares.
type Need struct {
	// K is the hop count: Combine reads N_2..N_K.
	K int
	// Relations, Edges: the relations (R-SPN), the adjacency with its
	// edge features (E-SPN).
	Relations, Edges bool
}

// Set points d at batch b, which must carry what need asks for (the
// model's batch check verifies it first).
func (d *Data) Set(b *data.Batch, need Need) error {
	if len(b.Hop) < need.K {
		return fmt.Errorf("batch carries %d hop sets, need %d", len(b.Hop), need.K)
	}
	*d = Data{N: b.N, G: b.NumGraphs, Ptr: b.GraphPtr, NodeCat: b.NodeCat, Target: b.Target}
	for i := 1; i < need.K; i++ {
		d.Hops = append(d.Hops, b.Hop[i])
		d.HopsT = append(d.HopsT, kernels.Transpose(b.Hop[i]))
	}
	if need.Relations {
		d.Rel = b.Rel
		for _, r := range b.Rel {
			d.RelT = append(d.RelT, kernels.Transpose(r))
		}
	}
	if need.Edges {
		d.Adj, d.AdjIn, d.EdgeFeat = b.Adj, kernels.IncomingEntries(b.Adj), b.EdgeFeat
		d.EdgeOff, _ = kernels.EmbedOffsets(b.EdgeFeatVocab)
	}
	d.NodeOff, _ = kernels.EmbedOffsets(b.NodeCatVocab)
	return nil
}

// Combine is the SP-MPNN combination over N×d node states
//
//	y = (1+ε)·S + α_1·R + Σ_{i=2..k} α_i·A_i·H
//
// with inputs S, R, H (N×d), α (k) and ε (1), A_i the 0/1 matrix of N_i.
// Its gradient: dS = (1+ε)·dy, dR = α_1·dy, dH = Σ_{i≥2} α_i·A_iᵀ·dy,
// dα_1 = ⟨dy, R⟩, dα_i = ⟨A_iᵀ·dy, H⟩, dε = ⟨dy, S⟩.
//
// With Hop1 the first hop is aggregated like the others, R = A_1·H (the
// SPN layer, paper eq. 1): inputs S, H, α, ε and
//
//	y = (1+ε)·S + Σ_{i=1..k} α_i·A_i·H
//
// with A_1 from Data.Hop1; then dH = Σ_{i≥1} α_i·A_iᵀ·dy and
// dα_i = ⟨A_iᵀ·dy, H⟩ for every i.
type Combine struct {
	ID      string
	Be      kernels.Backend
	D       *Data
	K, N, W int // hops, padded rows, width
	// Hop1: R is not an input, the first hop aggregates H over Data.Hop1.
	Hop1 bool
	// Bufs, when not nil, supplies the backward pass's scratch (k n×d
	// hop sums; every value is overwritten).
	Bufs op.Buffers
}

// Sig implements op.Op.
func (o Combine) Sig() op.Sig {
	nd := []int{o.N, o.W}
	if o.Hop1 {
		return op.Sig{ID: o.ID, In: [][]int{nd, nd, {o.K}, {1}}, Out: nd}
	}
	return op.Sig{ID: o.ID, In: [][]int{nd, nd, nd, {o.K}, {1}}, Out: nd}
}

// hops returns the hop sets Combine aggregates H over (transposed with t)
// and the α they take.
func (o Combine) hops(alpha []float32, t bool) ([]data.CSR, []float32, error) {
	if len(o.D.Hops) != o.K-1 || len(o.D.HopsT) != len(o.D.Hops) {
		return nil, nil, fmt.Errorf("%d higher hop sets for k = %d", len(o.D.Hops), o.K)
	}
	hs := o.D.Hops
	if t {
		hs = o.D.HopsT
	}
	if !o.Hop1 {
		return hs, alpha[1:], nil
	}
	h1 := o.D.Hop1
	if t {
		h1 = o.D.Hop1T
	}
	if h1.Len() != o.D.N {
		return nil, nil, fmt.Errorf("first hop set has %d rows for %d nodes", h1.Len(), o.D.N)
	}
	return append([]data.CSR{h1}, hs...), alpha, nil
}

// split returns the inputs S, R (nil with Hop1), H, α and ε.
func (o Combine) split(in [][]float32) (S, R, H, alpha, eps []float32) {
	if o.Hop1 {
		return in[0], nil, in[1], in[2], in[3]
	}
	return in[0], in[1], in[2], in[3], in[4]
}

// Forward implements op.Op.
func (o Combine) Forward(in [][]float32, y []float32) error {
	S, R, H, alpha, eps := o.split(in)
	n, d := o.D.N, o.W
	hops, a, err := o.hops(alpha, false)
	if err != nil {
		return err
	}
	clear(y[n*d:])
	o.Be.HopAggregate(y[:n*d], H[:n*d], hops, a, 0, n, d)
	s := 1 + eps[0]
	if R == nil {
		for i := range y[:n*d] {
			y[i] += s * S[i]
		}
		return nil
	}
	a1 := alpha[0]
	for i := range y[:n*d] {
		y[i] += s*S[i] + a1*R[i]
	}
	return nil
}

// Backward implements op.Op.
func (o Combine) Backward(in [][]float32, _, dy []float32, g [][]float32) error {
	S, R, H, alpha, eps := o.split(in)
	n, d := o.D.N, o.W
	hopsT, a, err := o.hops(alpha, true)
	if err != nil {
		return err
	}
	s := 1 + eps[0]
	gS, gH, gAlpha, gEps := g[0], g[1], g[2], g[3]
	if R != nil {
		gH, gAlpha, gEps = g[2], g[3], g[4]
	}
	for i, v := range dy[:n*d] {
		gS[i] = s * v
	}
	if R != nil {
		a1 := alpha[0]
		for i, v := range dy[:n*d] {
			g[1][i] = a1 * v
		}
	}
	T := make([][]float32, len(hopsT))
	for i := range T {
		if o.Bufs != nil {
			T[i] = o.Bufs.Buf(n * d)
		} else {
			T[i] = make([]float32, n*d)
		}
	}
	o.Be.HopAggregateSums(gH[:n*d], T, dy[:n*d], hopsT, a, 0, n, d)
	first := gAlpha[len(gAlpha)-len(hopsT):] // α of the aggregated hops
	if R != nil {
		dots := o.Be.Dots(dy[:n*d], [][]float32{R[:n*d], S[:n*d]}, n, d)
		gAlpha[0], gEps[0] = float32(dots[0]), float32(dots[1])
	} else {
		gEps[0] = float32(o.Be.Dots(dy[:n*d], [][]float32{S[:n*d]}, n, d)[0])
	}
	for i, v := range o.Be.Dots(H[:n*d], T, n, d) {
		first[i] = float32(v)
	}
	return nil
}

// RelAgg is R-SPN's relation aggregation over inputs X_1..X_R (N×d each):
// y_u = Σ_j Σ_{v: r_j(u,v)} X_j[v]; dX_j = A_{r_j}ᵀ·dy.
type RelAgg struct {
	ID      string
	Be      kernels.Backend
	D       *Data
	R, N, W int
}

// Sig implements op.Op.
func (o RelAgg) Sig() op.Sig {
	in := make([][]int, o.R)
	for j := range in {
		in[j] = []int{o.N, o.W}
	}
	return op.Sig{ID: o.ID, In: in, Out: []int{o.N, o.W}}
}

// Forward implements op.Op.
func (o RelAgg) Forward(in [][]float32, y []float32) error {
	if len(o.D.Rel) != o.R {
		return fmt.Errorf("batch has %d relations, op built for %d", len(o.D.Rel), o.R)
	}
	n := o.D.N
	clear(y[n*o.W:])
	kernels.RelAggregate(o.Be, y, nil, in, o.D.Rel, n, o.W)
	return nil
}

// Backward implements op.Op.
func (o RelAgg) Backward(_ [][]float32, _, dy []float32, g [][]float32) error {
	kernels.RelAggregateGrad(o.Be, g, dy, o.D.RelT, o.D.N, o.W)
	return nil
}

// EdgeMsg is E-SPN's first-hop aggregation over inputs h (N×d) and the
// stacked BondEncoder tables T (Rows×d):
//
//	y_u = Σ_{v∈N(u)} ReLU(h_v + e_uv),  e_uv = Σ_c T[off_c + f_uv,c]
//
// (the edge embeddings are recomputed in the backward rather than kept).
type EdgeMsg struct {
	ID         string
	Be         kernels.Backend
	D          *Data
	Rows, N, W int
}

// Sig implements op.Op.
func (o EdgeMsg) Sig() op.Sig {
	return op.Sig{ID: o.ID, In: [][]int{{o.N, o.W}, {o.Rows, o.W}}, Out: []int{o.N, o.W}}
}

// edges returns the embeddings e (E×d) of the batch's edge entries.
func (o EdgeMsg) edges(T []float32) []float32 {
	E := len(o.D.Adj.Idx)
	e := make([]float32, E*o.W)
	kernels.EmbedSum(o.Be, e, T, o.D.EdgeFeat, o.D.EdgeOff, E, o.W)
	return e
}

// Forward implements op.Op.
func (o EdgeMsg) Forward(in [][]float32, y []float32) error {
	if len(o.D.EdgeFeat) != len(o.D.Adj.Idx)*len(o.D.EdgeOff) || len(o.D.EdgeOff) == 0 {
		return fmt.Errorf("batch has %d edge feature values for %d edge entries × %d columns", len(o.D.EdgeFeat), len(o.D.Adj.Idx), len(o.D.EdgeOff))
	}
	n := o.D.N
	clear(y[n*o.W:])
	kernels.EdgeMessages(o.Be, y, in[0], o.edges(in[1]), o.D.Adj, n, o.W)
	return nil
}

// Backward implements op.Op.
func (o EdgeMsg) Backward(in [][]float32, _, dy []float32, g [][]float32) error {
	E := len(o.D.Adj.Idx)
	de := make([]float32, E*o.W)
	kernels.EdgeMessagesGrad(o.Be, g[0], de, dy, in[0], o.edges(in[1]), o.D.Adj, o.D.AdjIn, o.D.N, o.W)
	kernels.EmbedSumGrad(g[1], de, o.D.EdgeFeat, o.D.EdgeOff, E, o.W)
	return nil
}

// CatEmbed is OGB's AtomEncoder over the batch's categorical node features
// for the stacked tables T (Rows×d): y_u = Σ_c T[off_c + x_u,c].
type CatEmbed struct {
	ID         string
	Be         kernels.Backend
	D          *Data
	Rows, N, W int
}

// Sig implements op.Op.
func (o CatEmbed) Sig() op.Sig {
	return op.Sig{ID: o.ID, In: [][]int{{o.Rows, o.W}}, Out: []int{o.N, o.W}}
}

// Forward implements op.Op.
func (o CatEmbed) Forward(in [][]float32, y []float32) error {
	n := o.D.N
	if len(o.D.NodeCat) != n*len(o.D.NodeOff) || len(o.D.NodeOff) == 0 {
		return fmt.Errorf("batch has %d categorical node feature values for %d nodes × %d columns", len(o.D.NodeCat), n, len(o.D.NodeOff))
	}
	clear(y[n*o.W:])
	kernels.EmbedSum(o.Be, y, in[0], o.D.NodeCat, o.D.NodeOff, n, o.W)
	return nil
}

// Backward implements op.Op.
func (o CatEmbed) Backward(_ [][]float32, _, dy []float32, g [][]float32) error {
	kernels.EmbedSumGrad(g[0], dy, o.D.NodeCat, o.D.NodeOff, o.D.N, o.W)
	return nil
}

// GlobalRead is the global readout term of an SP-MPNN with global readout
// (paper §3), READ(h_u, {{h_v | v ∈ G}}) = (Σ_{v∈G} h_v)·W, a learnable
// d×d map of the graph's sum as the R of the ACR-GNN the paper's appendix
// builds on, for inputs x (N×d) and W (d×d). Its gradient: dW = Σ_u
// s_uᵀ·dy_u with s = GraphSum(x), dx = GraphSum(dy·Wᵀ).
type GlobalRead struct {
	ID   string
	Be   kernels.Backend
	D    *Data
	N, W int
}

// Sig implements op.Op.
func (o GlobalRead) Sig() op.Sig {
	return op.Sig{ID: o.ID, In: [][]int{{o.N, o.W}, {o.W, o.W}}, Out: []int{o.N, o.W}}
}

// Forward implements op.Op.
func (o GlobalRead) Forward(in [][]float32, y []float32) error {
	n, d := o.D.N, o.W
	s := make([]float32, n*d)
	kernels.GraphSumBroadcast(o.Be, s, in[0], o.D.Ptr, d)
	clear(y[n*d:])
	o.Be.MatMul(y[:n*d], s, in[1], nil, n, d, d)
	return nil
}

// Backward implements op.Op.
func (o GlobalRead) Backward(in [][]float32, _, dy []float32, g [][]float32) error {
	n, d := o.D.N, o.W
	s := make([]float32, n*d)
	kernels.GraphSumBroadcast(o.Be, s, in[0], o.D.Ptr, d)
	o.Be.MatMulAT(g[1], nil, s, dy[:n*d], n, d, d)
	t := make([]float32, n*d)
	o.Be.MatMulBT(t, dy[:n*d], in[1], n, d, d)
	kernels.GraphSumBroadcast(o.Be, g[0], t, o.D.Ptr, d)
	return nil
}

// BCE is the mean binary cross-entropy with logits over the labelled
// entries of the G×T outputs (targets 0, 1, or NaN for a missing label,
// which contributes neither loss nor gradient): a scalar.
type BCE struct {
	ID   string
	D    *Data
	G, T int
}

// Sig implements op.Op.
func (o BCE) Sig() op.Sig { return op.Sig{ID: o.ID, In: [][]int{{o.G, o.T}}} }

// Forward implements op.Op.
func (o BCE) Forward(in [][]float32, y []float32) error {
	m := o.D.G * o.T
	if len(o.D.Target) != m {
		return fmt.Errorf("batch has %d binary labels, want %d graphs × %d tasks", len(o.D.Target), o.D.G, o.T)
	}
	l, _ := kernels.BCEWithLogits(nil, in[0][:m], o.D.Target)
	y[0] = float32(l)
	return nil
}

// Backward implements op.Op.
func (o BCE) Backward(in [][]float32, _, dy []float32, g [][]float32) error {
	m := o.D.G * o.T
	kernels.BCEWithLogits(g[0][:m], in[0][:m], o.D.Target)
	for i := range g[0][:m] {
		g[0][i] *= dy[0]
	}
	return nil
}
