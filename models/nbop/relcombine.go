package nbop

import (
	"fmt"

	"github.com/spn-project/spn/models/cuda"
	"github.com/spn-project/spn/models/cuda/engine"
	"github.com/spn-project/spn/models/kernels"
	"github.com/spn-project/spn/models/op"
)

// RelCombine is R-SPN's whole combination over its stacked MLPs: one
// input X of 2 + R blocks of N rows ((2+R)·N × W, block b its rows
// b·N..(b+1)·N−1: MLP_s(h), MLP_h(h), MLP_1(h)..MLP_R(h), rt.NewMLPs),
// α (K) and ε (1),
//
//	y = (1+ε)·S + α_1·Σ_j A_{r_j}·X_j + Σ_{i=2..k} α_i·A_i·H
//
// with S, H and X_j blocks 0, 1 and 1 + j of X: GivenFirstHop over the
// relation sums R = Σ_j A_{r_j}·X_j (RelAgg over blocks 2..R+1). Its
// gradient dX holds GivenFirstHop's dS and dH in blocks 0 and 1 and
// RelAgg's gradients of dR in blocks 2..R+1; dα and dε are
// GivenFirstHop's.
//
// The forward pass keeps the relation sums in the op for the backward
// pass of the same run: use it by pointer (&RelCombine{…}), one per graph
// node.
type RelCombine struct {
	ID         string
	Be         kernels.Backend
	D          *Data
	K, R, N, W int // hops, relations, padded rows, width

	// rel and devRel are the relation sums the last forward pass kept,
	// on the host and on the device.
	rel    []float32
	devRel *cuda.Buffer
}

// Sig implements op.Op: inputs X ((2+R)·N × W), α, ε.
func (o *RelCombine) Sig() op.Sig {
	return op.Sig{ID: o.ID, In: [][]int{{(2 + o.R) * o.N, o.W}, {o.K}, {1}}, Out: []int{o.N, o.W}, Sets: true}
}

// check reports an R the op does not take.
func (o *RelCombine) check() error {
	if o.R < 0 {
		return fmt.Errorf("%s: RelCombine.R = %d: want R ≥ 0 relations", o.ID, o.R)
	}
	return nil
}

// given is the combination of S, R and H.
func (o *RelCombine) given() GivenFirstHop {
	return GivenFirstHop{ID: o.ID, Be: o.Be, D: o.D, K: o.K, N: o.N, W: o.W}
}

// relAgg is the relation sums: RelAgg over X's blocks 2..R+1.
func (o *RelCombine) relAgg() RelAgg {
	return RelAgg{ID: o.ID + ".relations", Be: o.Be, D: o.D, R: o.R, N: o.N, W: o.W, Stacked: 2 + o.R, From: 2}
}

// split returns GivenFirstHop's inputs (or gradients) S, R, H, α, ε from
// RelCombine's X, α, ε and r (R or dR), S and H views of X's blocks 0
// and 1 (block gives them).
func split[T any](in []T, block func(x T, b int) T, r T) []T {
	return []T{block(in[0], 0), r, block(in[0], 1), in[1], in[2]}
}

// hostBlock returns block b of N rows of x (a view).
func (o *RelCombine) hostBlock(x []float32, b int) []float32 {
	nd := o.N * o.W
	return x[b*nd : (b+1)*nd : (b+1)*nd]
}

// relations returns the relation sums of X: those the forward pass kept
// (with kept), or computed now.
func (o *RelCombine) relations(X []float32, kept bool) ([]float32, error) {
	if kept && len(o.rel) == o.N*o.W {
		return o.rel, nil
	}
	r := make([]float32, o.N*o.W)
	return r, o.relAgg().Forward([][]float32{X}, r)
}

// Forward implements op.Op.
func (o *RelCombine) Forward(in [][]float32, y []float32) error {
	if err := o.check(); err != nil {
		return err
	}
	rel, err := o.relations(in[0], false)
	if err != nil {
		return err
	}
	o.rel = rel
	return o.given().Forward(split(in, o.hostBlock, rel), y)
}

// Backward implements op.Op.
func (o *RelCombine) Backward(in [][]float32, _, dy []float32, g [][]float32) error {
	if err := o.check(); err != nil {
		return err
	}
	rel, err := o.relations(in[0], true)
	if err != nil {
		return err
	}
	n, d := o.D.N, o.W
	dR, gX := make([]float32, o.N*d), g[0]
	// Sig.Sets: dS's rows are set by GivenFirstHop, dH's real rows (block
	// 1's first n) too; its padding rows and the relation blocks are
	// zero before RelAgg's gradients go into the latter.
	clear(gX[o.N*d+n*d:])
	if err := o.given().Backward(split(in, o.hostBlock, rel), nil, dy, split(g, o.hostBlock, dR)); err != nil {
		return err
	}
	return o.relAgg().Backward(nil, nil, dR, [][]float32{gX})
}

// ZeroOut implements op.ZeroOut: DeviceForward writes the real rows.
func (*RelCombine) ZeroOut() {}

// devSplit is split for device buffers (views of X's blocks).
func (o *RelCombine) devSplit(in []*cuda.Buffer, r *cuda.Buffer) ([]*cuda.Buffer, error) {
	return devBlocks(o.ID, o.N*o.W, func(block func(*cuda.Buffer, int) *cuda.Buffer) []*cuda.Buffer { return split(in, block, r) })
}

// devRelations is relations on the device: the sums the forward pass
// kept (with kept), or computed now into zeroed scratch (RelAgg's device
// math adds into its output).
func (o *RelCombine) devRelations(e *engine.Engine, X *cuda.Buffer, kept bool) (*cuda.Buffer, error) {
	if kept && o.devRel != nil {
		return o.devRel, nil
	}
	r, err := e.Zeros(o.N * o.W)
	if err != nil {
		return nil, err
	}
	return r, o.relAgg().DeviceForward(e, []*cuda.Buffer{X}, r)
}

// DeviceForward implements op.DeviceOp: R by RelAgg's device math on
// views of X's relation blocks (kept for the backward pass), then
// GivenFirstHop's on views of blocks 0 and 1 as S and H.
func (o *RelCombine) DeviceForward(e *engine.Engine, in []*cuda.Buffer, y *cuda.Buffer) error {
	if err := o.check(); err != nil {
		return err
	}
	rel, err := o.devRelations(e, in[0], false)
	if err != nil {
		return err
	}
	o.devRel = rel
	if in, err = o.devSplit(in, rel); err != nil {
		return err
	}
	return o.given().DeviceForward(e, in, y)
}

// DeviceBackward implements op.DeviceOp: GivenFirstHop's into views of
// dX's blocks 0 and 1 as dS and dH (the rest of dX keeps the adaptor's
// zeros) and dR into scratch, then RelAgg's device backward of dR into
// views of dX's relation blocks.
func (o *RelCombine) DeviceBackward(e *engine.Engine, in []*cuda.Buffer, _, dy *cuda.Buffer, g []*cuda.Buffer) error {
	if err := o.check(); err != nil {
		return err
	}
	rel, err := o.devRelations(e, in[0], true)
	if err != nil {
		return err
	}
	dR, err := op.ScratchBuffer(e, o.N*o.W)
	if err != nil {
		return err
	}
	gX := g[0]
	if in, err = o.devSplit(in, rel); err != nil {
		return err
	}
	if g, err = o.devSplit(g, dR); err != nil {
		return err
	}
	if err := o.given().DeviceBackward(e, in, nil, dy, g); err != nil {
		return err
	}
	return o.relAgg().DeviceBackward(e, nil, nil, dR, []*cuda.Buffer{gX})
}
