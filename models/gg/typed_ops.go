package gg

import (
	"fmt"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/models/kernels"
)

// fnOp is a differentiable op given by its math: fwd computes the output
// from the inputs, bwd the gradients of every input from the inputs and
// the output gradient dy. SymDiff applies one gradient op that runs bwd
// into a packed vector, unpacked into one node per input. The math of the
// typed-neighbourhood ops lives in package kernels; the closures here only
// bind the batch's data to it.
type fnOp struct {
	base
	shapes [][]int // the input shapes
	fwd    func(in [][]float32, out []float32)
	bwd    func(in [][]float32, dy []float32, grads [][]float32)
}

func newFnOp(id string, out []int, shapes [][]int, fwd func(in [][]float32, out []float32), bwd func(in [][]float32, dy []float32, grads [][]float32)) *fnOp {
	ranks := make([]int, len(shapes))
	for i, s := range shapes {
		ranks[i] = len(s)
	}
	return &fnOp{base: newBase(id, tensor.Shape(out), ranks...), shapes: shapes, fwd: fwd, bwd: bwd}
}

func sizeOf(s []int) int {
	n := 1
	for _, v := range s {
		n *= v
	}
	return n
}

// inputs returns the float32 data of the first len(o.shapes) values.
func (o *fnOp) inputs(vals []G.Value) ([][]float32, error) {
	in := make([][]float32, len(o.shapes))
	for i, s := range o.shapes {
		x, err := floats(o.id, vals, i, sizeOf(s))
		if err != nil {
			return nil, err
		}
		in[i] = x
	}
	return in, nil
}

// Do implements gorgonia.Op.
func (o *fnOp) Do(vals ...G.Value) (G.Value, error) {
	if err := checkArity(o.id, vals, len(o.shapes)); err != nil {
		return nil, err
	}
	in, err := o.inputs(vals)
	if err != nil {
		return nil, err
	}
	y := make([]float32, o.size())
	o.fwd(in, y)
	return o.out(y), nil
}

// DiffWRT implements gorgonia.SDOp: every input gets a gradient.
func (o *fnOp) DiffWRT(n int) []bool {
	d := make([]bool, n)
	for i := range d {
		d[i] = true
	}
	return d
}

// SymDiff implements gorgonia.SDOp.
func (o *fnOp) SymDiff(in G.Nodes, _, dy *G.Node) (G.Nodes, error) {
	total := 0
	names := make([]string, len(o.shapes))
	for i, s := range o.shapes {
		total += sizeOf(s)
		names[i] = fmt.Sprintf("d%d", i)
	}
	ranks := append(append([]int(nil), o.in...), len(o.shape))
	g := &fnGradOp{base: newBase(o.id+".grad", tensor.Shape{total}, ranks...), fwd: o}
	packed, err := G.ApplyOp(g, append(append(G.Nodes(nil), in...), dy)...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", o.id, err)
	}
	return applyParts(packed, o.id, names, o.shapes)
}

// fnGradOp runs the bwd of its fnOp for inputs (x_1..x_m, dy) into one
// packed vector of the m input gradients.
type fnGradOp struct {
	base
	fwd *fnOp
}

// Do implements gorgonia.Op.
func (o *fnGradOp) Do(vals ...G.Value) (G.Value, error) {
	m := len(o.fwd.shapes)
	if err := checkArity(o.id, vals, m+1); err != nil {
		return nil, err
	}
	in, err := o.fwd.inputs(vals)
	if err != nil {
		return nil, err
	}
	dy, err := floats(o.id, vals, m, o.fwd.size())
	if err != nil {
		return nil, err
	}
	packed := make([]float32, o.size())
	grads := make([][]float32, m)
	off := 0
	for i, s := range o.fwd.shapes {
		grads[i] = packed[off : off+sizeOf(s)]
		off += sizeOf(s)
	}
	o.fwd.bwd(in, dy, grads)
	return o.out(packed), nil
}

// typedData is the per-batch data of the typed-neighbourhood ops: the
// relations, the adjacency with its edge features, the categorical node
// features and the graphs of the batch the model runs on.
type typedData struct {
	n          int
	ptr        []int32
	rel, relT  []data.CSR
	adj, adjIn data.CSR
	edgeFeat   []int32
	edgeOff    []int32
	nodeCat    []int32
	nodeOff    []int32
	// hops are N_2..N_k, hopsT their transposes (the combine op's higher hops).
	hops, hopsT []data.CSR
	target      []float64
	g           int
}

// set points td at batch b; k is the number of hop sets the combine op
// reads (N_2..N_k); relations and edge features only when asked.
func (td *typedData) set(b *data.Batch, k int, rel, edge bool) {
	td.n, td.g, td.ptr, td.target = b.N, b.NumGraphs, b.GraphPtr, b.Target
	td.hops, td.hopsT = nil, nil
	for i := 1; i < k; i++ {
		td.hops = append(td.hops, b.Hop[i])
		td.hopsT = append(td.hopsT, kernels.Transpose(b.Hop[i]))
	}
	td.rel, td.relT = nil, nil
	if rel {
		td.rel = b.Rel
		for _, r := range b.Rel {
			td.relT = append(td.relT, kernels.Transpose(r))
		}
	}
	if edge {
		td.adj, td.adjIn, td.edgeFeat = b.Adj, kernels.IncomingEntries(b.Adj), b.EdgeFeat
		td.edgeOff, _ = kernels.EmbedOffsets(b.EdgeFeatVocab)
	}
	td.nodeCat = b.NodeCat
	td.nodeOff, _ = kernels.EmbedOffsets(b.NodeCatVocab)
}

// newCombine returns the SP-MPNN combination over N×d node states
//
//	y = (1+ε)·S + α_1·R + Σ_{i=2..k} α_i · A_i·H
//
// for inputs S, R, H (N×d), α (k) and ε (1), where A_i is N_i of td: R is
// the first-hop aggregation (relation sums for R-SPN, edge messages for
// E-SPN), H the states the higher hops aggregate.
func newCombine(id string, be kernels.Backend, td *typedData, k, N, d int) *fnOp {
	nd := []int{N, d}
	return newFnOp(id, nd, [][]int{nd, nd, nd, {k}, {1}},
		func(in [][]float32, y []float32) {
			S, R, H, alpha, eps := in[0], in[1], in[2], in[3], in[4]
			n := td.n
			be.HopAggregate(y[:n*d], H[:n*d], td.hops, alpha[1:], 0, n, d)
			s, a1 := 1+eps[0], alpha[0]
			for i := range y[:n*d] {
				y[i] += s*S[i] + a1*R[i]
			}
		},
		func(in [][]float32, dy []float32, g [][]float32) {
			S, R, H, alpha, eps := in[0], in[1], in[2], in[3], in[4]
			dS, dR, dH, dAlpha, dEps := g[0], g[1], g[2], g[3], g[4]
			n := td.n
			s, a1 := 1+eps[0], alpha[0]
			for i, v := range dy[:n*d] {
				dS[i], dR[i] = s*v, a1*v
			}
			// dH = Σ_i α_i A_iᵀ dy, with T_i = A_iᵀ dy kept: dα_i = ⟨T_i, H⟩.
			T := make([][]float32, len(td.hopsT))
			for i := range T {
				T[i] = make([]float32, n*d)
			}
			be.HopAggregateSums(dH[:n*d], T, dy[:n*d], td.hopsT, alpha[1:], 0, n, d)
			dots := be.Dots(dy[:n*d], [][]float32{R[:n*d], S[:n*d]}, n, d)
			dAlpha[0], dEps[0] = float32(dots[0]), float32(dots[1])
			for i, v := range be.Dots(H[:n*d], T, n, d) {
				dAlpha[i+1] = float32(v)
			}
		})
}

// newRelAgg returns the R-SPN relation aggregation over inputs X_1..X_R
// (N×d each): y_u = Σ_j Σ_{v: r_j(u,v)} X_j[v].
func newRelAgg(id string, be kernels.Backend, td *typedData, R, N, d int) *fnOp {
	shapes := make([][]int, R)
	for j := range shapes {
		shapes[j] = []int{N, d}
	}
	return newFnOp(id, []int{N, d}, shapes,
		func(in [][]float32, y []float32) {
			kernels.RelAggregate(be, y, nil, in, td.rel, td.n, d)
		},
		func(_ [][]float32, dy []float32, g [][]float32) {
			kernels.RelAggregateGrad(be, g, dy, td.relT, td.n, d)
		})
}

// newEdgeMsg returns the E-SPN first-hop aggregation over inputs h (N×d)
// and the stacked BondEncoder tables T (rows×d):
//
//	y_u = Σ_{v ∈ N(u)} ReLU(h_v + e_uv),  e_uv = Σ_c T[off_c + f_uv,c]
func newEdgeMsg(id string, be kernels.Backend, td *typedData, rows, N, d int) *fnOp {
	edges := func(T []float32) []float32 {
		E := len(td.adj.Idx)
		e := make([]float32, E*d)
		kernels.EmbedSum(be, e, T, td.edgeFeat, td.edgeOff, E, d)
		return e
	}
	return newFnOp(id, []int{N, d}, [][]int{{N, d}, {rows, d}},
		func(in [][]float32, y []float32) {
			kernels.EdgeMessages(be, y, in[0], edges(in[1]), td.adj, td.n, d)
		},
		func(in [][]float32, dy []float32, g [][]float32) {
			E := len(td.adj.Idx)
			de := make([]float32, E*d)
			kernels.EdgeMessagesGrad(be, g[0], de, dy, in[0], edges(in[1]), td.adj, td.adjIn, td.n, d)
			kernels.EmbedSumGrad(g[1], de, td.edgeFeat, td.edgeOff, E, d)
		})
}

// newCatEmbed returns OGB's AtomEncoder over the batch's categorical node
// features for the stacked tables T (rows×d): y_u = Σ_c T[off_c + x_u,c].
func newCatEmbed(id string, be kernels.Backend, td *typedData, rows, N, d int) *fnOp {
	return newFnOp(id, []int{N, d}, [][]int{{rows, d}},
		func(in [][]float32, y []float32) {
			kernels.EmbedSum(be, y, in[0], td.nodeCat, td.nodeOff, td.n, d)
		},
		func(_ [][]float32, dy []float32, g [][]float32) {
			kernels.EmbedSumGrad(g[0], dy, td.nodeCat, td.nodeOff, td.n, d)
		})
}

// newGraphSum returns the global readout sum broadcast to every node,
// y_u = Σ_{v ∈ G(u)} x_v, for x (N×d); it is its own gradient.
func newGraphSum(id string, be kernels.Backend, td *typedData, N, d int) *fnOp {
	return newFnOp(id, []int{N, d}, [][]int{{N, d}},
		func(in [][]float32, y []float32) {
			kernels.GraphSumBroadcast(be, y, in[0], td.ptr, d)
		},
		func(_ [][]float32, dy []float32, g [][]float32) {
			kernels.GraphSumBroadcast(be, g[0], dy, td.ptr, d)
		})
}

// newBCE returns the multi-task binary cross-entropy with logits over the
// G×t outputs, missing labels (NaN targets) ignored, mean over the
// labelled entries (a scalar of shape {1}).
func newBCE(id string, td *typedData, G_, t int) *fnOp {
	return newFnOp(id, nil, [][]int{{G_, t}},
		func(in [][]float32, y []float32) {
			m := td.g * t
			loss, _ := kernels.BCEWithLogits(nil, in[0][:m], td.target[:m])
			y[0] = float32(loss)
		},
		func(in [][]float32, dy []float32, g [][]float32) {
			m := td.g * t
			kernels.BCEWithLogits(g[0][:m], in[0][:m], td.target[:m])
			for i := range g[0][:m] {
				g[0][i] *= dy[0]
			}
		})
}
