package engine

import (
	"fmt"

	"gorgonia.org/tensor"
)

// The Gorgonia built-ins of the baseline's graph (models/baseline): its
// forward pass is Mul (MatMul), BroadcastAdd (Repeat along axis 0, then
// Add) and Rectify (Gte with a scalar 0 in the tensor's type, then the
// elementwise Mul); Gorgonia's autodiff adds MatMul with a transposed
// operand, Mul, and Sum along axis 0 (the gradient of the Repeat).

var (
	_ tensor.MatMuler = (*Engine)(nil)
	_ tensor.Muler    = (*Engine)(nil)
	_ tensor.Gteer    = (*Engine)(nil)
	_ tensor.Repeater = (*Engine)(nil)
	_ tensor.Sumer    = (*Engine)(nil)
)

// transposed reports whether t is a transposed view (Gorgonia's
// linAlgBinOp transposes an operand in place with T, which moves no
// data).
func transposed(t tensor.Tensor) bool {
	d, ok := t.(*tensor.Dense)
	return ok && d.IsMaterializable()
}

// MatMul implements tensor.MatMuler: prealloc = a·b for float32 device
// matrices, either of them possibly a transposed view, by cuBLAS's Sgemm.
// prealloc must be the memory tensor.Dense.MatMul has just allocated for
// the result (Alloc): an existing value passed for reuse is refused, so
// that no node's value is overwritten (Gorgonia's tape machine then runs
// the op again without reuse).
func (e *Engine) MatMul(a, b, prealloc tensor.Tensor) error {
	fresh := e.fresh
	e.fresh = 0
	as, bs, cs := a.Shape(), b.Shape(), prealloc.Shape()
	if !as.IsMatrix() || !bs.IsMatrix() || !cs.IsMatrix() {
		return fmt.Errorf("device engine: MatMul of shapes %v and %v into %v: want matrices", as, bs, cs)
	}
	m, k, n := as[0], as[1], bs[1]
	if bs[0] != k || cs[0] != m || cs[1] != n {
		return fmt.Errorf("device engine: MatMul of shapes %v and %v into %v", as, bs, cs)
	}
	if prealloc.Uintptr() != fresh {
		return fmt.Errorf("device engine: MatMul into an existing tensor %v (reuse) is not supported", cs)
	}
	ab, err := e.Buffer(a)
	if err != nil {
		return err
	}
	bb, err := e.Buffer(b)
	if err != nil {
		return err
	}
	cb, err := e.Buffer(prealloc)
	if err != nil {
		return err
	}
	blas, err := e.BLAS()
	if err != nil {
		return err
	}
	if err := blas.Sgemm(transposed(a), transposed(b), m, n, k, 1, ab, bb, 0, cb); err != nil {
		return fmt.Errorf("device engine: MatMul of %v and %v: %w", as, bs, err)
	}
	return nil
}

// Mul implements tensor.Muler: a ⊙ b for float32 device tensors of equal
// shapes (spn_mul), into a new scratch tensor whatever the options ask,
// as Add.
func (e *Engine) Mul(a, b tensor.Tensor, opts ...tensor.FuncOpt) (tensor.Tensor, error) {
	if !a.Shape().Eq(b.Shape()) {
		return nil, fmt.Errorf("device engine: multiplying shapes %v and %v", a.Shape(), b.Shape())
	}
	ab, err := e.Buffer(a)
	if err != nil {
		return nil, err
	}
	bb, err := e.Buffer(b)
	if err != nil {
		return nil, err
	}
	y, err := e.Scratch(a.Shape().Clone()...)
	if err != nil {
		return nil, err
	}
	yb, _ := e.Buffer(y)
	n := ab.Len()
	if err := e.Launch("spn_mul", n, yb, ab, bb, n); err != nil {
		return nil, fmt.Errorf("multiplying %v: %w", a.Shape(), err)
	}
	return y, nil
}

// MulScalar implements tensor.Muler by refusing: the baseline's graph
// multiplies no device tensor by a scalar.
func (e *Engine) MulScalar(a tensor.Tensor, b interface{}, leftTensor bool, opts ...tensor.FuncOpt) (tensor.Tensor, error) {
	return nil, fmt.Errorf("device engine: multiplying a device tensor %v by a scalar is not supported", a.Shape())
}

// Gte implements tensor.Gteer by refusing: the baseline's graph compares
// device tensors with scalars only.
func (e *Engine) Gte(a, b tensor.Tensor, opts ...tensor.FuncOpt) (tensor.Tensor, error) {
	return nil, fmt.Errorf("device engine: comparing device tensors %v and %v is not supported", a.Shape(), b.Shape())
}

// GteScalar implements tensor.Gteer for a float32 device tensor a and a
// host float32 scalar b, with the result in a's type (tensor.AsSameType,
// as Gorgonia's Rectify asks): 1 where a ≥ b (b ≥ a when !leftTensor),
// else 0 (spn_ge_scalar), into a new scratch tensor.
func (e *Engine) GteScalar(a tensor.Tensor, b interface{}, leftTensor bool, opts ...tensor.FuncOpt) (tensor.Tensor, error) {
	if fo := tensor.ParseFuncOpts(opts...); !fo.Same() {
		return nil, fmt.Errorf("device engine: comparing a device tensor %v with a scalar: only a result of the same type (AsSameType) is supported", a.Shape())
	}
	s, err := hostScalar(b)
	if err != nil {
		return nil, fmt.Errorf("device engine: comparing a device tensor %v with a scalar: %w", a.Shape(), err)
	}
	ab, err := e.Buffer(a)
	if err != nil {
		return nil, err
	}
	y, err := e.Scratch(a.Shape().Clone()...)
	if err != nil {
		return nil, err
	}
	yb, _ := e.Buffer(y)
	left := 0
	if leftTensor {
		left = 1
	}
	n := ab.Len()
	if err := e.Launch("spn_ge_scalar", n, yb, ab, s, left, n); err != nil {
		return nil, fmt.Errorf("comparing %v: %w", a.Shape(), err)
	}
	return y, nil
}

// hostScalar returns the float32 value of a host scalar: a float32, or a
// scalar host tensor or value holding one.
func hostScalar(b interface{}) (float32, error) {
	switch v := b.(type) {
	case float32:
		return v, nil
	case tensor.Tensor:
		if v.Shape().TotalSize() != 1 {
			return 0, fmt.Errorf("the scalar is a tensor of shape %v", v.Shape())
		}
		if _, ok := v.Engine().(*Engine); ok {
			return 0, fmt.Errorf("the scalar is on the device")
		}
		return hostScalar(v.Data())
	case interface{ Data() interface{} }:
		return hostScalar(v.Data())
	case []float32:
		if len(v) == 1 {
			return v[0], nil
		}
	}
	return 0, fmt.Errorf("the scalar is a %T, want float32", b)
}

// Repeat implements tensor.Repeater for the one repeat of Gorgonia's
// BroadcastAdd: a device row (1×c) repeated n times along axis 0, an n×c
// matrix (spn_copy_cols reading the row for every output row), into a
// new scratch tensor.
func (e *Engine) Repeat(t tensor.Tensor, axis int, repeats ...int) (tensor.Tensor, error) {
	s := t.Shape()
	if axis != 0 || len(repeats) != 1 || repeats[0] < 1 || !s.IsMatrix() || s[0] != 1 {
		return nil, fmt.Errorf("device engine: repeating a device tensor %v along axis %d %v times: only a row repeated along axis 0 is supported", s, axis, repeats)
	}
	xb, err := e.Buffer(t)
	if err != nil {
		return nil, err
	}
	n, c := repeats[0], s[1]
	y, err := e.Scratch(n, c)
	if err != nil {
		return nil, err
	}
	yb, _ := e.Buffer(y)
	if err := e.Launch("spn_copy_cols", n*c, yb, xb, n, c, c, 0, 0, 0); err != nil {
		return nil, fmt.Errorf("repeating %v: %w", s, err)
	}
	return y, nil
}

// RepeatReuse implements tensor.Repeater by refusing: the results of the
// engine's built-ins are fresh memory.
func (e *Engine) RepeatReuse(t tensor.Tensor, reuse tensor.Tensor, axis int, repeats ...int) (tensor.Tensor, error) {
	return nil, fmt.Errorf("device engine: repeating a device tensor %v into an existing tensor (reuse) is not supported", t.Shape())
}

// Sum implements tensor.Sumer for the sum along axis 0 of a float32
// device matrix (n×d), a vector of d values: the gradient of the bias of
// BroadcastAdd. Each column is summed rows in order, a float partial per
// chunk of 128 rows added in chunk order (spn_col_sums), which is the
// order of the CPU engine's sum (rows in order) for n ≤ 128.
func (e *Engine) Sum(a tensor.Tensor, along ...int) (tensor.Tensor, error) {
	s := a.Shape()
	if !s.IsMatrix() || len(along) != 1 || along[0] != 0 {
		return nil, fmt.Errorf("device engine: summing a device tensor %v along %v: only a matrix along axis 0 is supported", s, along)
	}
	xb, err := e.Buffer(a)
	if err != nil {
		return nil, err
	}
	n, d := s[0], s[1]
	y, err := e.Scratch(d)
	if err != nil {
		return nil, err
	}
	yb, _ := e.Buffer(y)
	if err := e.fill(yb, 0); err != nil {
		return nil, err
	}
	if err := e.Launch("spn_col_sums", d, yb, xb, n, d); err != nil {
		return nil, fmt.Errorf("summing %v: %w", s, err)
	}
	return y, nil
}
