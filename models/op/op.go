// Package op is the one adaptor between spn's differentiable primitives
// and Gorgonia. A primitive (an Op) is written once, as a forward and a
// backward pass over float32 slices (computing with the models/kernels
// backend); Apply turns it into a Gorgonia node whose symbolic derivative
// (SymDiff) is one gradient node that runs the op's Backward, so Gorgonia
// keeps doing the graph and the autodiff while the math lives in one place.
//
// An Op's identity (Sig.ID plus its shapes) is written into the Gorgonia
// op's hash: Gorgonia silently merges nodes whose ops hash equal over the
// same children, so two ops of different layers or roles must have
// different IDs.
package op

import (
	"fmt"
	"hash"
	"hash/fnv"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Sig is an op's signature: its identity, input shapes, output shape (nil
// for a scalar) and which inputs are differentiated (nil: all).
type Sig struct {
	ID   string
	In   [][]int
	Out  []int
	Diff []bool
	// Sets, when true, says that Backward sets every value of the gradient
	// of the first differentiated input (padding included), so that the
	// caller need not zero it; the other gradients are zeroed as always.
	// The device adaptor zeroes every gradient (one launch a run), so
	// DeviceBackward need not set the padding.
	Sets bool
}

// Op is one differentiable primitive.
type Op interface {
	// Sig returns the op's signature, fixed when the graph is built.
	Sig() Sig
	// Forward writes the output into out (every value of it) from the
	// inputs.
	Forward(in [][]float32, out []float32) error
	// Backward writes the gradient of every differentiated input i into
	// dIn[i] (zeroed by the caller unless Sig.Sets says otherwise for the
	// first differentiated input; nil for inputs not differentiated),
	// given the inputs, the output of the matching Forward and the output
	// gradient dOut. An op that keeps state between its Forward and
	// Backward (e.g. hop sums) may rely on Backward following the Forward
	// of the same run.
	Backward(in [][]float32, out, dOut []float32, dIn [][]float32) error
}

// Buffers hands out float32 buffers for op outputs (an arena recycled
// between runs); nil allocates.
type Buffers interface {
	Buf(n int) []float32
}

// Tracker is implemented by Buffers that recycle memory within a run
// (rt's arena): the adaptor calls Enter with its Gorgonia op before each
// Do, so that the buffers taken during a Do are known to be its node's,
// to be reused once every node that reads them has run.
type Tracker interface {
	Enter(o G.Op)
	// Side says that buf, taken during the running gradient node's Do,
	// holds the gradients its part nodes copy out (PartOf), and nothing
	// else reads it: it may be reused once they have run.
	Side(buf []float32)
	// Release says that buf, taken during the running Do, is scratch the
	// op reads no more: it may be reused at once.
	Release(buf []float32)
}

// enter tells bufs, when it is a Tracker, that o's Do begins.
func enter(bufs Buffers, o G.Op) {
	if t, ok := bufs.(Tracker); ok {
		t.Enter(o)
	}
}

// side tells bufs, when it is a Tracker, that buf holds side values.
func side(bufs Buffers, buf []float32) {
	if t, ok := bufs.(Tracker); ok {
		t.Side(buf)
	}
}

// Adaptor reports whether o is one of this package's Gorgonia ops (a
// forward, gradient or gradient-part node), whose Do announces itself to
// a Tracker, takes every buffer of its node from its Buffers and
// returns fresh memory, never a view of an input.
func Adaptor(o G.Op) bool {
	switch o.(type) {
	case *fwd, *bwd, *part:
		return true
	}
	return false
}

// Release gives buf, scratch that the running op took from bufs (Buf) and
// reads no more, back to bufs when bufs is a Tracker; otherwise it does
// nothing. bufs is any, so that an op holding its buffers as another
// interface (a kernels.Backend that is also Buffers) can pass it.
func Release(bufs any, buf []float32) {
	if t, ok := bufs.(Tracker); ok {
		t.Release(buf)
	}
}

// PartOf returns, when o is a gradient-part node's op, the op of the
// gradient node whose side values it copies.
func PartOf(o G.Op) (G.Op, bool) {
	if p, ok := o.(*part); ok {
		return p.g, true
	}
	return nil, false
}

// Size is the number of values of shape s (1 for a scalar).
func Size(s []int) int {
	n := 1
	for _, v := range s {
		n *= v
	}
	return n
}

// Apply adds op o over the input nodes in to their graph. Its output and
// its gradients take their memory from bufs (nil: fresh memory).
func Apply(bufs Buffers, o Op, in ...*G.Node) (*G.Node, error) {
	s := o.Sig()
	if len(in) != len(s.In) {
		return nil, fmt.Errorf("%s: %d inputs, want %d", s.ID, len(in), len(s.In))
	}
	n, err := G.ApplyOp(Adapt(bufs, o), in...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.ID, err)
	}
	return n, nil
}

// Adapt returns the Gorgonia op of o (a gorgonia.SDOp), for callers that
// apply ops themselves.
func Adapt(bufs Buffers, o Op) G.Op {
	s := o.Sig()
	return &fwd{node: newNode(s.ID, s.Out, s.In), op: o, sig: s, bufs: bufs}
}

// node is the part of a Gorgonia op every adaptor op shares: identity,
// input ranks and output shape.
type node struct {
	id    string
	ranks []int
	shape tensor.Shape // nil: scalar
}

func newNode(id string, out []int, in [][]int) node {
	r := make([]int, len(in))
	for i, s := range in {
		r[i] = len(s)
	}
	var sh tensor.Shape
	if len(out) > 0 {
		sh = tensor.Shape(append([]int(nil), out...))
	}
	return node{id: id, ranks: r, shape: sh}
}

func typeOfRank(r int) hm.Type {
	if r == 0 {
		return G.Float32
	}
	return G.TensorType{Dims: r, Of: G.Float32}
}

// Arity implements gorgonia.Op.
func (b node) Arity() int { return len(b.ranks) }

// Type implements gorgonia.Op: float32 tensors of the declared ranks.
func (b node) Type() hm.Type {
	ts := make([]hm.Type, 0, len(b.ranks)+1)
	for _, r := range b.ranks {
		ts = append(ts, typeOfRank(r))
	}
	return hm.NewFnType(append(ts, typeOfRank(len(b.shape)))...)
}

// InferShape implements gorgonia.Op: the shape fixed at build time.
func (b node) InferShape(...G.DimSizer) (tensor.Shape, error) {
	if len(b.shape) == 0 {
		return tensor.ScalarShape(), nil
	}
	return b.shape.Clone(), nil
}

// ReturnsPtr implements gorgonia.Op: every op returns fresh memory.
func (node) ReturnsPtr() bool { return false }

// CallsExtern implements gorgonia.Op.
func (node) CallsExtern() bool { return false }

// OverwritesInput implements gorgonia.Op: inputs are never overwritten.
func (node) OverwritesInput() int { return -1 }

// WriteHash implements gorgonia.Op with the op's identity.
func (b node) WriteHash(h hash.Hash) { fmt.Fprintf(h, "spn.op:%s:%v", b.id, b.shape) }

// Hashcode implements gorgonia.Op.
func (b node) Hashcode() uint32 {
	h := fnv.New32a()
	b.WriteHash(h)
	return h.Sum32()
}

// String implements fmt.Stringer with the op's identity.
func (b node) String() string { return b.id }

// value wraps buf as a value of the node's output shape.
func (b node) value(buf []float32) G.Value {
	if len(b.shape) == 0 {
		return G.NewF32(buf[0])
	}
	return tensor.New(tensor.WithShape(b.shape.Clone()...), tensor.WithBacking(buf))
}

func (b node) buf(bufs Buffers, n int) []float32 {
	if bufs == nil {
		return make([]float32, n)
	}
	return bufs.Buf(n)
}

// Floats returns the float32 data of vals[i], checking its length (want <
// 0: any length); id names the op in errors.
func Floats(id string, vals []G.Value, i, want int) ([]float32, error) {
	if i >= len(vals) || vals[i] == nil {
		return nil, fmt.Errorf("%s: input %d missing", id, i)
	}
	switch d := vals[i].Data().(type) {
	case []float32:
		if want >= 0 && len(d) != want {
			return nil, fmt.Errorf("%s: input %d has %d values, want %d", id, i, len(d), want)
		}
		return d, nil
	case float32:
		if want >= 0 && want != 1 {
			return nil, fmt.Errorf("%s: input %d is a scalar, want %d values", id, i, want)
		}
		return []float32{d}, nil
	default:
		return nil, fmt.Errorf("%s: input %d holds %T, want float32", id, i, d)
	}
}

// inputs returns the data of the first len(shapes) values.
func inputs(id string, vals []G.Value, shapes [][]int) ([][]float32, error) {
	in := make([][]float32, len(shapes))
	for i, s := range shapes {
		x, err := Floats(id, vals, i, Size(s))
		if err != nil {
			return nil, err
		}
		in[i] = x
	}
	return in, nil
}

// fwd is the Gorgonia op of an Op's forward pass.
type fwd struct {
	node
	op   Op
	sig  Sig
	bufs Buffers
}

// Do implements gorgonia.Op.
func (o *fwd) Do(vals ...G.Value) (G.Value, error) {
	enter(o.bufs, o)
	if len(vals) != len(o.sig.In) {
		return nil, fmt.Errorf("%s: %d inputs, want %d", o.id, len(vals), len(o.sig.In))
	}
	in, err := inputs(o.id, vals, o.sig.In)
	if err != nil {
		return nil, err
	}
	y := o.buf(o.bufs, Size(o.sig.Out))
	if err := o.op.Forward(in, y); err != nil {
		return nil, fmt.Errorf("%s: %w", o.id, err)
	}
	return o.value(y), nil
}

// diff reports whether input i is differentiated.
func (s Sig) diff(i int) bool { return s.Diff == nil || s.Diff[i] }

// DiffWRT implements gorgonia.SDOp.
func (o *fwd) DiffWRT(n int) []bool {
	d := make([]bool, n)
	for i := range d {
		d[i] = i < len(o.sig.In) && o.sig.diff(i)
	}
	return d
}

// SymDiff implements gorgonia.SDOp: one gradient node over (inputs, y, dy)
// running the op's Backward. Its value is the gradient of the first
// differentiated input (usually the large node-level one), so that it
// needs no copy; the gradients of the other differentiated inputs (usually
// parameters) go to a side buffer of the gradient node, from which one
// node per input copies them (nil for the inputs not differentiated). y is
// an input so that the gradient runs after the forward it may keep state
// from.
func (o *fwd) SymDiff(in G.Nodes, y, dy *G.Node) (G.Nodes, error) {
	first, side := -1, 0
	for i, s := range o.sig.In {
		switch {
		case !o.sig.diff(i):
		case first < 0:
			first = i
		default:
			side += Size(s)
		}
	}
	out := make(G.Nodes, len(in))
	if first < 0 {
		return out, nil
	}
	shapes := append(append([][]int(nil), o.sig.In...), o.sig.Out, o.sig.Out)
	g := &bwd{node: newNode(o.id+".grad", o.sig.In[first], shapes), f: o, first: first, side: side}
	gn, err := G.ApplyOp(g, append(append(G.Nodes(nil), in...), y, dy)...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", o.id, err)
	}
	out[first] = gn
	off := 0
	for i, s := range o.sig.In {
		if i == first || !o.sig.diff(i) {
			continue
		}
		p := &part{node: newNode(fmt.Sprintf("%s.d%d", o.id, i), s, [][]int{o.sig.In[first]}), g: g, off: off, n: Size(s), bufs: o.bufs}
		if out[i], err = G.ApplyOp(p, gn); err != nil {
			return nil, fmt.Errorf("%s: the gradient of input %d: %w", o.id, i, err)
		}
		off += p.n
	}
	return out, nil
}

// bwd is the Gorgonia op of an Op's backward pass: inputs x_1..x_m, y, dy;
// output the gradient of input first, the other differentiated inputs'
// gradients packed into last (side values), read by their part nodes.
type bwd struct {
	node
	f           *fwd
	first, side int
	last        []float32
}

// Do implements gorgonia.Op.
func (o *bwd) Do(vals ...G.Value) (G.Value, error) {
	enter(o.f.bufs, o)
	s := o.f.sig
	m := len(s.In)
	if len(vals) != m+2 {
		return nil, fmt.Errorf("%s: %d inputs, want %d", o.id, len(vals), m+2)
	}
	in, err := inputs(o.id, vals, s.In)
	if err != nil {
		return nil, err
	}
	y, err := Floats(o.id, vals, m, Size(s.Out))
	if err != nil {
		return nil, err
	}
	dy, err := Floats(o.id, vals, m+1, Size(s.Out))
	if err != nil {
		return nil, err
	}
	g := o.buf(o.f.bufs, Size(s.In[o.first]))
	if !s.Sets {
		clear(g)
	}
	o.last = o.buf(o.f.bufs, o.side)
	clear(o.last)
	side(o.f.bufs, o.last)
	dIn := make([][]float32, m)
	dIn[o.first] = g
	off := 0
	for i, sh := range s.In {
		if i != o.first && s.diff(i) {
			dIn[i] = o.last[off : off+Size(sh)]
			off += Size(sh)
		}
	}
	if err := o.f.op.Backward(in, y, dy, dIn); err != nil {
		return nil, fmt.Errorf("%s: %w", o.id, err)
	}
	return o.value(g), nil
}

// part copies values [off, off+n) of its gradient node's side values; its
// input is the gradient node, so that it runs after it.
type part struct {
	node
	g      *bwd
	off, n int
	bufs   Buffers
}

// Do implements gorgonia.Op.
func (p *part) Do(...G.Value) (G.Value, error) {
	enter(p.bufs, p)
	src := p.g.last
	if p.off+p.n > len(src) {
		return nil, fmt.Errorf("%s: part [%d,%d) outside %d side values", p.id, p.off, p.off+p.n, len(src))
	}
	dst := p.buf(p.bufs, p.n)
	copy(dst, src[p.off:p.off+p.n])
	return p.value(dst), nil
}

// Dot is ⟨x, s⟩ for inputs x and s of shape Shape, a scalar computed in
// float64, differentiated in x only (s is data): dx = dL·s. It turns a
// given output gradient s into a loss (models.Model.Backward, gradient
// tests).
type Dot struct {
	ID    string
	Shape []int
}

// Sig implements Op.
func (o Dot) Sig() Sig {
	return Sig{ID: o.ID, In: [][]int{o.Shape, o.Shape}, Diff: []bool{true, false}}
}

// Forward implements Op.
func (o Dot) Forward(in [][]float32, out []float32) error {
	var sum float64
	for i, v := range in[0] {
		sum += float64(v) * float64(in[1][i])
	}
	out[0] = float32(sum)
	return nil
}

// Backward implements Op.
func (o Dot) Backward(in [][]float32, _, dL []float32, dIn [][]float32) error {
	for i, v := range in[1] {
		dIn[0][i] = v * dL[0]
	}
	return nil
}
