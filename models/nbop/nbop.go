// Package nbop holds the differentiable ops of the SP-MPNNs over typed
// neighbourhoods (R-SPN, E-SPN, and the global readout of the SPN kinds),
// each an op.Op written once over the kernels of models/kernels:
//
//   - HopCombine: y = (1+ε)·H + Σ_{i=1..k} α_i·A_i·H, the SPN layer's
//     aggregation (hopcombine.go);
//   - GivenFirstHop: y = (1+ε)·S + α_1·R + Σ_{i=2..k} α_i·A_i·H, the
//     SP-MPNN combination whose first-hop term R is given (E-SPN's edge
//     messages) and whose higher hops aggregate H over N_2..N_k;
//   - RelCombine: GivenFirstHop with R the relation sums, R-SPN's whole
//     combination over its stacked MLPs;
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
	"github.com/spn-project/spn/models/cuda"
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
	// Hops are N_2..N_k (the higher hops), then N_∞ when the model
	// reads it (Need.Unreachable), HopsT their transposes.
	Hops, HopsT []data.CSR
	// Hop1 is N_1 (or the adjacency) for HopCombine, which aggregates
	// the first hop itself, Hop1T its transpose.
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
	// DevNodeCat are the categorical node features on a device, for
	// CatEmbed's device math (nil on the CPU path).
	DevNodeCat *DeviceCat
	// DevEdges are the adjacency, its incoming entries and the edge
	// features on a device, for EdgeMsg's device math (nil on the CPU
	// path).
	DevEdges *DeviceEdges
	// DevPtr are the graph offsets on a device, for GlobalRead's device
	// math (nil on the CPU path).
	DevPtr *cuda.Buffer
	// DevTarget are the targets on a device (double), for BCE's device
	// math (nil on the CPU path).
	DevTarget *cuda.Buffer
	// Dev are the hop sets on a device (N_1..N_k for HopCombine,
	// N_2..N_k for GivenFirstHop and RelCombine), DevRel the
	// relations, for their device math (nil on the CPU path).
	Dev, DevRel *DeviceHops
}

// Need says which parts of a batch Set prepares.
type Need struct {
	// K is the hop count: the ops read N_2..N_K, then N_∞ with
	// Unreachable.
	K           int
	Unreachable bool
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
		d.HopsT = append(d.HopsT, hopTranspose(b, i, b.Hop[i]))
	}
	if need.Unreachable {
		if b.Unreachable == nil {
			return fmt.Errorf("batch carries no N_∞, need it")
		}
		d.Hops = append(d.Hops, *b.Unreachable)
		d.HopsT = append(d.HopsT, hopTranspose(b, len(b.Hop), *b.Unreachable))
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

// SetHop1 sets d to the data of HopCombine on batch b:
// its graphs, hops[0] as the first hop (N_1, or the adjacency for GIN),
// the higher sets hops[1:] and the transposes of all.
func (d *Data) SetHop1(b *data.Batch, hops []data.CSR) {
	*d = Data{N: b.N, G: b.NumGraphs, Ptr: b.GraphPtr, Hop1: hops[0], Hop1T: hopTranspose(b, 0, hops[0])}
	for i, h := range hops[1:] {
		d.Hops = append(d.Hops, h)
		d.HopsT = append(d.HopsT, hopTranspose(b, i+1, h))
	}
}

// hopTranspose returns the transpose of h, the set hops[i] of Set or
// SetHop1: h itself (sharing its arrays; no op writes them) when h is the
// batch's N_{i+1} or its N_∞ and the batch says that set is its own
// transpose (data.Batch.HopSymmetric, UnreachableSymmetric), else
// kernels.Transpose(h).
func hopTranspose(b *data.Batch, i int, h data.CSR) data.CSR {
	switch {
	case i < len(b.HopSymmetric) && b.HopSymmetric[i] && i < len(b.Hop) && sameArrays(h, b.Hop[i]),
		b.UnreachableSymmetric && b.Unreachable != nil && sameArrays(h, *b.Unreachable):
		return h
	}
	return kernels.Transpose(h)
}

// sameArrays reports whether a and b are the same CSR: the same row
// pointer array and the same entries (the same backing arrays, not equal
// values), so that a set passed along with a batch (the adjacency for
// GIN, say) is told apart from its hop set.
func sameArrays(a, b data.CSR) bool {
	if len(a.Ptr) != len(b.Ptr) || len(a.Idx) != len(b.Idx) || len(a.Ptr) == 0 || &a.Ptr[0] != &b.Ptr[0] {
		return false
	}
	return len(a.Idx) == 0 || &a.Idx[0] == &b.Idx[0]
}

// RelAgg is R-SPN's relation aggregation over inputs X_1..X_R (N×d each):
// y_u = Σ_j Σ_{v: r_j(u,v)} X_j[v]; dX_j = A_{r_j}ᵀ·dy.
//
// With Stacked = M > 0 its one input is X, M blocks of N rows ((M·N)×d,
// block b its rows b·N..(b+1)·N−1: R-SPN's stacked MLPs, rt.NewMLPs), and
// X_j is block From + j − 1 (From + R ≤ M); dX is dX_j in those blocks
// and zero elsewhere (the caller's zeros). The math is the same, on views
// of the blocks.
type RelAgg struct {
	ID      string
	Be      kernels.Backend
	D       *Data
	R, N, W int
	// Stacked is the block count M of the one stacked input (0: R inputs
	// apart), From the block of X_1 (0 without Stacked).
	Stacked, From int
}

// Sig implements op.Op.
func (o RelAgg) Sig() op.Sig {
	if o.Stacked > 0 {
		return op.Sig{ID: o.ID, In: [][]int{{o.Stacked * o.N, o.W}}, Out: []int{o.N, o.W}}
	}
	in := make([][]int, max(o.R, 0))
	for j := range in {
		in[j] = []int{o.N, o.W}
	}
	return op.Sig{ID: o.ID, In: in, Out: []int{o.N, o.W}}
}

// check reports R, Stacked and From settings RelAgg does not take
// (Forward, Backward and their device math refuse to run with them).
func (o RelAgg) check() error {
	switch {
	case o.R < 0 || o.Stacked < 0 || o.From < 0:
		return fmt.Errorf("%s: RelAgg.R = %d, Stacked = %d, From = %d: want none negative", o.ID, o.R, o.Stacked, o.From)
	case o.Stacked == 0 && o.From != 0:
		return fmt.Errorf("%s: RelAgg.From = %d without Stacked: From is the block of X_1 in a stacked input", o.ID, o.From)
	case o.Stacked > 0 && o.From+o.R > o.Stacked:
		return fmt.Errorf("%s: RelAgg.From + R = %d + %d > Stacked = %d: the relations read blocks From..From+R−1 of X's Stacked", o.ID, o.From, o.R, o.Stacked)
	}
	return nil
}

// inputs returns X_1..X_R from the op's inputs (or their gradients):
// the inputs themselves, or views of the stacked input's blocks
// From..From+R−1 (block gives them).
func inputs[T any](o RelAgg, in []T, block func(x T, b int) T) []T {
	if o.Stacked == 0 {
		return in
	}
	xs := make([]T, o.R)
	for j := range xs {
		xs[j] = block(in[0], o.From+j)
	}
	return xs
}

// hostBlock returns block b of N rows of x (a view).
func (o RelAgg) hostBlock(x []float32, b int) []float32 {
	nd := o.N * o.W
	return x[b*nd : (b+1)*nd : (b+1)*nd]
}

// Forward implements op.Op.
func (o RelAgg) Forward(in [][]float32, y []float32) error {
	if err := o.check(); err != nil {
		return err
	}
	if len(o.D.Rel) != o.R {
		return fmt.Errorf("batch has %d relations, op built for %d", len(o.D.Rel), o.R)
	}
	n := o.D.N
	clear(y[n*o.W:])
	kernels.RelAggregate(o.Be, y, nil, kernels.RelInputs{Xs: inputs(o, in, o.hostBlock), Rel: o.D.Rel, N: n, D: o.W})
	return nil
}

// Backward implements op.Op.
func (o RelAgg) Backward(_ [][]float32, _, dy []float32, g [][]float32) error {
	if err := o.check(); err != nil {
		return err
	}
	kernels.RelAggregateGrad(o.Be, inputs(o, g, o.hostBlock), dy, o.D.RelT, o.D.N, o.W)
	return nil
}

// EdgeMsg is E-SPN's first-hop aggregation over inputs h (N×d) and the
// stacked BondEncoder tables T (Rows×d):
//
//	y_u = Σ_{v∈N(u)} ReLU(h_v + e_uv),  e_uv = Σ_c T[off_c + f_uv,c]
//
// (the CPU path computes each entry's embedding where its kernels read
// it, in both passes; the device path keeps them with Kept).
type EdgeMsg struct {
	ID         string
	Be         kernels.Backend
	D          *Data
	Rows, N, W int
	// Kept, when not nil, is where the device forward pass keeps the
	// entries' embeddings for the backward pass (new(EdgeEmbeddings) per
	// op); nil makes the backward pass compute them again.
	Kept *EdgeEmbeddings
}

// EdgeEmbeddings is where EdgeMsg's device forward pass keeps the edge
// entries' embeddings (a scratch buffer of the engine, E×d).
type EdgeEmbeddings struct{ dev *cuda.Buffer }

// Sig implements op.Op.
func (o EdgeMsg) Sig() op.Sig {
	return op.Sig{ID: o.ID, In: [][]int{{o.N, o.W}, {o.Rows, o.W}}, Out: []int{o.N, o.W}}
}

// inputs returns the kernels' inputs over the node states h and the
// BondEncoder tables T: the entries' embeddings are computed where the
// kernels read them, never held.
func (o EdgeMsg) inputs(h, T []float32) kernels.EdgeInputs {
	E := len(o.D.Adj.Idx)
	return kernels.EdgeInputs{H: h, T: T, Cat: kernels.Categorical{X: o.D.EdgeFeat, Off: o.D.EdgeOff, N: E},
		Adj: o.D.Adj, In: o.D.AdjIn, N: o.D.N, D: o.W}
}

// Forward implements op.Op.
func (o EdgeMsg) Forward(in [][]float32, y []float32) error {
	if len(o.D.EdgeFeat) != len(o.D.Adj.Idx)*len(o.D.EdgeOff) || len(o.D.EdgeOff) == 0 {
		return fmt.Errorf("batch has %d edge feature values for %d edge entries × %d columns", len(o.D.EdgeFeat), len(o.D.Adj.Idx), len(o.D.EdgeOff))
	}
	clear(y[o.D.N*o.W:])
	kernels.EdgeMessages(o.Be, y, o.inputs(in[0], in[1]))
	return nil
}

// Backward implements op.Op: the entries' gradients in scratch, given
// back once the tables' gradient has read them.
func (o EdgeMsg) Backward(in [][]float32, _, dy []float32, g [][]float32) error {
	ei := o.inputs(in[0], in[1])
	de := scratch(o.Be, ei.Cat.N*o.W)
	kernels.EdgeMessagesGrad(o.Be, g[0], de, dy, ei)
	kernels.EmbedSumGrad(g[1], de, ei.Cat, o.W)
	op.Release(o.Be, de)
	return nil
}

// CatEmbed is OGB's AtomEncoder over the batch's categorical node features
// for the stacked tables T (Rows×d): y_u = Σ_c T[off_c + x_u,c]. With
// Onto the embeddings go onto the op's first input H (N×d): y = H +
// AtomEncoder, the input encoding's sum in the op's own buffer (the bits
// of the embeddings added to H, H's padding rows plus zero), so that
// neither the embeddings nor a sum of Gorgonia's outside the arena are
// held; its gradient is then dH = dy and the tables' as without Onto.
type CatEmbed struct {
	ID         string
	Be         kernels.Backend
	D          *Data
	Rows, N, W int
	Onto       bool
}

// Sig implements op.Op: inputs T, or H and T with Onto (whose backward
// sets all of dH).
func (o CatEmbed) Sig() op.Sig {
	t := []int{o.Rows, o.W}
	if o.Onto {
		return op.Sig{ID: o.ID, In: [][]int{{o.N, o.W}, t}, Out: []int{o.N, o.W}, Sets: true}
	}
	return op.Sig{ID: o.ID, In: [][]int{t}, Out: []int{o.N, o.W}}
}

// cat returns the batch's categorical node features, checked against its
// node count.
func (o CatEmbed) cat() (kernels.Categorical, error) {
	n := o.D.N
	if len(o.D.NodeCat) != n*len(o.D.NodeOff) || len(o.D.NodeOff) == 0 {
		return kernels.Categorical{}, fmt.Errorf("batch has %d categorical node feature values for %d nodes × %d columns", len(o.D.NodeCat), n, len(o.D.NodeOff))
	}
	return kernels.Categorical{X: o.D.NodeCat, Off: o.D.NodeOff, N: n}, nil
}

// Forward implements op.Op.
func (o CatEmbed) Forward(in [][]float32, y []float32) error {
	c, err := o.cat()
	if err != nil {
		return err
	}
	nd := o.D.N * o.W
	if !o.Onto {
		clear(y[nd:])
		kernels.EmbedSum(o.Be, y, in[0], c, o.W)
		return nil
	}
	h := in[0]
	for i := nd; i < len(y); i++ {
		y[i] = h[i] + 0
	}
	kernels.EmbedSumOnto(o.Be, y, h, in[1], c, o.W)
	return nil
}

// Backward implements op.Op.
func (o CatEmbed) Backward(_ [][]float32, _, dy []float32, g [][]float32) error {
	c := kernels.Categorical{X: o.D.NodeCat, Off: o.D.NodeOff, N: o.D.N}
	if !o.Onto {
		kernels.EmbedSumGrad(g[0], dy, c, o.W)
		return nil
	}
	copy(g[0], dy)
	kernels.EmbedSumGrad(g[1], dy, c, o.W)
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
	s := scratch(o.Be, n*d)
	kernels.GraphSumBroadcast(o.Be, s, in[0], o.D.Ptr, d)
	clear(y[n*d:])
	o.Be.MatMul(y[:n*d], s, in[1], nil, kernels.MatMulShape{N: n, In: d, Out: d})
	op.Release(o.Be, s)
	return nil
}

// Backward implements op.Op.
func (o GlobalRead) Backward(in [][]float32, _, dy []float32, g [][]float32) error {
	n, d := o.D.N, o.W
	s := scratch(o.Be, n*d)
	kernels.GraphSumBroadcast(o.Be, s, in[0], o.D.Ptr, d)
	o.Be.MatMulAT(g[1], nil, s, dy[:n*d], kernels.MatMulShape{N: n, In: d, Out: d})
	op.Release(o.Be, s)
	t := scratch(o.Be, n*d)
	o.Be.MatMulBT(t, dy[:n*d], in[1], kernels.MatMulShape{N: n, In: d, Out: d})
	kernels.GraphSumBroadcast(o.Be, g[0], t, o.D.Ptr, d)
	op.Release(o.Be, t)
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
