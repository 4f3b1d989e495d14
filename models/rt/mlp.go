package rt

import (
	"fmt"
	"math/rand/v2"

	G "gorgonia.org/gorgonia"

	"github.com/spn-project/spn/models/cuda"
	"github.com/spn-project/spn/models/cuda/engine"
	"github.com/spn-project/spn/models/op"
	"github.com/spn-project/spn/models/param"
)

// MLP is the Linear → BatchNorm → ReLU → Linear → BatchNorm → ReLU of an
// SPN, GIN, GCN or GAT layer (the nn structs hold the parameters, with the
// hand-written model's names and initialisation); NewMLPs makes m such
// MLPs over one input as one (R-SPN's 2 + R MLPs of a layer).
type MLP struct {
	lin1     *param.Linear
	bn1      *param.BatchNormReLU
	lin2     *param.Linear
	bn2      *param.BatchNormReLU
	st1, st2 *bnStats
	// blk[b] is, for m > 1 MLPs (NewMLPs; nil for one), block b's
	// batch-norm state for the CPU math, whose running statistics are
	// views of st1's and st2's (which cover the m·d columns, for the
	// device math).
	blk [][2]*bnStats
}

// NewMLP returns the MLP of layer name, drawing lin1 and then lin2 from
// init as models.newSPN does.
func NewMLP(name string, d int, init *rand.Rand) MLP {
	var l MLP
	l.lin1, l.bn1 = param.NewLinear(name+".lin1", d, d, init), param.NewBatchNormReLU(name+".bn1", d)
	l.lin2, l.bn2 = param.NewLinear(name+".lin2", d, d, init), param.NewBatchNormReLU(name+".bn2", d)
	l.st1, l.st2 = newBNStats(l.bn1), newBNStats(l.bn2)
	return l
}

// newBNStats returns the batch-norm state over bn's running statistics.
func newBNStats(bn *param.BatchNormReLU) *bnStats {
	return &bnStats{RunMean: bn.RunMean, RunVar: bn.RunVar, Momentum: bn.Momentum, Eps: bn.Eps}
}

// NewMLPs returns m MLPs of width d over the same input as one, block b
// of each parameter and running statistic being MLP b's: W₁ and W₂ of
// shape (m·d)×d, MLP b's d×d matrix at rows b·d .. b·d+d−1, and the
// vectors (b₁, γ₁, β₁, b₂, γ₂, β₂ and the running statistics) of m·d
// values, MLP b's at b·d .. b·d+d−1. Each MLP is drawn from init as
// NewMLP draws one, in block order, so the values are those of m MLPs
// made one after the other. Apply gives their outputs stacked block by
// block, an (m·N)×d tensor. With m = 1 it is NewMLP.
func NewMLPs(name string, d, m int, init *rand.Rand) MLP {
	if m == 1 {
		return NewMLP(name, d, init)
	}
	var l MLP
	l.lin1 = &param.Linear{In: d, Out: d, W: param.NewParam(name+".lin1.w", m*d, d), B: param.NewParam(name+".lin1.b", m*d)}
	l.lin2 = &param.Linear{In: d, Out: d, W: param.NewParam(name+".lin2.w", m*d, d), B: param.NewParam(name+".lin2.b", m*d)}
	for b := 0; b < m; b++ {
		for _, lin := range []*param.Linear{l.lin1, l.lin2} {
			one := param.NewLinear(name, d, d, init)
			copy(lin.W.W[b*d*d:], one.W.W)
			copy(lin.B.W[b*d:], one.B.W)
		}
	}
	l.bn1, l.bn2 = param.NewBatchNormReLU(name+".bn1", m*d), param.NewBatchNormReLU(name+".bn2", m*d)
	l.st1, l.st2 = newBNStats(l.bn1), newBNStats(l.bn2)
	view := func(st *bnStats, b int) *bnStats {
		return &bnStats{RunMean: st.RunMean[b*d : (b+1)*d], RunVar: st.RunVar[b*d : (b+1)*d], Momentum: st.Momentum, Eps: st.Eps}
	}
	for b := 0; b < m; b++ {
		l.blk = append(l.blk, [2]*bnStats{view(l.st1, b), view(l.st2, b)})
	}
	return l
}

// Params returns lin1, bn1, lin2 and bn2's parameters, in that order.
func (l *MLP) Params() []*param.Param {
	ps := l.lin1.Params()
	ps = append(ps, l.bn1.Params()...)
	ps = append(ps, l.lin2.Params()...)
	return append(ps, l.bn2.Params()...)
}

// AddBuffers adds the running statistics of the MLP called name (e.g.
// "layer2") to b, as name.bn1.running_mean, …
// (the names the reference SPN, models/internal/testkit/ref, uses).
func (l *MLP) AddBuffers(b map[string][]float64, name string) {
	b[name+".bn1.running_mean"], b[name+".bn1.running_var"] = l.st1.RunMean, l.st1.RunVar
	b[name+".bn2.running_mean"], b[name+".bn2.running_var"] = l.st2.RunMean, l.st2.RunVar
}

// MLPNodes are the parameter nodes of an MLP in one graph: W₁, b₁, γ₁, β₁,
// W₂, b₂, γ₂, β₂.
type MLPNodes [8]*G.Node

// Bind returns the parameter nodes of l, made by param in params order.
func (l *MLP) Bind(param func(*param.Param) *G.Node) MLPNodes {
	return MLPNodes{param(l.lin1.W), param(l.lin1.B), param(l.bn1.Gamma), param(l.bn1.Beta),
		param(l.lin2.W), param(l.lin2.B), param(l.bn2.Gamma), param(l.bn2.Beta)}
}

// Apply adds the MLP called name (its ops' id prefix) over the N×d node
// states x, with parameter nodes n, to s's graph, with batch statistics
// and their update as s's Key asks: one fused op (mlpOp) with one
// backward; m MLPs (NewMLPs) are one op too (mlpsOp), whose output
// stacks theirs, (m·N)×d.
func (l *MLP) Apply(s *Step, name string, x *G.Node, n MLPNodes) *G.Node {
	var o op.Op
	g := graphOpts{be: s.Be, bd: s.BD, train: s.Key.train, update: s.Key.update, N: s.Key.N}
	if l.blk == nil {
		o = newMLPOp(name, l, g, l.lin1.Out)
	} else {
		o = newMLPsOp(name, l, g)
	}
	return s.Bdr.Op(s.Be, o, x, n[0], n[1], n[2], n[3], n[4], n[5], n[6], n[7])
}

// mlpOp is Linear → BatchNorm+ReLU → Linear → BatchNorm+ReLU as one op
// over inputs x (N×d), W₁, b₁, γ₁, β₁, W₂, b₂, γ₂, β₂: the forward and
// backward passes of the four ops (linear, bnReLU) one after the other,
// the intermediate values kept in between, so that the graph holds one
// node and one gradient node per MLP instead of four each (and no copies
// of the intermediate gradients). Same operations, same bits.
type mlpOp struct {
	id         string
	be         Env
	bd         *BatchData
	lin1, lin2 linear
	bn1, bn2   bnReLU
	N, d       int
	st         *mlpState
}

// mlpState is what the device forward pass keeps for the backward pass.
// The CPU forward pass keeps nothing of its own: the batch norms keep
// their x̂, and the backward pass computes bn1's output a1 (the input of
// lin2) again from x̂₁ (bnReLU.output).
type mlpState struct {
	dev [3]*cuda.Buffer // z1, a1, z2 of the device forward pass
}

// newMLPOp returns l's MLP over d columns as one op of graph g.
func newMLPOp(name string, l *MLP, g graphOpts, d int) mlpOp {
	return newMLPOpOf(name, l.st1, l.st2, g, d)
}

// newMLPOpOf is newMLPOp with the batch norms' state st1 and st2.
func newMLPOpOf(name string, st1, st2 *bnStats, g graphOpts, d int) mlpOp {
	be, bd, N := g.be, g.bd, g.N
	return mlpOp{
		id: name + ".mlp." + g.mode(), be: be, bd: bd, N: N, d: d, st: &mlpState{},
		lin1: NewLinear(name+".lin1", be, bd, LinearOpts{N: N, In: d, Out: d}).(linear),
		bn1:  newBNReLU(name+".bn1", g, st1, d),
		lin2: NewLinear(name+".lin2", be, bd, LinearOpts{N: N, In: d, Out: d}).(linear),
		bn2:  newBNReLU(name+".bn2", g, st2, d),
	}
}

// Sig implements op.Op.
func (o mlpOp) Sig() op.Sig {
	nd, dd, v := []int{o.N, o.d}, []int{o.d, o.d}, []int{o.d}
	return op.Sig{ID: o.id, In: [][]int{nd, dd, v, v, v, dd, v, v, v}, Out: nd, Sets: true}
}

// Forward implements op.Op. lin1's output z1 and lin2's z2 share one
// scratch buffer, and bn1's output a1 has another, both given back at
// the end: the batch norms' backward passes read their x̂ and output, the
// linear maps' their input, never z, and the backward pass computes a1
// again.
func (o mlpOp) Forward(in [][]float32, y []float32) error {
	nd := o.N * o.d
	z, a1 := o.be.Buf(nd), o.be.Buf(nd)
	defer o.be.Release(z)
	defer o.be.Release(a1)
	if err := o.lin1.Forward([][]float32{in[0], in[1], in[2]}, z); err != nil {
		return err
	}
	if err := o.bn1.Forward([][]float32{z, in[3], in[4]}, a1); err != nil {
		return err
	}
	if err := o.lin2.Forward([][]float32{a1, in[5], in[6]}, z); err != nil {
		return err
	}
	return o.bn2.Forward([][]float32{z, in[7], in[8]}, y)
}

// Backward implements op.Op: bn1's output a1 computed again from its x̂
// (the forward pass's bits), then the four backward passes in reverse
// order, the intermediate gradients dz2, then da1, then dz1 (in dz2's
// buffer); a1 and the gradients are scratch given back at the end. They
// need no zeroing: each pass writes every real row of its input gradient
// and reads only real rows.
func (o mlpOp) Backward(in [][]float32, y, dy []float32, dIn [][]float32) error {
	nd := o.N * o.d
	a1 := o.be.Buf(nd)
	defer o.be.Release(a1)
	if err := o.bn1.output(a1, in[3], in[4]); err != nil {
		return fmt.Errorf("%s: %w", o.id, err)
	}
	dz2, da1 := o.be.Buf(nd), o.be.Buf(nd)
	defer o.be.Release(dz2)
	defer o.be.Release(da1)
	// The batch norms' backward passes read their x̂, not their input x
	// (nil), and the linear maps' do not read their output (nil).
	if err := o.bn2.Backward([][]float32{nil, in[7], in[8]}, y, dy, [][]float32{dz2, dIn[7], dIn[8]}); err != nil {
		return err
	}
	if err := o.lin2.Backward([][]float32{a1, in[5], in[6]}, nil, dz2, [][]float32{da1, dIn[5], dIn[6]}); err != nil {
		return err
	}
	dz1 := dz2
	if err := o.bn1.Backward([][]float32{nil, in[3], in[4]}, a1, da1, [][]float32{dz1, dIn[3], dIn[4]}); err != nil {
		return err
	}
	// dx: lin1 sets the real rows, the padding is zeroed here (Sig.Sets).
	clear(dIn[0][o.bd.N*o.d:])
	return o.lin1.Backward([][]float32{in[0], in[1], in[2]}, nil, dz1, [][]float32{dIn[0], dIn[1], dIn[2]})
}

// ZeroOut implements op.ZeroOut: DeviceForward writes the real rows.
func (mlpOp) ZeroOut() {}

// DeviceForward implements op.DeviceOp: the four parts' device math in
// order, each linear map's bias added by the batch norm after it as it
// reads the product (linear.deviceProduct, bnReLU.deviceForward: the
// bits of the parts' own DeviceForward, two launches fewer), the
// intermediate values in zeroed buffers (Engine.Zeros: the padding rows
// stay zero) kept for the backward pass: z1 and z2 hold the products
// without the biases, which no backward pass reads.
func (o mlpOp) DeviceForward(e *engine.Engine, in []*cuda.Buffer, y *cuda.Buffer) error {
	st := o.st
	for i := range st.dev {
		var err error
		if st.dev[i], err = e.Zeros(o.N * o.d); err != nil {
			return err
		}
	}
	z1, a1, z2 := st.dev[0], st.dev[1], st.dev[2]
	if err := o.lin1.deviceProduct(e, in[0], in[1], z1); err != nil {
		return err
	}
	if err := o.bn1.deviceForward(e, z1, in[2], in[3], in[4], a1); err != nil {
		return err
	}
	if err := o.lin2.deviceProduct(e, a1, in[5], z2); err != nil {
		return err
	}
	return o.bn2.deviceForward(e, z2, in[6], in[7], in[8], y)
}

// DeviceBackward implements op.DeviceOp: the four backward passes in
// reverse order, each batch norm adding the gradient of the bias before
// it as it writes its dx (bnReLU.deviceBackward; the linear maps' own
// passes give the other gradients, linear.deviceGrads). Each sets the
// real rows of its input gradient and reads only real rows; the adaptor
// zeroed every gradient, so the bias gradients start at zero and dx's
// padding rows stay zero.
func (o mlpOp) DeviceBackward(e *engine.Engine, in []*cuda.Buffer, y, dy *cuda.Buffer, dIn []*cuda.Buffer) error {
	a1 := o.st.dev[1] // the products z1, z2 are the forward pass's only
	if a1 == nil {
		return fmt.Errorf("%s: no device forward pass recorded", o.id)
	}
	var g [3]*cuda.Buffer // dz2, da1, dz1
	for i := range g {
		var err error
		if g[i], err = op.ScratchBuffer(e, o.N*o.d); err != nil {
			return err
		}
	}
	dz2, da1, dz1 := g[0], g[1], g[2]
	if err := o.bn2.deviceBackward(e, in[7], y, dy, bnGrads{DX: dz2, DG: dIn[7], DB: dIn[8], DBias: dIn[6]}); err != nil {
		return err
	}
	if err := o.lin2.deviceGrads(e, a1, in[5], dz2, da1, dIn[5]); err != nil {
		return err
	}
	if err := o.bn1.deviceBackward(e, in[3], a1, da1, bnGrads{DX: dz1, DG: dIn[3], DB: dIn[4], DBias: dIn[2]}); err != nil {
		return err
	}
	return o.lin1.deviceGrads(e, in[0], in[1], dz1, dIn[0], dIn[1])
}
