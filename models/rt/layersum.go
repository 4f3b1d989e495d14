package rt

import (
	"fmt"

	"github.com/spn-project/spn/models/cuda"
	"github.com/spn-project/spn/models/cuda/engine"
	"github.com/spn-project/spn/models/kernels"
	"github.com/spn-project/spn/models/op"
)

// layerSum is the layer-sum readout of an SPN (the paper's eq. for the
// graph representation, as the official code's readout)
//
//	out = Σ_{t=0..T} Dropout(pool(hᵗ)·Wᵗ + bᵗ)
//
// or, with the layer norm (model.layer_norm, the official code's
// --layer_norm), Σ_t Dropout(LNᵗ(pool(hᵗ))·Wᵗ + bᵗ) with LNᵗ a layer norm
// of its own for every t ≥ 1 and LN⁰ the identity (the code normalises
// the layers' pooled states, not the input embedding's), as one op: per
// readout t the pooling op (pool), the graph-level layer norm (layerNorm),
// the graph-level linear map (linear) and the dropout op (dropout) of
// models/rt, then the sum over t in order, the bits of those ops apart.
// Its inputs are h⁰..hᵀ (N×d), then Wᵗ (d×c) and bᵗ (c) for t = 0..T,
// then, with the layer norm, γᵗ (d) and βᵗ (d) for t = 1..T, then, with
// dropout, the masks (G×c, data). On the device it saves the launches
// of the readouts apart: the poolings, the products, the biases with the
// masks and the sum, and their backward passes take a launch for eight
// readouts each (pooling kernels of up to eight tensors,
// spn_readout_product and its backward, spn_readout_sum,
// spn_readout_masks, spn_readout_bias) instead of a cuBLAS call per
// product.
type layerSum struct {
	id      string
	be      Env
	bd      *BatchData
	pool    pool
	lin     linear
	drop    dropout
	norms   []layerNorm // with the layer norm, LNᵗ at t ≥ 1 (nil: none)
	T1      int         // readouts (T + 1)
	dropout bool        // the masks are inputs
	N, G    int
	d, c    int
	st      *layerSumState
}

// layerSumState is what a layerSum's Backward reads of its Forward: the
// pooled states, which it does not pool again, and their layer norms.
type layerSumState struct {
	p   [][]float32  // CPU: pool(hᵗ) per readout (G×d, arena memory of the run)
	q   [][]float32  // CPU: the linear maps' inputs, LNᵗ(pool(hᵗ)) (p[t] without the layer norm)
	dev *cuda.Buffer // device: pool(hᵗ) of the real graphs, stacked (T1 × graphs × d)
	// devQ is, with the layer norm, LNᵗ(pool(hᵗ)) stacked as dev (its
	// readout 0 unused: the product of readout 0 reads dev).
	devQ *cuda.Buffer
}

// layerSumOpts is the shape of a layer-sum readout: T1 readouts of width
// D over N node rows into G graph rows of C outputs, pooling by Pool,
// with the layer norm of the readouts t ≥ 1 with Norm and dropout masks
// as inputs with Dropout.
type layerSumOpts struct {
	Pool          string
	T1            int
	Norm, Dropout bool
	N, G, D, C    int
}

// newLayerSum returns the layer-sum readout of shape s.
func newLayerSum(id string, be Env, bd *BatchData, s layerSumOpts) (layerSum, error) {
	T1, norm, dropout, N, G, d, c := s.T1, s.Norm, s.Dropout, s.N, s.G, s.D, s.C
	p, err := newPool(id+".pool", be, bd, poolOpts{Kind: s.Pool, N: N, G: G, D: d})
	if err != nil {
		return layerSum{}, err
	}
	o := layerSum{id: id, be: be, bd: bd, pool: p, lin: NewLinear(id+".lin", be, bd, LinearOpts{Graph: true, N: G, In: d, Out: c}).(linear),
		drop: newDropout(id+".dropout", G, c), T1: T1, dropout: dropout, N: N, G: G, d: d, c: c, st: &layerSumState{}}
	if norm {
		o.norms = make([]layerNorm, T1)
		for t := 1; t < T1; t++ {
			o.norms[t] = NewLayerNorm(fmt.Sprintf("%s%d.ln", id, t), be, bd, true, G, d).(layerNorm)
		}
	}
	return o, nil
}

// normed reports whether readout t has a layer norm.
func (o layerSum) normed(t int) bool { return o.norms != nil && t >= 1 }

// Sig implements op.Op: the masks are data.
func (o layerSum) Sig() op.Sig {
	id := fmt.Sprintf("%s.%s.T%d", o.id, o.pool.kind, o.T1)
	if o.norms != nil {
		id += ".ln"
	}
	s := op.Sig{ID: id, Out: []int{o.G, o.c}}
	for range o.T1 {
		s.In = append(s.In, []int{o.N, o.d})
		s.Diff = append(s.Diff, true)
	}
	for range o.T1 {
		s.In = append(s.In, []int{o.d, o.c}, []int{o.c})
		s.Diff = append(s.Diff, true, true)
	}
	for t := range o.T1 {
		if o.normed(t) {
			s.In = append(s.In, []int{o.d}, []int{o.d})
			s.Diff = append(s.Diff, true, true)
		}
	}
	if o.dropout {
		for range o.T1 {
			s.In = append(s.In, []int{o.G, o.c})
			s.Diff = append(s.Diff, false)
		}
	}
	return s
}

// ZeroOut implements op.ZeroOut: DeviceForward writes the real graphs'
// rows.
func (layerSum) ZeroOut() {}

// w, ln and mask return the indices of readout t's inputs Wᵗ (bᵗ
// follows it), γᵗ (t ≥ 1 with the layer norm; βᵗ follows it) and its
// mask; hᵗ is input t.
func (o layerSum) w(t int) int  { return o.T1 + 2*t }
func (o layerSum) ln(t int) int { return 3*o.T1 + 2*(t-1) }
func (o layerSum) mask(t int) int {
	if o.norms != nil {
		return 3*o.T1 + 2*(o.T1-1) + t
	}
	return 3*o.T1 + t
}

// Forward implements op.Op: per readout the pooling, the layer norm, the
// linear map, the mask, and the sum in the order t = 0..T.
func (o layerSum) Forward(in [][]float32, y []float32) error {
	if len(o.st.p) != o.T1 {
		o.st.p, o.st.q = make([][]float32, o.T1), make([][]float32, o.T1)
	}
	r := o.be.Buf(o.G * o.c)
	for t := range o.T1 {
		p := o.be.Buf(o.G * o.d)
		o.st.p[t], o.st.q[t] = p, p
		if err := o.pool.Forward([][]float32{in[t]}, p); err != nil {
			return err
		}
		if o.normed(t) {
			q := o.be.Buf(o.G * o.d)
			o.st.q[t] = q
			l := o.ln(t)
			if err := o.norms[t].Forward([][]float32{p, in[l], in[l+1]}, q); err != nil {
				return err
			}
		}
		w := o.w(t)
		if err := o.lin.Forward([][]float32{o.st.q[t], in[w], in[w+1]}, r); err != nil {
			return err
		}
		if o.dropout {
			if err := o.drop.Forward([][]float32{r, in[o.mask(t)]}, r); err != nil {
				return err
			}
		}
		if t == 0 {
			copy(y, r)
			continue
		}
		for i, v := range r {
			y[i] += v
		}
	}
	return nil
}

// Backward implements op.Op: per readout the mask's, the linear map's,
// the layer norm's and the pooling's backward passes, over the pooled
// states of the Forward.
func (o layerSum) Backward(in [][]float32, _, dy []float32, dIn [][]float32) error {
	if len(o.st.p) != o.T1 {
		return fmt.Errorf("%s: backward without its forward", o.id)
	}
	dr := dy
	if o.dropout {
		dr = o.be.Buf(o.G * o.c)
	}
	dp := o.be.Buf(o.G * o.d)
	var dq []float32
	if o.norms != nil {
		dq = o.be.Buf(o.G * o.d)
	}
	for t := range o.T1 {
		if o.dropout {
			if err := o.drop.Backward([][]float32{nil, in[o.mask(t)]}, nil, dy, [][]float32{dr}); err != nil {
				return err
			}
		}
		clear(dp)
		w, dlin := o.w(t), dp
		if o.normed(t) {
			clear(dq)
			dlin = dq
		}
		if err := o.lin.Backward([][]float32{o.st.q[t], in[w], in[w+1]}, nil, dr, [][]float32{dlin, dIn[w], dIn[w+1]}); err != nil {
			return err
		}
		if o.normed(t) {
			l := o.ln(t)
			if err := o.norms[t].Backward([][]float32{o.st.p[t], in[l], in[l+1]}, nil, dq, [][]float32{dp, dIn[l], dIn[l+1]}); err != nil {
				return err
			}
		}
		if err := o.pool.Backward([][]float32{in[t]}, nil, dp, [][]float32{dIn[t]}); err != nil {
			return err
		}
	}
	return nil
}

// group returns the buffers of the readouts t0..t0+count−1 of inputs
// from (the weights, the biases or the masks; nil: none) as a kernel's
// group of pointer arguments.
func (o layerSum) group(in []*cuda.Buffer, from func(t int) int, t0, count int) []any {
	var bs []*cuda.Buffer
	for t := t0; t < t0+count && from != nil; t++ {
		bs = append(bs, in[from(t)])
	}
	return engine.GroupArgs(bs)
}

// DeviceForward implements op.DeviceOp: the poolings, the layer norms
// (one launch per readout t ≥ 1, spn_layer_norm), the products
// (spn_readout_product, stacked), then the biases, the masks and the sum
// in order (spn_readout_sum), each eight readouts a launch, into the real
// graphs' rows of the zeroed y.
func (o layerSum) DeviceForward(e *engine.Engine, in []*cuda.Buffer, y *cuda.Buffer) error {
	n := o.bd.G
	P, err := op.ScratchBuffer(e, o.T1*n*o.d)
	if err != nil {
		return err
	}
	Z, err := op.ScratchBuffer(e, o.T1*n*o.c)
	if err != nil {
		return err
	}
	o.st.dev, o.st.devQ = P, nil
	if n == 0 {
		return nil
	}
	if err := o.pool.deviceForwardMany(e, in[:o.T1], P); err != nil {
		return err
	}
	if o.norms != nil {
		if o.st.devQ, err = op.ScratchBuffer(e, o.T1*n*o.d); err != nil {
			return err
		}
		for t := 1; t < o.T1; t++ {
			pq, err := o.readouts(t, P, o.st.devQ)
			if err != nil {
				return err
			}
			l := o.ln(t)
			if err := o.norms[t].DeviceForward(e, []*cuda.Buffer{pq[0], in[l], in[l+1]}, pq[1]); err != nil {
				return err
			}
		}
	}
	err = o.productGroups(func(t0, count int, normed bool) error {
		src := P
		if normed {
			src = o.st.devQ
		}
		pg, err := src.Slice(t0*n*o.d, count*n*o.d)
		if err != nil {
			return err
		}
		zg, err := Z.Slice(t0*n*o.c, count*n*o.c)
		if err != nil {
			return err
		}
		args := append([]any{zg, pg}, o.group(in, o.w, t0, count)...)
		return e.Launch("spn_readout_product", count*n*o.c, append(args, count, n, o.d, o.c)...)
	})
	if err != nil {
		return err
	}
	var masks func(t int) int
	if o.dropout {
		masks = o.mask
	}
	size := n * o.c
	return engine.ForGroups(o.T1, func(t0, count int) error {
		zg, err := Z.Slice(t0*size, (o.T1-t0)*size)
		if err != nil {
			return err
		}
		args := append([]any{y, zg}, o.group(in, o.bias, t0, count)...)
		args = append(args, o.group(in, masks, t0, count)...)
		first := 0
		if t0 == 0 {
			first = 1
		}
		return e.Launch("spn_readout_sum", size, append(args, count, size, o.c, first)...)
	})
}

// productGroups calls f for the groups of readouts t0..t0+count−1 whose
// products one launch computes from one stack of inputs: eight a launch
// from the pooled states; with the layer norm, readout 0 alone from the
// pooled states and the readouts 1..T, eight a launch, from their layer
// norms (normed).
func (o layerSum) productGroups(f func(t0, count int, normed bool) error) error {
	if o.norms == nil {
		return engine.ForGroups(o.T1, func(t0, count int) error { return f(t0, count, false) })
	}
	if err := f(0, 1, false); err != nil {
		return err
	}
	return engine.ForGroups(o.T1-1, func(k0, count int) error { return f(k0+1, count, true) })
}

// readouts returns readout t's part (graphs × d) of each of the stacks
// of pooled states (or of their layer norms, or of their gradients) bs.
func (o layerSum) readouts(t int, bs ...*cuda.Buffer) ([]*cuda.Buffer, error) {
	size := o.bd.G * o.d
	out := make([]*cuda.Buffer, len(bs))
	for i, b := range bs {
		var err error
		if out[i], err = b.Slice(t*size, size); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// bias returns the index of readout t's input bᵗ.
func (o layerSum) bias(t int) int { return o.w(t) + 1 }

// DeviceBackward implements op.DeviceOp: the masks' backward and, for
// at most kernels.ChunkRows graphs, the biases' gradients (for more
// graphs, Engine.ColSums per readout), the products' gradients
// (spn_readout_product_backward), the layer norms' backward passes (per
// readout t ≥ 1), then the poolings' backward passes, over the pooled
// states of the DeviceForward, each eight readouts a launch.
func (o layerSum) DeviceBackward(e *engine.Engine, in []*cuda.Buffer, _, dy *cuda.Buffer, dIn []*cuda.Buffer) error {
	n := o.bd.G
	if n == 0 {
		return nil
	}
	if o.st.dev == nil || o.st.dev.Len() != o.T1*n*o.d || (o.norms != nil) != (o.st.devQ != nil) {
		return fmt.Errorf("%s: backward without its forward", o.id)
	}
	size := n * o.c
	// The readouts' output gradients: readout t's at t·stride of dr (dy
	// itself for every readout without dropout).
	dr, stride := dy, 0
	if o.dropout {
		DR, err := op.ScratchBuffer(e, o.T1*size)
		if err != nil {
			return err
		}
		err = engine.ForGroups(o.T1, func(t0, count int) error {
			dg, err := DR.Slice(t0*size, (o.T1-t0)*size)
			if err != nil {
				return err
			}
			args := append([]any{dg, dy}, o.group(in, o.mask, t0, count)...)
			return e.Launch("spn_readout_masks", count*size, append(args, count, size)...)
		})
		if err != nil {
			return err
		}
		dr, stride = DR, size
	}
	if err := o.deviceBiasGrads(e, dr, stride, dIn); err != nil {
		return err
	}
	dP, err := op.ScratchBuffer(e, o.T1*n*o.d)
	if err != nil {
		return err
	}
	// dQ: the gradients of the layer norms' outputs (readout 0 unused).
	var dQ *cuda.Buffer
	if o.norms != nil {
		if dQ, err = op.ScratchBuffer(e, o.T1*n*o.d); err != nil {
			return err
		}
	}
	err = o.productGroups(func(t0, count int, normed bool) error {
		src, dst := o.st.dev, dP
		if normed {
			src, dst = o.st.devQ, dQ
		}
		dpg, err := dst.Slice(t0*n*o.d, count*n*o.d)
		if err != nil {
			return err
		}
		pg, err := src.Slice(t0*n*o.d, count*n*o.d)
		if err != nil {
			return err
		}
		dg, err := readoutsFrom(dr, stride, t0)
		if err != nil {
			return err
		}
		args := append(append([]any{dpg}, o.group(dIn, o.w, t0, count)...), pg)
		args = append(append(args, o.group(in, o.w, t0, count)...), dg, count, n, o.d, o.c, stride)
		return e.Launch("spn_readout_product_backward", count*n*o.d+count*o.d*o.c, args...)
	})
	if err != nil {
		return err
	}
	for t := 1; t < o.T1 && o.norms != nil; t++ {
		b, err := o.readouts(t, o.st.dev, dQ, dP)
		if err != nil {
			return err
		}
		l := o.ln(t)
		if err := o.norms[t].DeviceBackward(e, []*cuda.Buffer{b[0], in[l], in[l+1]}, nil, b[1], []*cuda.Buffer{b[2], dIn[l], dIn[l+1]}); err != nil {
			return err
		}
	}
	return o.pool.deviceBackwardMany(e, in[:o.T1], dP, dIn[:o.T1])
}

// deviceBiasGrads adds the readouts' bias gradients to dIn from their
// output gradients dr (readout t's at t·stride): for at most
// kernels.ChunkRows graphs (one chunk of rows) eight readouts a launch
// (spn_readout_bias), else Engine.ColSums per readout.
func (o layerSum) deviceBiasGrads(e *engine.Engine, dr *cuda.Buffer, stride int, dIn []*cuda.Buffer) error {
	n := o.bd.G
	if n > kernels.ChunkRows {
		for t := range o.T1 {
			drt, err := dr.Slice(t*stride, n*o.c)
			if err != nil {
				return err
			}
			if err := e.ColSums(dIn[o.bias(t)], drt, n, o.c); err != nil {
				return err
			}
		}
		return nil
	}
	return engine.ForGroups(o.T1, func(t0, count int) error {
		dg, err := readoutsFrom(dr, stride, t0)
		if err != nil {
			return err
		}
		args := append(o.group(dIn, o.bias, t0, count), dg, count, n, o.c, stride)
		return e.Launch("spn_readout_bias", count*o.c, args...)
	})
}

// readoutsFrom is dr, the readouts' output gradients (readout t's at
// t·stride), from readout t0 on: a group's for the kernels that take
// dr with its stride.
func readoutsFrom(dr *cuda.Buffer, stride, t0 int) (*cuda.Buffer, error) {
	return dr.Slice(t0*stride, dr.Len()-t0*stride)
}
