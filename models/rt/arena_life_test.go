package rt

import (
	"math"
	"slices"
	"testing"
	"unsafe"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/spn-project/spn/models/op"
)

// square is y = x ⊙ x over n values, its buffers from an arena: an op
// whose backward pass reads its input (so that the input must outlive
// the forward pass until the gradient has run).
type square struct {
	id string
	n  int
}

func (s square) Sig() op.Sig { return op.Sig{ID: s.id, In: [][]int{{s.n}}, Out: []int{s.n}} }

func (s square) Forward(in [][]float32, out []float32) error {
	for i, v := range in[0] {
		out[i] = v * v
	}
	return nil
}

func (s square) Backward(in [][]float32, _, dOut []float32, dIn [][]float32) error {
	for i, g := range dOut {
		dIn[0][i] = 2 * in[0][i] * g
	}
	return nil
}

// total is the scalar Σ x.
type total struct{ n int }

func (s total) Sig() op.Sig { return op.Sig{ID: "total", In: [][]int{{s.n}}} }

func (s total) Forward(in [][]float32, out []float32) error {
	var t float32
	for _, v := range in[0] {
		t += v
	}
	out[0] = t
	return nil
}

func (s total) Backward(_ [][]float32, _, dOut []float32, dIn [][]float32) error {
	for i := range dIn[0] {
		dIn[0][i] = dOut[0]
	}
	return nil
}

// span is where a buffer lies.
func span(b []float32) (lo, hi uintptr) {
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	return p, p + 4*uintptr(len(b))
}

// overlap reports whether buffers a and b share memory.
func overlap(a, b []float32) bool {
	alo, ahi := span(a)
	blo, bhi := span(b)
	return alo < bhi && blo < ahi
}

// TestArenaReleasesReadBuffers runs three nodes a → b → c by hand: a's
// buffer stays apart from b's while b (its reader) runs, and c reuses it
// once b has run; c's buffer, which lives to the end, is never reused.
func TestArenaReleasesReadBuffers(t *testing.T) {
	ops := []G.Op{op.Adapt(nil, square{"a", 1}), op.Adapt(nil, square{"b", 1}), op.Adapt(nil, square{"c", 1})}
	l := &lifetimes{
		node:   map[G.Op]int{ops[0]: 0, ops[1]: 1, ops[2]: 2},
		uses:   []int{1, 1, -1},
		reads:  [][]int{nil, {0}, {1}},
		parts:  []int{0, 0, 0},
		partOf: []int{-1, -1, -1},
	}
	a := &arena{}
	for run := 0; run < 2; run++ {
		a.reset()
		a.use(l)
		a.enter(ops[0])
		x := a.get(1000)
		a.enter(ops[1])
		y := a.get(1000)
		if overlap(x, y) {
			t.Fatalf("run %d: b's buffer overlaps a's, which b reads", run)
		}
		a.enter(ops[2])
		z := a.get(1000)
		if unsafe.SliceData(z) != unsafe.SliceData(x) {
			t.Errorf("run %d: c did not reuse a's buffer, released once its reader b ran", run)
		}
		if overlap(z, y) {
			t.Errorf("run %d: c's buffer overlaps b's, which c reads", run)
		}
		w := a.get(500) // c's second buffer: nothing released fits
		if overlap(w, x) || overlap(w, y) {
			t.Errorf("run %d: a live buffer was handed out again", run)
		}
	}
	if got, want := a.Requested(), int64(4*(1008+1008+512)); got != want {
		t.Errorf("a run took %d bytes from the bump, want %d", got, want)
	}
}

// TestArenaReleaseMerges releases blocks out of order and checks that
// neighbours merge (a request as large as two of them fits), that a block
// ending at the bump gives its memory back to it, and that get takes the
// smallest released block that fits.
func TestArenaReleaseMerges(t *testing.T) {
	a := &arena{}
	a.reset()
	var bs []block
	for _, n := range []int{160, 320, 160, 640, 160} {
		a.get(n)
		bs = append(bs, block{a.cur, a.off - n, a.off})
	}
	a.release(bs[0])
	a.release(bs[2])
	a.release(bs[1]) // merges 0, 1 and 2: 640 floats at 0
	if want := []block{{0, 0, 640}}; !slices.Equal(a.free, want) {
		t.Fatalf("released blocks %v, want %v", a.free, want)
	}
	if lo, _ := span(a.get(480)); lo != uintptr(unsafe.Pointer(&a.chunks[0][0])) {
		t.Errorf("get(480) did not take the merged block at the start")
	}
	if want := []block{{0, 480, 640}}; !slices.Equal(a.free, want) {
		t.Errorf("after get(480): released blocks %v, want %v", a.free, want)
	}
	a.release(bs[4]) // ends at the bump: given back
	if a.off != bs[4].start || len(a.free) != 1 {
		t.Fatalf("bump at %d with %d released blocks; want %d and 1", a.off, len(a.free), bs[4].start)
	}
	a.release(bs[3]) // merges with [480, 640) and ends at the bump
	if a.off != 480 || len(a.free) != 0 {
		t.Errorf("bump at %d with released blocks %v; want 480 and none", a.off, a.free)
	}
	if a.run != 480 || a.peak != 1440 {
		t.Errorf("bump holds %d floats after a peak of %d; want 480 and 1440", a.run, a.peak)
	}
}

// TestGraphLifetimes: a value read through one of Gorgonia's own ops
// counts the adaptor nodes behind it as its readers; a value read by a
// gorgonia.Read, and one nobody reads, live to the end.
func TestGraphLifetimes(t *testing.T) {
	g := G.NewGraph()
	x := G.NewVector(g, G.Float32, G.WithShape(4), G.WithName("x"), G.WithValue(tensor.New(tensor.WithBacking([]float32{1, 2, 3, 4}))))
	apply := func(o op.Op, in *G.Node) *G.Node {
		n, err := op.Apply(nil, o, in)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	a := apply(square{"a", 4}, x)
	c := apply(square{"c", 4}, G.Must(G.Neg(a)))
	d := apply(square{"d", 4}, a)
	var v G.Value
	G.Read(c, &v)
	l := graphLifetimes(g)
	idx := func(n *G.Node) int {
		i, ok := l.node[n.Op()]
		if !ok {
			t.Fatalf("%v has no lifetime", n)
		}
		return i
	}
	if len(l.node) != 3 {
		t.Errorf("%d adaptor nodes, want 3", len(l.node))
	}
	if got := l.uses[idx(a)]; got != 2 {
		t.Errorf("a: %d readers, want 2 (c through the negation, d)", got)
	}
	for _, n := range []*G.Node{c, d} {
		if got := l.uses[idx(n)]; got != -1 {
			t.Errorf("%v: uses %d, want -1 (to the end of the run)", n, got)
		}
		if got := l.reads[idx(n)]; !slices.Equal(got, []int{idx(a)}) {
			t.Errorf("%v reads %v, want [a]", n, got)
		}
	}
}

// TestStepReleasesBuffers runs the forward and backward pass of a chain of
// squares on the tape machine, with the graph's lifetimes and without:
// the same loss and gradient bits; without lifetimes a run holds every
// forward value and every gradient at once, with them the forward values
// (each read by its gradient) and two gradients in flight.
func TestStepReleasesBuffers(t *testing.T) {
	const n, depth = 4096, 8
	run := func(withLife bool) (loss float32, grad []float32, bump int64) {
		g := G.NewGraph()
		x0 := make([]float32, n)
		for i := range x0 {
			x0[i] = 1 + float32(i%7)/64
		}
		x := G.NewVector(g, G.Float32, G.WithShape(n), G.WithName("x"), G.WithValue(tensor.New(tensor.WithBacking(x0))))
		ar := &arena{}
		env := Env{ar: ar}
		h := x
		for i := range depth {
			var err error
			if h, err = op.Apply(env, square{"sq" + string(rune('0'+i)), n}, h); err != nil {
				t.Fatal(err)
			}
		}
		cost, err := op.Apply(env, total{n}, h)
		if err != nil {
			t.Fatal(err)
		}
		gs, err := G.Grad(cost, x)
		if err != nil {
			t.Fatal(err)
		}
		var lv, gv G.Value
		G.Read(cost, &lv)
		G.Read(gs[0], &gv)
		vm := G.NewTapeMachine(g)
		defer vm.Close()
		for range 2 { // the second run reuses the first one's memory
			ar.reset()
			if withLife {
				ar.use(graphLifetimes(g))
			}
			vm.Reset()
			if err := vm.RunAll(); err != nil {
				t.Fatal(err)
			}
			ar.use(nil)
		}
		return lv.Data().(float32), slices.Clone(gv.Data().([]float32)), ar.Requested()
	}
	l0, g0, b0 := run(false)
	l1, g1, b1 := run(true)
	if l0 != l1 || !slices.Equal(g0, g1) {
		t.Fatalf("with lifetimes: loss %v and gradient %v…; without: %v and %v…", l1, g1[:4], l0, g0[:4])
	}
	t.Logf("bump per run: %d KB without lifetimes, %d KB with", b0>>10, b1>>10)
	const buf = 4 * n
	if b0 < 2*depth*buf {
		t.Errorf("without lifetimes a run takes %d bytes, less than %d buffers of %d", b0, 2*depth, buf)
	}
	if b1 > (depth+2)*buf+4<<10 {
		t.Errorf("with lifetimes a run takes %d bytes, more than %d buffers of %d", b1, depth+2, buf)
	}
}

// mul is y = x ⊙ w over n values, both differentiated (dw goes to the
// gradient node's side values and out through a part node). Its backward
// pass then takes a scratch buffer from be and fills it with NaN, so that
// side values released too early (and handed out as that scratch) come
// out as NaN.
type mul struct {
	be Env
	n  int
}

func (m mul) Sig() op.Sig { return op.Sig{ID: "mul", In: [][]int{{m.n}, {m.n}}, Out: []int{m.n}} }

func (m mul) Forward(in [][]float32, out []float32) error {
	for i := range out {
		out[i] = in[0][i] * in[1][i]
	}
	return nil
}

func (m mul) Backward(in [][]float32, _, dOut []float32, dIn [][]float32) error {
	for i, g := range dOut {
		dIn[0][i] = g * in[1][i]
		dIn[1][i] = g * in[0][i]
	}
	s := m.be.Buf(m.n)
	for i := range s {
		s[i] = float32(math.NaN())
	}
	return nil
}

// TestSideValuesLiveToTheirParts: a gradient node's side values (dw of
// mul) are released once its part node has run, not before: the part's
// copy is the gradient, with lifetimes as without, and the lifetimes
// name the part node as the side values' one reader.
func TestSideValuesLiveToTheirParts(t *testing.T) {
	const n = 1024
	run := func(withLife bool) []float32 {
		g := G.NewGraph()
		x0, w0 := make([]float32, n), make([]float32, n)
		for i := range x0 {
			x0[i], w0[i] = 1+float32(i%5)/8, 2-float32(i%3)/8
		}
		x := G.NewVector(g, G.Float32, G.WithShape(n), G.WithName("x"), G.WithValue(tensor.New(tensor.WithBacking(x0))))
		w := G.NewVector(g, G.Float32, G.WithShape(n), G.WithName("w"), G.WithValue(tensor.New(tensor.WithBacking(w0))))
		ar := &arena{}
		env := Env{ar: ar}
		h, err := op.Apply(env, mul{env, n}, x, w)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			if h, err = op.Apply(env, square{"sq" + string(rune('0'+i)), n}, h); err != nil {
				t.Fatal(err)
			}
		}
		cost, err := op.Apply(env, total{n}, h)
		if err != nil {
			t.Fatal(err)
		}
		gs, err := G.Grad(cost, x, w)
		if err != nil {
			t.Fatal(err)
		}
		var gv G.Value
		G.Read(gs[1], &gv)
		l := graphLifetimes(g)
		if withLife {
			sides := 0
			for k, j := range l.partOf {
				if j >= 0 {
					sides++
					if l.parts[j] != 1 {
						t.Errorf("gradient node %d: %d part nodes, want 1", j, l.parts[j])
					}
					if l.uses[k] != -1 {
						t.Errorf("the part node (read by gorgonia.Read) has uses %d, want -1", l.uses[k])
					}
				}
			}
			if sides != 1 {
				t.Errorf("%d part nodes with a gradient node, want 1 (dw)", sides)
			}
		}
		vm := G.NewTapeMachine(g)
		defer vm.Close()
		for range 2 {
			ar.reset()
			if withLife {
				ar.use(l)
			}
			vm.Reset()
			if err := vm.RunAll(); err != nil {
				t.Fatal(err)
			}
			ar.use(nil)
		}
		return slices.Clone(gv.Data().([]float32))
	}
	want, got := run(false), run(true)
	if !slices.Equal(got, want) {
		t.Fatalf("dw with lifetimes %v…, without %v…", got[:4], want[:4])
	}
	for i, v := range got {
		if math.IsNaN(float64(v)) {
			t.Fatalf("dw[%d] is NaN", i)
		}
	}
}
