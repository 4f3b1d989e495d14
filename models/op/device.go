package op

import (
	"fmt"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/spn-project/spn/models/cuda"
	"github.com/spn-project/spn/models/cuda/engine"
	"github.com/spn-project/spn/models/kernels"
)

// DeviceOp is a primitive's math on a CUDA device: the same signature as
// its Op, forward and backward over device buffers of a device engine
// (kernel launches of models/cuda/kern, cuBLAS). A primitive that runs on
// both devices implements Op and DeviceOp on one type, so that its
// identity and shapes are written once and each device's math once.
type DeviceOp interface {
	// Sig returns the op's signature (as Op.Sig).
	Sig() Sig
	// DeviceForward writes the output into out (every value of it, or
	// for a ZeroOut op the values that are not zero) from the inputs; a
	// scalar input or output is a buffer of one value.
	DeviceForward(e *engine.Engine, in []*cuda.Buffer, out *cuda.Buffer) error
	// DeviceBackward writes the gradients as Op.Backward does, into dIn[i]
	// zeroed by the adaptor (every differentiated input's: Sig.Sets is
	// for the CPU, where zeroing costs a pass over memory and here one
	// launch zeroes a run's gradients); nil for inputs not
	// differentiated.
	DeviceBackward(e *engine.Engine, in []*cuda.Buffer, out, dOut *cuda.Buffer, dIn []*cuda.Buffer) error
}

// ZeroOut is a DeviceOp whose DeviceForward is given its output zeroed
// (by the adaptor, from the engine's Zeros: one launch zeroes a run's)
// and writes only the values that are not zero, e.g. the real rows,
// leaving the padding rows zero. One that calls another's DeviceForward
// must give it zeroed memory too.
type ZeroOut interface {
	DeviceOp
	// ZeroOut marks the op.
	ZeroOut()
}

// ApplyDevice adds the device op o over the input nodes in to their
// graph, its values and gradients device tensors of e (scratch memory,
// freed by e.Reset). The graph is the same as Apply's: one gradient node
// running DeviceBackward, one node per further differentiated input. A
// scalar output (the loss) stays on the device too, a tensor of one
// value, so that the graph's run never waits for the device; its
// reader copies it back (models/rt's step, with the outputs), and a
// gorgonia.Read of it, which would copy device memory on the host,
// must not be in the graph. A scalar input or output gradient given on
// the host (the loss's gradient seed, 1) goes to the device as the
// argument of a fill kernel, not as a copy.
func ApplyDevice(e *engine.Engine, o DeviceOp, in ...*G.Node) (*G.Node, error) {
	s := o.Sig()
	if len(in) != len(s.In) {
		return nil, fmt.Errorf("%s: %d inputs, want %d", s.ID, len(in), len(s.In))
	}
	n, err := G.ApplyOp(&devFwd{node: newNode(s.ID, s.Out, s.In), op: o, sig: s, e: e}, in...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.ID, err)
	}
	return n, nil
}

// devBuffer returns the device buffer of value v of shape sh: a device
// tensor's, or a new scratch buffer holding a host scalar.
func devBuffer(e *engine.Engine, id string, v G.Value, i int, sh []int) (*cuda.Buffer, error) {
	switch x := v.(type) {
	case tensor.Tensor:
		if x.Shape().TotalSize() != Size(sh) {
			return nil, fmt.Errorf("%s: input %d has %d values, want %d", id, i, x.Shape().TotalSize(), Size(sh))
		}
		b, err := e.Buffer(x)
		if err != nil {
			return nil, fmt.Errorf("%s: input %d: %w", id, i, err)
		}
		return b, nil
	case nil:
		return nil, fmt.Errorf("%s: input %d missing", id, i)
	default:
		f, ok := v.Data().(float32)
		if !ok || Size(sh) != 1 {
			return nil, fmt.Errorf("%s: input %d holds %T, want a device tensor", id, i, v.Data())
		}
		// The value goes to the device as a kernel argument (spn_fill),
		// not as a copy.
		t, err := e.Scratch(1)
		if err == nil {
			err = e.Fill(t, f)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: input %d: %w", id, i, err)
		}
		b, _ := e.Buffer(t)
		return b, nil
	}
}

// ScratchBuffer returns a scratch buffer of n float32 values (at least
// one) of e's run: the temporary memory of a device op's math, freed by
// e.Reset (engine.Scratch32).
func ScratchBuffer(e *engine.Engine, n int) (*cuda.Buffer, error) { return e.Scratch32(max(n, 1)) }

func devBuffers(e *engine.Engine, id string, vals []G.Value, shapes [][]int) ([]*cuda.Buffer, error) {
	bs := make([]*cuda.Buffer, len(shapes))
	for i, sh := range shapes {
		if i >= len(vals) {
			return nil, fmt.Errorf("%s: input %d missing", id, i)
		}
		b, err := devBuffer(e, id, vals[i], i, sh)
		if err != nil {
			return nil, err
		}
		bs[i] = b
	}
	return bs, nil
}

// devShape is the device tensor shape of an op shape (one value for a
// scalar).
func devShape(s []int) []int {
	if len(s) == 0 {
		return []int{1}
	}
	return s
}

// devFwd is the Gorgonia op of a DeviceOp's forward pass.
type devFwd struct {
	node
	op  DeviceOp
	sig Sig
	e   *engine.Engine
}

// Do implements gorgonia.Op.
func (o *devFwd) Do(vals ...G.Value) (G.Value, error) {
	if len(vals) != len(o.sig.In) {
		return nil, fmt.Errorf("%s: %d inputs, want %d", o.id, len(vals), len(o.sig.In))
	}
	in, err := devBuffers(o.e, o.id, vals, o.sig.In)
	if err != nil {
		return nil, err
	}
	var y *tensor.Dense
	if _, ok := o.op.(ZeroOut); ok {
		z, err := o.e.Zeros(Size(devShape(o.sig.Out)))
		if err == nil {
			y, err = o.e.View(z, devShape(o.sig.Out)...)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", o.id, err)
		}
	} else if y, err = o.e.Scratch(devShape(o.sig.Out)...); err != nil {
		return nil, err
	}
	yb, _ := o.e.Buffer(y)
	if err := o.op.DeviceForward(o.e, in, yb); err != nil {
		return nil, fmt.Errorf("%s: %w", o.id, err)
	}
	return y, nil
}

// DiffWRT implements gorgonia.SDOp.
func (o *devFwd) DiffWRT(n int) []bool {
	d := make([]bool, n)
	for i := range d {
		d[i] = i < len(o.sig.In) && o.sig.diff(i)
	}
	return d
}

// SymDiff implements gorgonia.SDOp as fwd.SymDiff does: one gradient node
// over (inputs, y, dy), whose value is the gradient of the first
// differentiated input; the other differentiated inputs' gradients are
// device tensors of the gradient node, which one node per input returns
// (no copy).
func (o *devFwd) SymDiff(in G.Nodes, y, dy *G.Node) (G.Nodes, error) {
	first := -1
	for i := range o.sig.In {
		if o.sig.diff(i) {
			first = i
			break
		}
	}
	out := make(G.Nodes, len(in))
	if first < 0 {
		return out, nil
	}
	shapes := append(append([][]int(nil), o.sig.In...), o.sig.Out, o.sig.Out)
	g := &devBwd{node: newNode(o.id+".grad", o.sig.In[first], shapes), f: o, first: first}
	gn, err := G.ApplyOp(g, append(append(G.Nodes(nil), in...), y, dy)...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", o.id, err)
	}
	out[first] = gn
	for i, s := range o.sig.In {
		if i == first || !o.sig.diff(i) {
			continue
		}
		p := &devPart{node: newNode(fmt.Sprintf("%s.d%d", o.id, i), s, [][]int{o.sig.In[first]}), g: g, i: i}
		if out[i], err = G.ApplyOp(p, gn); err != nil {
			return nil, fmt.Errorf("%s: the gradient of input %d: %w", o.id, i, err)
		}
	}
	return out, nil
}

// devBwd is the Gorgonia op of a DeviceOp's backward pass: inputs
// x_1..x_m, y, dy; output the gradient of input first, the other
// differentiated inputs' gradients kept in side for their devPart nodes.
type devBwd struct {
	node
	f     *devFwd
	first int
	side  []tensor.Tensor
}

// Do implements gorgonia.Op.
func (o *devBwd) Do(vals ...G.Value) (G.Value, error) {
	s, e := o.f.sig, o.f.e
	m := len(s.In)
	if len(vals) != m+2 {
		return nil, fmt.Errorf("%s: %d inputs, want %d", o.id, len(vals), m+2)
	}
	shapes := append(append([][]int(nil), s.In...), s.Out, s.Out)
	bs, err := devBuffers(e, o.id, vals, shapes)
	if err != nil {
		return nil, err
	}
	o.side = make([]tensor.Tensor, m)
	dIn := make([]*cuda.Buffer, m)
	// The gradients are views of zeroed memory (Zeros: one launch zeroes
	// a run's).
	total := 0
	for i, sh := range s.In {
		if s.diff(i) {
			total += Size(devShape(sh))
		}
	}
	var zeros *cuda.Buffer
	if total > 0 {
		if zeros, err = e.Zeros(total); err != nil {
			return nil, fmt.Errorf("%s: %w", o.id, err)
		}
	}
	off := 0
	var first tensor.Tensor
	for i, sh := range s.In {
		if !s.diff(i) {
			continue
		}
		n := Size(devShape(sh))
		b, err := zeros.Slice(off, n)
		var t *tensor.Dense
		if err == nil {
			t, err = e.View(b, devShape(sh)...)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", o.id, err)
		}
		off += n
		dIn[i], _ = e.Buffer(t)
		if i == o.first {
			first = t
		} else {
			o.side[i] = t
		}
	}
	if err := o.f.op.DeviceBackward(e, bs[:m], bs[m], bs[m+1], dIn); err != nil {
		return nil, fmt.Errorf("%s: %w", o.id, err)
	}
	return first, nil
}

// devPart returns the gradient of input i kept by its gradient node; its
// input is the gradient node, so that it runs after it.
type devPart struct {
	node
	g *devBwd
	i int
}

// Do implements gorgonia.Op.
func (p *devPart) Do(...G.Value) (G.Value, error) {
	if p.i >= len(p.g.side) || p.g.side[p.i] == nil {
		return nil, fmt.Errorf("%s: no gradient of input %d from the gradient node", p.id, p.i)
	}
	return p.g.side[p.i], nil
}

// DeviceForward implements DeviceOp: ⟨x, s⟩ by DeviceDots (as n rows of
// one value: products in double, one partial per chunk of
// kernels.ChunkRows values, chunks added in order, rounded to float32
// once).
func (o Dot) DeviceForward(e *engine.Engine, in []*cuda.Buffer, out *cuda.Buffer) error {
	return DeviceDots(e, Dots{G: in[1], Xs: in[0], T: 1}, Size(o.Shape), 1, out, nil)
}

// Dots are the dot products DeviceDots makes, of n×d matrices: ⟨G, X_m⟩
// for the T matrices X_m one after another in Xs (T may be 0), then
// ⟨H, Y_m⟩ for the U matrices Y_m one after another in Ys (U may be 0),
// then ⟨G, X1⟩ when X1 is not nil.
type Dots struct {
	G, Xs *cuda.Buffer
	T     int
	H, Ys *cuda.Buffer
	U     int
	X1    *cuda.Buffer
}

// DeviceDots sets out[m] for m < T+U to the m-th of p's dot products and,
// when p.X1 is not nil, out1[0] to ⟨G, X1⟩: each row's products in double
// (spn_row_dots), the rows' sums added per chunk of kernels.ChunkRows
// rows (spn_dot_chunks, not launched for one chunk), the chunks in order,
// rounded to float once (spn_sum_chunks, one launch for out and out1):
// three launches at most, however many products. No thread loops over
// more than d values, a chunk's rows or the chunks, and the order is
// fixed, so a product has the same bits whatever else is in p.
func DeviceDots(e *engine.Engine, p Dots, n, d int, out, out1 *cuda.Buffer) error {
	split, x1 := p.T+p.U, p.X1
	M := split
	if x1 != nil {
		M++
	}
	if M == 0 {
		return nil
	}
	nc := kernels.NumChunks(n)
	rp, err := e.Scratch64(max(n*M, 1))
	if err != nil {
		return err
	}
	if err := e.Launch("spn_row_dots", n*M, rp, p.G, p.Xs, x1, p.T, p.H, p.Ys, p.U, n, d); err != nil {
		return err
	}
	part, rows := rp, n // one chunk: its rows are the partials
	if nc > 1 {
		if part, err = e.Scratch64(nc * M); err != nil {
			return err
		}
		if err := e.Launch("spn_dot_chunks", nc*M, part, rp, M, n); err != nil {
			return err
		}
		rows = nc
	}
	if x1 == nil {
		out1 = nil
	}
	return e.Launch("spn_sum_chunks", M, out, out1, part, rows, M, 0, M, split)
}

// DeviceBackward implements DeviceOp: dx = dL·s (spn_scale).
func (o Dot) DeviceBackward(e *engine.Engine, in []*cuda.Buffer, _, dL *cuda.Buffer, dIn []*cuda.Buffer) error {
	n := Size(o.Shape)
	return e.Launch("spn_scale", n, dIn[0], in[1], dL, n)
}
