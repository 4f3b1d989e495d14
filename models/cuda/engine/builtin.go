package engine

import (
	"fmt"

	"gorgonia.org/tensor"

	"github.com/spn-project/spn/models/cuda"
	"github.com/spn-project/spn/models/kernels"
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
// Gorgonia's compiler preallocates the result of an op that calls an
// extern (a product) with an alloc instruction, whose value is host
// memory with the machine's engine (alloc.exec, vm_tape.go:584: makeValue,
// then setEngine): MatMul points such a tensor at new scratch device
// memory (tensor.FromMemory) and computes there, so the host memory is
// never written; device memory of the engine (a register's earlier value,
// or what tensor.Dense.MatMul allocated) is written in place.
func (e *Engine) MatMul(a, b, prealloc tensor.Tensor) error {
	as, bs, cs := a.Shape(), b.Shape(), prealloc.Shape()
	if !as.IsMatrix() || !bs.IsMatrix() || !cs.IsMatrix() {
		return fmt.Errorf("device engine: MatMul of shapes %v and %v into %v: want matrices", as, bs, cs)
	}
	m, k, n := as[0], as[1], bs[1]
	if bs[0] != k || cs[0] != m || cs[1] != n {
		return fmt.Errorf("device engine: MatMul of shapes %v and %v into %v", as, bs, cs)
	}
	cb, err := e.into(prealloc, "MatMul")
	if err != nil {
		return err
	}
	ab, err := e.Buffer(a)
	if err != nil {
		return err
	}
	bb, err := e.Buffer(b)
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

// into returns the device buffer of prealloc, the result tensor given to
// a built-in that writes into it (MatMul, RepeatReuse): its own device
// memory, or for a float32 dense tensor of this engine over host memory
// (a value of Gorgonia's alloc instruction) new scratch device memory
// that the tensor is pointed at (tensor.FromMemory).
func (e *Engine) into(prealloc tensor.Tensor, what string) (*cuda.Buffer, error) {
	if prealloc.Dtype() != tensor.Float32 {
		return nil, fmt.Errorf("device engine: %s into a tensor of %v, want float32", what, prealloc.Dtype())
	}
	if _, ok := e.mem[prealloc.Uintptr()]; !ok {
		c, ok := prealloc.(*tensor.Dense)
		if !ok || transposed(c) || c.Engine() != tensor.Engine(e) {
			return nil, fmt.Errorf("device engine: %s into a %T %v that is neither device memory nor a dense tensor of this engine", what, prealloc, prealloc.Shape())
		}
		mem, err := e.alloc(int64(c.Shape().TotalSize())*4, true)
		if err != nil {
			return nil, err
		}
		tensor.FromMemory(mem.addr, mem.size)(c)
	}
	return e.Buffer(prealloc)
}

// Mul implements tensor.Muler: a ⊙ b for float32 device tensors of equal
// shapes (spn_mul), into a new scratch tensor whatever the options ask,
// as Add.
func (e *Engine) Mul(a, b tensor.Tensor, opts ...tensor.FuncOpt) (tensor.Tensor, error) {
	return e.elementwise("multiplying", a, b, func(yb, ab, bb *cuda.Buffer, n int) error {
		return e.Launch("spn_mul", n, yb, ab, bb, n)
	})
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
	n, c, err := repeatShape(t, axis, repeats)
	if err != nil {
		return nil, err
	}
	y, err := e.Scratch(n, c)
	if err != nil {
		return nil, err
	}
	return y, e.repeat(y, t)
}

// RepeatReuse implements tensor.Repeater: Repeat into reuse (n×c), the
// value Gorgonia's compiler preallocates for repeatOp (see MatMul).
func (e *Engine) RepeatReuse(t tensor.Tensor, reuse tensor.Tensor, axis int, repeats ...int) (tensor.Tensor, error) {
	n, c, err := repeatShape(t, axis, repeats)
	if err != nil {
		return nil, err
	}
	if s := reuse.Shape(); !s.Eq(tensor.Shape{n, c}) {
		return nil, fmt.Errorf("device engine: repeating %v %d times into a tensor %v", t.Shape(), n, s)
	}
	return reuse, e.repeat(reuse, t)
}

// repeatShape checks a repeat the engine does (a row along axis 0) and
// returns the result's shape.
func repeatShape(t tensor.Tensor, axis int, repeats []int) (n, c int, err error) {
	s := t.Shape()
	if axis != 0 || len(repeats) != 1 || repeats[0] < 1 || !s.IsMatrix() || s[0] != 1 {
		return 0, 0, fmt.Errorf("device engine: repeating a device tensor %v along axis %d %v times: only a row repeated along axis 0 is supported", s, axis, repeats)
	}
	return repeats[0], s[1], nil
}

// repeat writes the row x repeated into y (n×c).
func (e *Engine) repeat(y, x tensor.Tensor) error {
	xb, err := e.Buffer(x)
	if err != nil {
		return err
	}
	yb, err := e.into(y, "Repeat")
	if err != nil {
		return err
	}
	n, c := y.Shape()[0], y.Shape()[1]
	if err := e.Launch("spn_copy_cols", n*c, yb, xb, n, c, c, 0, 0, 0); err != nil {
		return fmt.Errorf("repeating %v: %w", x.Shape(), err)
	}
	return nil
}

// Sum implements tensor.Sumer for the sum along axis 0 of a float32
// device matrix (n×d), a vector of d values: the gradient of the bias of
// BroadcastAdd. Each column is summed rows in order, a float partial per
// chunk of 128 rows added in chunk order (ColSums), which is the
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
	if err := e.ColSums(yb, xb, n, d); err != nil {
		return nil, fmt.Errorf("summing %v: %w", s, err)
	}
	return y, nil
}

// ColSums adds the column sums of dz (n×d, rows in order) to db (d
// values): a float partial per chunk of kernels.ChunkRows rows
// (spn_col_part, one thread per chunk and column), added to db in chunk
// order (spn_col_sums; not launched for one chunk, whose partial
// spn_col_part adds itself). These are the bits of the CPU's bias
// gradient (models/kernels' CPU.MatMulAT), and no thread loops over more
// than a chunk's rows or the chunks.
func (e *Engine) ColSums(db, dz *cuda.Buffer, n, d int) error {
	nc := kernels.NumChunks(n)
	if nc <= 1 {
		return e.Launch("spn_col_part", d, db, nil, dz, n, d)
	}
	pb, err := e.Scratch32(nc * d)
	if err != nil {
		return err
	}
	if err := e.Launch("spn_col_part", nc*d, db, pb, dz, n, d); err != nil {
		return err
	}
	return e.Launch("spn_col_sums", d, db, pb, nc, d)
}
