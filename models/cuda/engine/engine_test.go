package engine_test

import (
	"errors"
	"fmt"
	"hash"
	"hash/fnv"
	"math"
	"testing"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/spn-project/spn/internal/testkit/cudatest"
	"github.com/spn-project/spn/internal/testkit/kerntest"
	"github.com/spn-project/spn/models/cuda"
	"github.com/spn-project/spn/models/cuda/engine"
	"github.com/spn-project/spn/models/cuda/kern"
	"github.com/spn-project/spn/models/internal/testkit/enginetest"
	"github.com/spn-project/spn/models/kernels"
)

func values(n int, seed float32) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = seed * float32(math.Sin(float64(i)+float64(seed)))
	}
	return v
}

// ceOp is a device op as the design has them, for the test: the mean
// softmax cross-entropy of logits (g×c) with classes y, a scalar
// downloaded from the device, whose gradient node (ceGrad) computes
// dOut·∂loss/∂logits on the device.
type ceOp struct {
	e    *engine.Engine
	y    *cuda.Buffer // int32 classes
	g, c int
	ce   *cuda.Kernel
	mean *cuda.Kernel
	grad bool // the gradient op: inputs (logits, dOut), output g×c
}

func (o *ceOp) Arity() int {
	if o.grad {
		return 2
	}
	return 1
}

func (o *ceOp) Type() hm.Type {
	m := G.TensorType{Dims: 2, Of: G.Float32}
	if o.grad {
		return hm.NewFnType(m, G.Float32, m)
	}
	return hm.NewFnType(m, G.Float32)
}

func (o *ceOp) InferShape(...G.DimSizer) (tensor.Shape, error) {
	if o.grad {
		return tensor.Shape{o.g, o.c}, nil
	}
	return tensor.ScalarShape(), nil
}

func (o *ceOp) Do(vals ...G.Value) (G.Value, error) {
	lb, err := o.e.Buffer(vals[0].(tensor.Tensor))
	if err != nil {
		return nil, err
	}
	part, err := cuda.Alloc[float64](o.e.Context(), o.g)
	if err != nil {
		return nil, err
	}
	defer part.Free()
	if o.grad {
		dl, err := cuda.NewBuffer(o.e.Context(), []float32{vals[1].Data().(float32)})
		if err != nil {
			return nil, err
		}
		defer dl.Free()
		dz, err := o.e.Scratch(o.g, o.c)
		if err != nil {
			return nil, err
		}
		db, _ := o.e.Buffer(dz)
		return dz, o.ce.Launch(1, o.g, part, db, lb, o.y, dl, o.g, o.c)
	}
	loss, err := cuda.Alloc[float32](o.e.Context(), 1)
	if err != nil {
		return nil, err
	}
	defer loss.Free()
	if err := o.ce.Launch(1, o.g, part, nil, lb, o.y, nil, o.g, o.c); err != nil {
		return nil, err
	}
	if err := o.mean.Launch(1, 1, loss, part, o.g); err != nil {
		return nil, err
	}
	v := make([]float32, 1)
	if err := cuda.Download(v, loss); err != nil {
		return nil, err
	}
	return G.NewF32(v[0]), nil
}

func (o *ceOp) ReturnsPtr() bool     { return false }
func (o *ceOp) CallsExtern() bool    { return false }
func (o *ceOp) OverwritesInput() int { return -1 }
func (o *ceOp) WriteHash(h hash.Hash) {
	fmt.Fprintf(h, "test.ce:%v", o.grad)
}
func (o *ceOp) Hashcode() uint32 { h := fnv.New32a(); o.WriteHash(h); return h.Sum32() }
func (o *ceOp) String() string   { return fmt.Sprintf("ce(grad=%v)", o.grad) }
func (o *ceOp) DiffWRT(int) []bool {
	return []bool{true}
}
func (o *ceOp) SymDiff(in G.Nodes, out, grad *G.Node) (G.Nodes, error) {
	g := *o
	g.grad = true
	d, err := G.ApplyOp(&g, in[0], grad)
	return G.Nodes{d}, err
}

// TestTapeMachineOnDevice runs a Gorgonia graph whose values live on the
// device: logits = (x + w) + x (x has two consumers, so Backpropagate
// sums its gradients with ReduceAdd's Add), the loss of a device op, and
// the gradients of x and w. The loss is read with gorgonia.Read (a host
// scalar), the gradients are taken from their nodes as device tensors.
// Every value is checked against the CPU: the sums and the gradients to
// the bit, the loss within 1e-6 (the device rounds the mean once to
// float32). The engine's addresses fault on a host dereference, so the
// run also shows that Gorgonia reads no device value on the host.
func TestTapeMachineOnDevice(t *testing.T) {
	runTapeMachine(t, enginetest.Emulated(t))
}

// TestGPUTapeMachine is TestTapeMachineOnDevice on GPU 0; without a usable
// GPU it skips (scripts/gpu-check.sh makes that a failure).
func TestGPUTapeMachine(t *testing.T) {
	runTapeMachine(t, enginetest.GPU(t))
}

func runTapeMachine(t *testing.T, e *engine.Engine) {
	const g, c = 5, 3
	xv, wv := values(g*c, 1.5), values(g*c, -0.75)
	y := []int32{0, 2, 1, 1, 0}
	xd, err := e.FromHost(xv, g, c)
	if err != nil {
		t.Fatal(err)
	}
	wd, err := e.FromHost(wv, g, c)
	if err != nil {
		t.Fatal(err)
	}
	if xd.Uintptr() < 1<<57 {
		t.Fatalf("device tensor at %#x: a host address", xd.Uintptr())
	}
	yb, err := cuda.NewBuffer(e.Context(), y)
	if err != nil {
		t.Fatal(err)
	}
	defer yb.Free()
	ce, err := e.Kernel("spn_cross_entropy")
	if err != nil {
		t.Fatal(err)
	}
	mean, err := e.Kernel("spn_mean_loss")
	if err != nil {
		t.Fatal(err)
	}

	gr := G.NewGraph()
	x := G.NewMatrix(gr, G.Float32, G.WithShape(g, c), G.WithName("x"), G.WithValue(xd))
	w := G.NewMatrix(gr, G.Float32, G.WithShape(g, c), G.WithName("w"), G.WithValue(wd))
	z := G.Must(G.Add(x, w))
	logits := G.Must(G.Add(z, x))
	cost := G.Must(G.ApplyOp(&ceOp{e: e, y: yb, g: g, c: c, ce: ce, mean: mean}, logits))
	grads, err := G.Grad(cost, x, w)
	if err != nil {
		t.Fatal(err)
	}
	var loss G.Value
	G.Read(cost, &loss)
	vm := G.NewTapeMachine(gr, G.WithEngine(e))
	defer vm.Close()
	for run := 0; run < 2; run++ { // a second run reuses the machine
		if err := vm.RunAll(); err != nil {
			t.Fatal(err)
		}
		// The CPU reference.
		wantLogits := make([]float32, g*c)
		for i := range wantLogits {
			wantLogits[i] = (xv[i] + wv[i]) + xv[i]
		}
		dz := make([]float32, g*c)
		wantLoss := kernels.CrossEntropy(dz, 1, wantLogits, y, g, c)
		wantDx := make([]float32, g*c)
		for i := range dz {
			wantDx[i] = dz[i] + dz[i]
		}
		got, err := e.ToHost(logits.Value().(tensor.Tensor))
		if err != nil {
			t.Fatal(err)
		}
		kerntest.EqualBits(t, "logits", got, wantLogits)
		lv, ok := loss.Data().(float32)
		if !ok {
			t.Fatalf("loss holds %T, want float32", loss.Data())
		}
		if math.Abs(float64(lv)-wantLoss) > 1e-6 {
			t.Errorf("loss %v, want %v", lv, wantLoss)
		}
		for i, want := range [][]float32{wantDx, dz} {
			gv, ok := grads[i].Value().(tensor.Tensor)
			if !ok {
				t.Fatalf("gradient %d holds %T", i, grads[i].Value())
			}
			if gv.Engine() != e {
				t.Errorf("gradient %d has engine %T, want the device engine", i, gv.Engine())
			}
			got, err := e.ToHost(gv)
			if err != nil {
				t.Fatal(err)
			}
			kerntest.EqualBits(t, fmt.Sprintf("gradient of %s", []string{"x", "w"}[i]), got, want)
		}
		vm.Reset()
		if err := e.Reset(); err != nil {
			t.Fatal(err)
		}
		if blocks, _ := e.Live(); blocks != 2 {
			t.Errorf("%d device blocks after Reset, want the 2 inputs", blocks)
		}
	}
}

// TestView makes tensors over the arrays of a cuda.Pack: they read the
// packed values, Reset forgets them without freeing the pack's buffer,
// and a view of another shape or type is refused.
func TestView(t *testing.T) {
	e := enginetest.Emulated(t)
	x, y := values(6, 1), values(4, 2)
	var pk cuda.Pack
	var xb, yb, ib *cuda.Buffer
	cuda.Put(&pk, &xb, x)
	cuda.Put(&pk, &ib, []int32{1, 2})
	cuda.Put(&pk, &yb, y)
	buf, err := pk.Upload(e.Context(), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer buf.Free()
	blocks0, _ := e.Live()
	for i := 0; i < 2; i++ {
		xt, err := e.View(xb, 2, 3)
		if err != nil {
			t.Fatal(err)
		}
		yt, err := e.View(yb, 4)
		if err != nil {
			t.Fatal(err)
		}
		sum, err := e.Add(xt, xt)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			what string
			t    tensor.Tensor
			want []float32
		}{{"x", xt, x}, {"y", yt, y}, {"x + x", sum, nil}} {
			got, err := e.ToHost(c.t)
			if err != nil {
				t.Fatal(err)
			}
			want := c.want
			if want == nil {
				for _, v := range x {
					want = append(want, v+v)
				}
			}
			kerntest.EqualBits(t, c.what, got, want)
		}
		if err := e.Reset(); err != nil {
			t.Fatal(err)
		}
		if blocks, _ := e.Live(); blocks != blocks0 {
			t.Errorf("%d device blocks after Reset, want %d", blocks, blocks0)
		}
	}
	got := make([]float32, len(y))
	if err := cuda.Download(got, yb); err != nil {
		t.Fatalf("the packed buffer after Reset: %v", err)
	}
	kerntest.EqualBits(t, "y after Reset", got, y)
	for _, c := range []struct {
		b     *cuda.Buffer
		shape []int
	}{{xb, []int{7}}, {ib, []int{2}}, {nil, []int{1}}} {
		if _, err := e.View(c.b, c.shape...); err == nil {
			t.Errorf("a view of shape %v over %v: no error", c.shape, c.b)
		}
	}
}

// TestArena checks the engine's scratch memory on the emulated device:
// a first run allocates its values one by one and Reset frees them and
// makes an arena as large as the run asked for (rounded up to a
// quarter-power of two); runs that fit it make no driver call; a larger
// run allocates what does not fit, and Reset grows the arena; Trim frees
// it, between runs only, and Close leaves no device memory. Reset and
// Trim wait for the stream once before they free anything (the run's
// enqueued work may still use it), and not when they free nothing.
func TestArena(t *testing.T) {
	e := enginetest.Emulated(t)
	calls := func() cuda.Calls { return e.Context().Calls() }
	run := func(shapes ...[]int) {
		t.Helper()
		for _, s := range shapes {
			if _, err := e.Scratch(s...); err != nil {
				t.Fatal(err)
			}
		}
		if b, err := e.Scratch64(100); err != nil || b.Len() != 100 || b.Kind() != kern.F64Ptr {
			t.Fatalf("Scratch64(100) = %v, %v; want 100 doubles", b, err)
		}
		if b, err := e.Scratch32(5); err != nil || b.Len() != 5 {
			t.Fatalf("Scratch32(5) = %v, %v; want 5 values", b, err)
		}
		if err := e.Trim(); err == nil {
			t.Error("Trim during a run: no error")
		}
		if err := e.Reset(); err != nil {
			t.Fatal(err)
		}
	}
	c0 := calls()
	// Bytes carved at multiples of 256: 2560 from 0, 12 from 2560, 4000
	// from 2816, 800 from 6912 and 20 from 7936: 7956, whose arena is
	// 8192 bytes.
	run([]int{10, 64}, []int{3}, []int{1000})
	if c := calls().Sub(c0); c.Allocs != 6 || c.Frees != 5 || c.Syncs != 1 {
		t.Fatalf("a first run of 5 scratch values made %d allocations, %d frees and %d waits for the stream, want 6 (the values', the arena), 5 and 1 (before the frees)", c.Allocs, c.Frees, c.Syncs)
	}
	if got := e.Kept(); got != 8192 {
		t.Errorf("an arena of %d bytes, want 8192", got)
	}
	c1 := calls()
	run([]int{600}, []int{7}, []int{1000})
	if c := calls().Sub(c1); c.Allocs != 0 || c.Frees != 0 || c.Syncs != 0 {
		t.Errorf("a run that fits made %d allocations, %d frees and %d waits for the stream, want none", c.Allocs, c.Frees, c.Syncs)
	}
	if blocks, _ := e.Live(); blocks != 0 {
		t.Errorf("%d tensors live after Reset, want 0", blocks)
	}
	c2 := calls()
	// 2000 bytes from 0 fit; 8000 from 2048, 800 from 10240 and 20 from
	// 11264 do not: 11284 bytes, an arena of 12288.
	run([]int{500}, []int{2000})
	if c := calls().Sub(c2); c.Allocs != 4 || c.Frees != 4 || c.Syncs != 1 {
		t.Errorf("a larger run made %d allocations, %d frees and %d waits for the stream, want 4 (3 values, the arena), 4 (3 values, the arena) and 1 (before the frees)", c.Allocs, c.Frees, c.Syncs)
	}
	if got := e.Kept(); got != 12288 {
		t.Errorf("an arena of %d bytes, want 12288", got)
	}
	if m := e.Context().Memory(); m.Live != 12288 {
		t.Errorf("%d bytes of device memory live between runs, want the arena's 12288", m.Live)
	}
	c3 := calls()
	if err := e.Trim(); err != nil {
		t.Fatal(err)
	}
	if c := calls().Sub(c3); c.Syncs != 1 || c.Frees != 1 {
		t.Errorf("Trim made %d waits for the stream and %d frees, want 1 (before the free) and 1", c.Syncs, c.Frees)
	}
	if m := e.Context().Memory(); m.Live != 0 || e.Kept() != 0 {
		t.Errorf("%d bytes of device memory live after Trim (%d kept), want 0", m.Live, e.Kept())
	}
	// A run after Trim makes the arena again; Close frees it, and a
	// tensor kept beside it.
	run([]int{600})
	if _, err := e.Tensor(10); err != nil {
		t.Fatal(err)
	}
	if e.Kept() == 0 {
		t.Fatal("no arena after a run that followed Trim")
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if m := e.Context().Memory(); m.Live != 0 {
		t.Errorf("%d bytes of device memory live after Close, want 0", m.Live)
	}
}

// TestSizeClass checks the arena's sizes: at least 256, else a
// quarter-power of two at least the size and less than 1.25 times it.
func TestSizeClass(t *testing.T) {
	for _, c := range []struct{ n, want int }{
		{1, 256}, {256, 256}, {257, 320}, {320, 320}, {321, 384}, {512, 512}, {513, 640}, {1000, 1024}, {1025, 1280}, {1 << 20, 1 << 20}, {1<<20 + 1, 1<<20 + 1<<18},
	} {
		if got := engine.SizeClass(c.n); got != c.want {
			t.Errorf("sizeClass(%d) = %d, want %d", c.n, got, c.want)
		}
	}
	for n := 257; n < 1<<16; n++ {
		if c := engine.SizeClass(n); c < n || 4*c >= 5*n+4 {
			t.Fatalf("sizeClass(%d) = %d: want at least %d and less than 1.25 times it", n, c, n)
		}
	}
}

// TestArenaOutOfMemory runs out of the emulated device's 64 KiB: a
// tensor that does not fit beside the idle arena frees the arena and is
// allocated; a scratch value larger than the device fails with an error
// that is cuda.ErrOutOfMemory and reports the device's memory; and the
// arena the failed run would need does not fit either, so Reset leaves
// none, and the runs after it still run.
func TestArenaOutOfMemory(t *testing.T) {
	lib := cudatest.Emulator(t)
	r, err := cuda.Probe(lib)
	if err != nil {
		t.Fatal(err)
	}
	e := enginetest.Open(t, r)
	lib.SetMemory(t, 64<<10)
	t.Cleanup(func() { lib.SetMemory(t, 0) })
	scratch := func(ns ...int) error {
		for _, n := range ns {
			if _, err := e.Scratch(n); err != nil {
				return err
			}
		}
		return nil
	}
	if err := scratch(4096, 4096, 4096); err != nil { // 48 KiB
		t.Fatal(err)
	}
	if err := e.Reset(); err != nil {
		t.Fatal(err)
	}
	if e.Kept() != 48<<10 {
		t.Fatalf("an arena of %d bytes, want 48 KiB", e.Kept())
	}
	x, err := e.Tensor(8192) // 32 KiB: fits once the arena is freed
	if err != nil {
		t.Fatalf("a tensor beside the idle arena: %v", err)
	}
	if e.Kept() != 0 {
		t.Errorf("an arena of %d bytes after running out of memory, want none", e.Kept())
	}
	if err := e.FreeTensor(x); err != nil {
		t.Fatal(err)
	}
	err = scratch(4096, 1<<20)
	if !errors.Is(err, cuda.ErrOutOfMemory) {
		t.Fatalf("4 MiB on a device of 64 KiB: %v, want an error that is cuda.ErrOutOfMemory", err)
	}
	// The error says what was asked for, what is free and what spn holds
	// (the run's 16 KiB): a model too large for the device, not a device
	// other processes fill.
	const want = "device engine: cuda: cuMemAlloc_v2 failed: CUDA_ERROR_OUT_OF_MEMORY (2) (4.0 MiB asked for on Fake GPU: 48.0 KiB free of 64.0 KiB, 16.0 KiB of it held by spn)"
	if err.Error() != want {
		t.Errorf("4 MiB on a device of 64 KiB:\n%v\nwant\n%s", err, want)
	}
	if err := e.Reset(); err != nil {
		t.Errorf("Reset after the failed run, whose arena does not fit: %v", err)
	}
	if m := e.Context().Memory(); e.Kept() != 0 || m.Live != 0 {
		t.Errorf("after the failed run: an arena of %d bytes, %d bytes live; want none", e.Kept(), m.Live)
	}
	if err := scratch(4096); err != nil {
		t.Errorf("a run after the failed one: %v", err)
	}
	if err := e.Reset(); err != nil {
		t.Fatal(err)
	}
}

// TestZeros checks the zeroed memory of a run: every value Zeros gives
// is zero even where an earlier run's values were, the requests of a run
// like the largest before it are served by one zeroing launch, and after
// two runs such a run allocates nothing.
func TestZeros(t *testing.T) {
	e := enginetest.Emulated(t)
	sizes := []int{300, 5, 1000, 64}
	run := func(i int) cuda.Calls {
		t.Helper()
		c0 := e.Context().Calls()
		for _, n := range sizes {
			z, err := e.Zeros(n)
			if err != nil {
				t.Fatal(err)
			}
			got := make([]float32, n)
			if err := cuda.Download(got, z); err != nil {
				t.Fatal(err)
			}
			for j, v := range got {
				if v != 0 || math.Signbit(float64(v)) {
					t.Fatalf("run %d: value %d of %d zeroed values is %v", i, j, n, v)
				}
			}
			// Dirty them, as an op adding into them does.
			if err := cuda.Upload(z, values(n, 9)); err != nil {
				t.Fatal(err)
			}
		}
		c := e.Context().Calls().Sub(c0)
		if err := e.Reset(); err != nil {
			t.Fatal(err)
		}
		return c
	}
	if c := run(0); c.Launches < 2 || c.Launches > len(sizes) {
		t.Errorf("a first run zeroed with %d launches, want one per chunk: 2 to %d", c.Launches, len(sizes))
	}
	for i := 1; i < 4; i++ {
		c := run(i)
		if c.Launches != 1 {
			t.Errorf("run %d zeroed with %d launches, want 1", i, c.Launches)
		}
		if i > 1 && c.Allocs != 0 {
			t.Errorf("run %d made %d allocations, want none", i, c.Allocs)
		}
	}
	if _, err := e.Zeros(0); err == nil {
		t.Error("Zeros(0) gave no error")
	}
}
