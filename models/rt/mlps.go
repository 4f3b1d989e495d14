package rt

import (
	"fmt"

	"github.com/spn-project/spn/models/cuda"
	"github.com/spn-project/spn/models/cuda/engine"
	"github.com/spn-project/spn/models/op"
)

// mlpsOp is m MLPs over the same N×d input x as one op (NewMLPs): over
// inputs x, W₁, b₁, γ₁, β₁, W₂, b₂, γ₂, β₂ in NewMLPs' stacked layout,
// its output stacks the MLPs' outputs block by block, an (m·N)×d tensor
// whose block b (rows b·N .. b·N+N−1) is
//
//	MLP_b(x) = ReLU(BN₂(ReLU(BN₁(x·W₁⁽ᵇ⁾ + b₁⁽ᵇ⁾))·W₂⁽ᵇ⁾ + b₂⁽ᵇ⁾))
//
// and whose input gradient is dx = Σ_b dx⁽ᵇ⁾, added in block order.
//
// The CPU math is the fused MLP's (mlpOp) once per block, over views of
// the stacked parameters. The device math runs the m MLPs side by side
// as one MLP of m·d columns, with block-diagonal matrices: the products
// of all blocks are one strided batched cuBLAS call each, and each batch
// norm is one batch norm over the m·d interleaved columns (per column
// the same math), so that a layer of R-SPN makes about as many launches
// as one MLP instead of m times as many.
type mlpsOp struct {
	id     string
	be     Env
	bd     *BatchData
	N, d   int
	blocks []mlpOp // the CPU math, block b over block b's state
	// bn1, bn2 are the batch norms of the device math, over the m·d
	// interleaved columns; st what its forward pass keeps.
	bn1, bn2 bnReLU
	st       *mlpsState
}

// mlpsState is what the device forward pass keeps for the backward pass,
// each N×(m·d) with the blocks interleaved (row r holds block b's row r at
// columns b·d .. b·d+d−1): the first batch norm's output a1 and the
// second's, y (before it is stacked).
type mlpsState struct {
	a1, y *cuda.Buffer
}

// newMLPsOp returns l's m MLPs (NewMLPs) as one op of graph g.
func newMLPsOp(name string, l *MLP, g graphOpts) mlpsOp {
	m, d := len(l.blk), l.lin1.Out
	o := mlpsOp{
		id: fmt.Sprintf("%s.mlps%d.%s", name, m, g.mode()), be: g.be, bd: g.bd, N: g.N, d: d, st: &mlpsState{},
		bn1: newBNReLU(name+".bn1", g, l.st1, m*d),
		bn2: newBNReLU(name+".bn2", g, l.st2, m*d),
	}
	for b, st := range l.blk {
		o.blocks = append(o.blocks, newMLPOpOf(fmt.Sprintf("%s.block%d", name, b), st[0], st[1], g, d))
	}
	return o
}

// m returns the number of MLPs.
func (o mlpsOp) m() int { return len(o.blocks) }

// Sig implements op.Op.
func (o mlpsOp) Sig() op.Sig {
	md := o.m() * o.d
	w, v := []int{md, o.d}, []int{md}
	return op.Sig{ID: o.id, In: [][]int{{o.N, o.d}, w, v, v, v, w, v, v, v}, Out: []int{o.m() * o.N, o.d}, Sets: true}
}

// block returns block b's part of each of the op's inputs (or of their
// gradients): x whole, the views of the stacked parameters.
func (o mlpsOp) block(in [][]float32, b int) [][]float32 {
	d, dd := o.d, o.d*o.d
	part := func(v []float32, n int) []float32 { return v[b*n : (b+1)*n] }
	return [][]float32{in[0], part(in[1], dd), part(in[2], d), part(in[3], d), part(in[4], d), part(in[5], dd), part(in[6], d), part(in[7], d), part(in[8], d)}
}

// Forward implements op.Op: each block's MLP (mlpOp.Forward) into its
// block of y.
func (o mlpsOp) Forward(in [][]float32, y []float32) error {
	nd := o.N * o.d
	for b, blk := range o.blocks {
		if err := blk.Forward(o.block(in, b), y[b*nd:(b+1)*nd]); err != nil {
			return err
		}
	}
	return nil
}

// Backward implements op.Op: each block's backward pass (mlpOp.Backward)
// into the views of the parameters' gradients; block 0 sets dx, each
// later block's input gradient is added to it in block order.
func (o mlpsOp) Backward(in [][]float32, y, dy []float32, dIn [][]float32) error {
	nd, d := o.N*o.d, o.d
	var dxb []float32
	for b, blk := range o.blocks {
		g := o.block(dIn, b)
		if b > 0 {
			if dxb == nil {
				dxb = o.be.Buf(nd)
			}
			g[0] = dxb
		}
		if err := blk.Backward(o.block(in, b), y[b*nd:(b+1)*nd], dy[b*nd:(b+1)*nd], g); err != nil {
			return err
		}
		if b > 0 {
			dx := dIn[0]
			o.be.ForEachChunk(o.bd.N, func(_, lo, hi int) {
				for i := lo * d; i < hi*d; i++ {
					dx[i] += dxb[i]
				}
			})
		}
	}
	return nil
}

// ZeroOut implements op.ZeroOut: DeviceForward writes the real rows of
// each block.
func (mlpsOp) ZeroOut() {}

// DeviceForward implements op.DeviceOp: the m MLPs as one of m·d
// interleaved columns. The first products x·W₁⁽ᵇ⁾ of all blocks are one
// strided batched product (x shared), into the columns b·d .. b·d+d−1 of
// z1; the batch norm over the m·d columns adds b₁ as it reads
// (bnReLU.deviceForward, as the fused MLP); the block-diagonal second
// product is one strided batched product; the second batch norm; and
// spn_blocks stacks the interleaved result into y. On the emulated
// device the bits are those of the m fused MLPs' device math
// (TestMLPsOnDevice); on a GPU cuBLAS may pick other kernels for a batch
// of products than for one, so they may differ there in the last bits.
func (o mlpsOp) DeviceForward(e *engine.Engine, in []*cuda.Buffer, y *cuda.Buffer) error {
	m, d, n := o.m(), o.d, o.bd.N
	md := m * d
	// z holds the first product, then the second (the batch norms read
	// only the real rows, and no backward pass reads the products).
	var bufs [3]*cuda.Buffer // z, a1, the interleaved output
	for i := range bufs {
		var err error
		if bufs[i], err = op.ScratchBuffer(e, o.N*md); err != nil {
			return err
		}
	}
	z, a1, yi := bufs[0], bufs[1], bufs[2]
	o.st.a1, o.st.y = a1, yi
	blas, err := e.BLAS()
	if err != nil {
		return err
	}
	if err := blas.SgemmStridedBatched(false, false, n, d, d, 1, in[0], d, 0, in[1], d, d*d, 0, z, md, d, m); err != nil {
		return fmt.Errorf("%s: %w", o.id, err)
	}
	if err := o.bn1.deviceForward(e, z, in[2], in[3], in[4], a1); err != nil {
		return err
	}
	if err := blas.SgemmStridedBatched(false, false, n, d, d, 1, a1, md, d, in[5], d, d*d, 0, z, md, d, m); err != nil {
		return fmt.Errorf("%s: %w", o.id, err)
	}
	if err := o.bn2.deviceForward(e, z, in[6], in[7], in[8], yi); err != nil {
		return err
	}
	return e.Launch("spn_blocks", n*md, y, yi, n, o.N, d, m, 1)
}

// DeviceBackward implements op.DeviceOp: dy interleaved (spn_blocks),
// then the forward pass's steps in reverse, each product's gradients one
// strided batched product per operand, each batch norm adding the
// gradient of the bias before it (bnReLU.deviceBackward); the blocks'
// input gradients dz1⁽ᵇ⁾·W₁⁽ᵇ⁾ᵀ go into a scratch stack, added in block
// order into dx (spn_sum_blocks, as Backward adds them). The adaptor
// zeroed the gradients; dx's padding rows stay zero.
func (o mlpsOp) DeviceBackward(e *engine.Engine, in []*cuda.Buffer, y, dy *cuda.Buffer, dIn []*cuda.Buffer) error {
	a1, yi := o.st.a1, o.st.y
	if a1 == nil || yi == nil {
		return fmt.Errorf("%s: no device forward pass recorded", o.id)
	}
	m, d, n := o.m(), o.d, o.bd.N
	md := m * d
	// Two buffers, each used twice: dy interleaved, then da1 in g[0]; dz2,
	// then dz1 in g[1] (each value is dead when the next takes its buffer).
	var g [2]*cuda.Buffer
	for i := range g {
		var err error
		if g[i], err = op.ScratchBuffer(e, o.N*md); err != nil {
			return err
		}
	}
	dyi, dz2, da1, dz1 := g[0], g[1], g[0], g[1]
	dxs, err := op.ScratchBuffer(e, m*n*d)
	if err != nil {
		return err
	}
	if err := e.Launch("spn_blocks", n*md, dyi, dy, n, o.N, d, m, 0); err != nil {
		return err
	}
	if err := o.bn2.deviceBackward(e, in[7], yi, dyi, bnGrads{DX: dz2, DG: dIn[7], DB: dIn[8], DBias: dIn[6]}); err != nil {
		return err
	}
	blas, err := e.BLAS()
	if err != nil {
		return err
	}
	products := []struct {
		transA, transB bool
		rows, cols, k  int
		A              *cuda.Buffer
		lda, strideA   int
		B              *cuda.Buffer
		ldb, strideB   int
		C              *cuda.Buffer
		ldc, strideC   int
		after          func() error
	}{
		// dW₂⁽ᵇ⁾ = a1⁽ᵇ⁾ᵀ·dz2⁽ᵇ⁾, da1⁽ᵇ⁾ = dz2⁽ᵇ⁾·W₂⁽ᵇ⁾ᵀ
		{true, false, d, d, n, a1, md, d, dz2, md, d, dIn[5], d, d * d, nil},
		{false, true, n, d, d, dz2, md, d, in[5], d, d * d, da1, md, d,
			func() error {
				return o.bn1.deviceBackward(e, in[3], a1, da1, bnGrads{DX: dz1, DG: dIn[3], DB: dIn[4], DBias: dIn[2]})
			}},
		// dW₁⁽ᵇ⁾ = xᵀ·dz1⁽ᵇ⁾, dx⁽ᵇ⁾ = dz1⁽ᵇ⁾·W₁⁽ᵇ⁾ᵀ
		{true, false, d, d, n, in[0], d, 0, dz1, md, d, dIn[1], d, d * d, nil},
		{false, true, n, d, d, dz1, md, d, in[1], d, d * d, dxs, d, n * d, nil},
	}
	for _, p := range products {
		if err := blas.SgemmStridedBatched(p.transA, p.transB, p.rows, p.cols, p.k, 1, p.A, p.lda, p.strideA, p.B, p.ldb, p.strideB, 0, p.C, p.ldc, p.strideC, m); err != nil {
			return fmt.Errorf("%s: %w", o.id, err)
		}
		if p.after != nil {
			if err := p.after(); err != nil {
				return err
			}
		}
	}
	if n == 0 {
		return nil
	}
	return e.Launch("spn_sum_blocks", n*d, dIn[0], dxs, n*d, m)
}
