package rt

import (
	"fmt"

	"github.com/spn-project/spn/models/cuda"
	"github.com/spn-project/spn/models/cuda/engine"
	"github.com/spn-project/spn/models/kernels"
	"github.com/spn-project/spn/models/op"
)

// linear is y = x·W + b for inputs x (N×in), W (in×out), b (out), over
// the kernels' parallel GEMM, on the real rows (nodes, or graphs for a
// graph-level op). Its gradient: dx = dy·Wᵀ (kernels.MatMulBT) and
// dW = xᵀ·dy, db = Σ_rows dy in one pass (kernels.MatMulAT).
type linear struct {
	id           string
	be           Env
	bd           *BatchData
	graph        bool // rows are graphs, not nodes
	N, in, outCh int
}

// LinearOpts is the shape of a NewLinear op: its input is an N×In tensor
// of node-level rows, or of graph-level rows with Graph, W is In×Out and
// b Out.
type LinearOpts struct {
	// Graph says the rows are graphs (the batch's real graph count), not
	// nodes.
	Graph bool
	// N is the padded number of rows, In and Out the input and output
	// widths.
	N, In, Out int
}

// NewLinear returns the op y = x·W + b over the real rows of an N×In
// node-level (o.Graph: graph-level) tensor, W In×Out, b Out.
func NewLinear(id string, be Env, bd *BatchData, o LinearOpts) op.Op {
	return linear{id: id, be: be, bd: bd, graph: o.Graph, N: o.N, in: o.In, outCh: o.Out}
}

// Sig implements op.Op.
func (o linear) Sig() op.Sig {
	return op.Sig{ID: o.id, In: [][]int{{o.N, o.in}, {o.in, o.outCh}, {o.outCh}}, Out: []int{o.N, o.outCh}}
}

// Forward implements op.Op.
func (o linear) Forward(in [][]float32, y []float32) error {
	x, w, b := in[0], in[1], in[2]
	n := o.bd.Rows(o.graph)
	o.be.MatMul(y[:n*o.outCh], x[:n*o.in], w, b, kernels.MatMulShape{N: n, In: o.in, Out: o.outCh})
	clear(y[n*o.outCh:])
	return nil
}

// Backward implements op.Op.
func (o linear) Backward(in [][]float32, _, dy []float32, dIn [][]float32) error {
	x, w := in[0], in[1]
	n := o.bd.Rows(o.graph)
	o.be.MatMulBT(dIn[0][:n*o.in], dy[:n*o.outCh], w, kernels.MatMulShape{N: n, In: o.in, Out: o.outCh})
	buf := o.be.Buf(kernels.NumChunks(n) * (o.in*o.outCh + o.outCh)) // the per-chunk partial sums
	scratch := buf
	o.be.MatMulATBuf(dIn[1], dIn[2], x[:n*o.in], dy[:n*o.outCh], kernels.MatMulShape{N: n, In: o.in, Out: o.outCh}, &buf)
	o.be.Release(scratch)
	return nil
}

// ZeroOut implements op.ZeroOut: DeviceForward writes the real rows.
func (linear) ZeroOut() {}

// DeviceForward implements op.DeviceOp: x·W by cuBLAS into a scratch
// product (deviceProduct), then y = product + b (spn_bias_relu) on the
// real rows (the padding rows of the zeroed y stay zero, op.ZeroOut).
func (o linear) DeviceForward(e *engine.Engine, in []*cuda.Buffer, y *cuda.Buffer) error {
	n := o.bd.Rows(o.graph)
	pb, err := op.ScratchBuffer(e, max(n, 1)*o.outCh)
	if err != nil {
		return err
	}
	if err := o.deviceProduct(e, in[0], in[1], pb); err != nil {
		return err
	}
	return e.Launch("spn_bias_relu", n*o.outCh, y, pb, in[2], n, o.outCh, 0)
}

// deviceProduct sets the real rows of p to x·W (cuBLAS), the linear map
// without its bias: what the fused MLP hands to the batch norm after it,
// which adds the bias as it reads (bnReLU.deviceForward).
func (o linear) deviceProduct(e *engine.Engine, x, w, p *cuda.Buffer) error {
	blas, err := e.BLAS()
	if err != nil {
		return err
	}
	return blas.Sgemm(false, false, o.bd.Rows(o.graph), o.outCh, o.in, 1, x, w, 0, p)
}

// DeviceBackward implements op.DeviceOp: dx = dy·Wᵀ and dW = xᵀ·dy on
// the real rows by cuBLAS (deviceGrads), db = Σ_rows dy (Engine.ColSums,
// the CPU's chunk order).
func (o linear) DeviceBackward(e *engine.Engine, in []*cuda.Buffer, _, dy *cuda.Buffer, dIn []*cuda.Buffer) error {
	if err := o.deviceGrads(e, in[0], in[1], dy, dIn[0], dIn[1]); err != nil {
		return err
	}
	return e.ColSums(dIn[2], dy, o.bd.Rows(o.graph), o.outCh)
}

// deviceGrads sets dx = dy·Wᵀ and dW = xᵀ·dy on the real rows (cuBLAS),
// the gradients but the bias's: the fused MLP has the batch norm after
// the map add the bias's (bnReLU.deviceBackward).
func (o linear) deviceGrads(e *engine.Engine, x, w, dy, dx, dW *cuda.Buffer) error {
	blas, err := e.BLAS()
	if err != nil {
		return err
	}
	n := o.bd.Rows(o.graph)
	if err := blas.Sgemm(false, true, n, o.in, o.outCh, 1, dy, w, 0, dx); err != nil {
		return err
	}
	return blas.Sgemm(true, false, o.in, o.outCh, n, 1, x, dy, 0, dW)
}

// encoder is the input encoding h0_u = E[label_u] + attrs_u·W + b. The
// node labels and attributes are batch data; its inputs are the parameters
// that exist: E (labels×d) if the dataset has labels, W (attrs×d) if it has
// attributes, and b (d). Its gradient: dE[l] = Σ_{u: label_u = l} dy_u,
// dW = attrsᵀ·dy, db = Σ_u dy_u.
type encoder struct {
	id               string
	be               Env
	bd               *BatchData
	numLabels, attrD int
	N, d             int
}

// encoderShape is the shape of a newEncoder op: the dataset's number of
// node labels and attribute width (0 for none), the padded number of
// nodes N and the hidden width D.
type encoderShape struct {
	NumLabels, AttrDim int
	N, D               int
}

func newEncoder(id string, be Env, bd *BatchData, s encoderShape) encoder {
	return encoder{id: id, be: be, bd: bd, numLabels: s.NumLabels, attrD: s.AttrDim, N: s.N, d: s.D}
}

// Sig implements op.Op.
func (o encoder) Sig() op.Sig {
	var in [][]int
	if o.numLabels > 0 {
		in = append(in, []int{o.numLabels, o.d})
	}
	if o.attrD > 0 {
		in = append(in, []int{o.attrD, o.d})
	}
	return op.Sig{ID: o.id, In: append(in, []int{o.d}), Out: []int{o.N, o.d}}
}

// split returns E, W and b (nil when absent) from the op's inputs.
func (o encoder) split(in [][]float32) (emb, attrW, bias []float32) {
	i := 0
	if o.numLabels > 0 {
		emb, i = in[0], 1
	}
	if o.attrD > 0 {
		attrW, i = in[i], i+1
	}
	return emb, attrW, in[i]
}

// Forward implements op.Op.
func (o encoder) Forward(in [][]float32, y []float32) error {
	emb, attrW, bias := o.split(in)
	d, n := o.d, o.bd.N
	clear(y[n*d:])
	if attrW != nil {
		o.be.MatMul(y[:n*d], o.bd.Attrs[:n*o.attrD], attrW, bias, kernels.MatMulShape{N: n, In: o.attrD, Out: d})
	} else {
		for r := 0; r < n; r++ {
			copy(y[r*d:(r+1)*d], bias)
		}
	}
	if emb != nil {
		for r, l := range o.bd.Labels[:n] {
			yr := y[r*d : (r+1)*d]
			for j, v := range emb[int(l)*d : int(l+1)*d] {
				yr[j] += v
			}
		}
	}
	return nil
}

// Backward implements op.Op.
func (o encoder) Backward(_ [][]float32, _, dy []float32, dIn [][]float32) error {
	gEmb, gAttr, gBias := o.split(dIn)
	d, n := o.d, o.bd.N
	if gAttr != nil {
		o.be.MatMulAT(gAttr, gBias, o.bd.Attrs[:n*o.attrD], dy[:n*d], kernels.MatMulShape{N: n, In: o.attrD, Out: d})
	} else {
		for r := 0; r < n; r++ {
			for j, v := range dy[r*d : (r+1)*d] {
				gBias[j] += v
			}
		}
	}
	if gEmb != nil {
		for r, l := range o.bd.Labels[:n] {
			gl := gEmb[int(l)*d : int(l+1)*d]
			for j, v := range dy[r*d : (r+1)*d] {
				gl[j] += v
			}
		}
	}
	return nil
}

// devSplit returns E, W and b (nil when absent) from the op's device
// buffers (split's order).
func (o encoder) devSplit(in []*cuda.Buffer) (emb, attrW, bias *cuda.Buffer) {
	i := 0
	if o.numLabels > 0 {
		emb, i = in[0], 1
	}
	if o.attrD > 0 {
		attrW, i = in[i], i+1
	}
	return emb, attrW, in[i]
}

// ZeroOut implements op.ZeroOut: DeviceForward writes the real rows.
func (encoder) ZeroOut() {}

// DeviceForward implements op.DeviceOp: attrs·W by cuBLAS, then
// y = (attrs·W + b) + E[label] per value (spn_encode) on the real rows,
// the padding rows of the zeroed y left zero (op.ZeroOut).
func (o encoder) DeviceForward(e *engine.Engine, in []*cuda.Buffer, y *cuda.Buffer) error {
	db, err := o.bd.dev(o.id)
	if err != nil {
		return err
	}
	emb, attrW, bias := o.devSplit(in)
	d, n := o.d, o.bd.N
	var labels, p *cuda.Buffer
	if emb != nil {
		if labels = db.Labels; labels == nil {
			return fmt.Errorf("%s: the batch on the device has no node labels", o.id)
		}
	}
	if attrW != nil {
		if db.Attrs == nil {
			return fmt.Errorf("%s: the batch on the device has no node attributes", o.id)
		}
		blas, err := e.BLAS()
		if err != nil {
			return err
		}
		if p, err = op.ScratchBuffer(e, max(n, 1)*d); err != nil {
			return err
		}
		if err := blas.Sgemm(false, false, n, d, o.attrD, 1, db.Attrs, attrW, 0, p); err != nil {
			return err
		}
	}
	return e.Launch("spn_encode", n*d, y, p, bias, emb, labels, n, d)
}

// DeviceBackward implements op.DeviceOp: dW = attrsᵀ·dy by cuBLAS,
// db = Σ_rows dy (Engine.ColSums), dE[l] = Σ_{u: label_u = l} dy_u over the
// nodes of each label in ascending order (nbop.DeviceRows.Grad: the
// CPU's order, by chunks of kernels.ChunkRows nodes).
func (o encoder) DeviceBackward(e *engine.Engine, _ []*cuda.Buffer, _, dy *cuda.Buffer, dIn []*cuda.Buffer) error {
	db, err := o.bd.dev(o.id)
	if err != nil {
		return err
	}
	gEmb, gAttr, gBias := o.devSplit(dIn)
	d, n := o.d, o.bd.N
	if gAttr != nil {
		if db.Attrs == nil {
			return fmt.Errorf("%s: the batch on the device has no node attributes", o.id)
		}
		blas, err := e.BLAS()
		if err != nil {
			return err
		}
		if err := blas.Sgemm(true, false, o.attrD, d, n, 1, db.Attrs, dy, 0, gAttr); err != nil {
			return err
		}
	}
	if err := e.ColSums(gBias, dy, n, d); err != nil {
		return err
	}
	if gEmb == nil {
		return nil
	}
	if db.LabelRows == nil {
		return fmt.Errorf("%s: the batch on the device has no node labels", o.id)
	}
	if db.LabelRows.Rows > o.numLabels {
		return fmt.Errorf("%s: the batch has label %d, the embedding %d rows", o.id, db.LabelRows.Rows-1, o.numLabels)
	}
	return db.LabelRows.Grad(e, gEmb, dy, d)
}
