package drew

import (
	"fmt"

	"github.com/spn-project/spn/models/cuda"
	"github.com/spn-project/spn/models/cuda/engine"
	"github.com/spn-project/spn/models/op"
	"github.com/spn-project/spn/models/rt"
)

// mix is the weighted sum of a DRew layer's hop terms over N×d inputs
// M_1..M_m,
//
//	y = Σ_{i=1..m} α_i·M_i
//
// terms in order, with α an input (m values, the softmax of the learned
// logits) or, with Equal, the constant 1/m. Its gradient: dM_i = α_i·dy,
// dα_i = ⟨dy, M_i⟩. The padding rows of y are zero. No other op weighs
// several tensors by the entries of a vector: HopCombine weighs hop sums of
// one state, RelAgg sums without weights.
//
// The device math launches the existing kernels: spn_combine_terms
// (y += (1+ε)·S + α_1·R with S a zero buffer and α_1 the view of α_i)
// per term, spn_combine_terms_backward for dM_i and op.DeviceDots for dα,
// so that it has the CPU's bits.
type mix struct {
	id    string
	be    rt.Env
	bd    *rt.BatchData
	m     int
	equal bool
	N, d  int
}

// Sig implements op.Op: inputs α (without Equal), M_1..M_m.
func (o mix) Sig() op.Sig {
	var in [][]int
	if !o.equal {
		in = append(in, []int{o.m})
	}
	for range o.m {
		in = append(in, []int{o.N, o.d})
	}
	return op.Sig{ID: o.id, In: in, Out: []int{o.N, o.d}}
}

// split returns α (nil with Equal) and the terms of the inputs.
func split[T any](o mix, in []T) (alpha T, terms []T) {
	if o.equal {
		return alpha, in
	}
	return in[0], in[1:]
}

// weights returns α on the host.
func (o mix) weights(alpha []float32) []float32 {
	if !o.equal {
		return alpha
	}
	w := make([]float32, o.m)
	for i := range w {
		w[i] = 1 / float32(o.m)
	}
	return w
}

// Forward implements op.Op.
func (o mix) Forward(in [][]float32, y []float32) error {
	alpha, terms := split(o, in)
	w, n := o.weights(alpha), o.bd.N*o.d
	clear(y)
	for i, M := range terms {
		a := w[i]
		for j, v := range M[:n] {
			y[j] += a * v
		}
	}
	return nil
}

// Backward implements op.Op.
func (o mix) Backward(in [][]float32, _, dy []float32, g [][]float32) error {
	alpha, terms := split(o, in)
	dAlpha, dTerms := split(o, g)
	w, n := o.weights(alpha), o.bd.N*o.d
	for i := range terms {
		a := w[i]
		for j, v := range dy[:n] {
			dTerms[i][j] = a * v
		}
	}
	if !o.equal {
		heads := make([][]float32, o.m)
		for i, M := range terms {
			heads[i] = M[:n]
		}
		for i, v := range o.be.Dots(dy[:n], heads, o.bd.N, o.d) {
			dAlpha[i] = float32(v)
		}
	}
	return nil
}

// ZeroOut implements op.ZeroOut: DeviceForward adds the terms into the
// adaptor's zeros.
func (mix) ZeroOut() {}

// deviceWeights returns α on the device: the input, or m values 1/m.
func (o mix) deviceWeights(e *engine.Engine, alpha *cuda.Buffer) (*cuda.Buffer, error) {
	if !o.equal {
		return alpha, nil
	}
	w, err := e.Scratch32(o.m)
	if err != nil {
		return nil, err
	}
	return w, e.Launch("spn_fill", o.m, w, 1/float32(o.m), o.m)
}

// DeviceForward implements op.DeviceOp.
func (o mix) DeviceForward(e *engine.Engine, in []*cuda.Buffer, y *cuda.Buffer) error {
	alpha, terms := split(o, in)
	w, err := o.deviceWeights(e, alpha)
	if err != nil {
		return err
	}
	n := o.bd.N * o.d
	zero, err := e.Zeros(n)
	if err != nil {
		return err
	}
	for i, M := range terms {
		a, err := w.Slice(i, 1)
		if err != nil {
			return fmt.Errorf("%s: α_%d: %w", o.id, i+1, err)
		}
		if err := e.Launch("spn_combine_terms", n, y, zero, M, a, a, n); err != nil {
			return err
		}
	}
	return nil
}

// DeviceBackward implements op.DeviceOp.
func (o mix) DeviceBackward(e *engine.Engine, in []*cuda.Buffer, _, dy *cuda.Buffer, g []*cuda.Buffer) error {
	alpha, terms := split(o, in)
	dAlpha, dTerms := split(o, g)
	w, err := o.deviceWeights(e, alpha)
	if err != nil {
		return err
	}
	n := o.bd.N * o.d
	scratch, err := e.Scratch32(n)
	if err != nil {
		return err
	}
	for i := range terms {
		a, err := w.Slice(i, 1)
		if err != nil {
			return fmt.Errorf("%s: α_%d: %w", o.id, i+1, err)
		}
		if err := e.Launch("spn_combine_terms_backward", n, scratch, dTerms[i], dy, a, a, n); err != nil {
			return err
		}
	}
	if o.equal {
		return nil
	}
	for i, M := range terms {
		out, err := dAlpha.Slice(i, 1)
		if err != nil {
			return err
		}
		if err := op.DeviceDots(e, op.Dots{G: dy, Xs: M, T: 1}, o.bd.N, o.d, out, nil); err != nil {
			return err
		}
	}
	return nil
}
