package engine

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"unsafe"

	"gorgonia.org/tensor"

	"github.com/spn-project/spn/models/cuda"
	"github.com/spn-project/spn/models/cuda/kern"
)

// addrBase is the first address of the engine's range: above the 48-bit
// (and 57-bit) virtual addresses of x86-64 and arm64, so that a host
// dereference of a device tensor faults.
const addrBase uintptr = 0xD000_0000_0000_0000

// addrAlign is the spacing of the engine's addresses.
const addrAlign = 256

// Block is the number of threads per block of the engine's launches.
const Block = 256

// Memory is device memory of an Engine: a float32 cuda.Buffer behind an
// address of the engine's range (tensor.Memory).
type Memory struct {
	addr    uintptr
	size    uintptr
	buf     *cuda.Buffer
	scratch bool
	// borrowed memory (View, Alias) is another's, and scratch memory
	// the run's (the arena's, or a spill Reset frees): freeing either
	// forgets it.
	borrowed bool
}

// Uintptr implements tensor.Memory: the memory's address in the engine's
// range, never a host address.
func (m *Memory) Uintptr() uintptr { return m.addr }

// MemSize implements tensor.Memory.
func (m *Memory) MemSize() uintptr { return m.size }

// Buffer returns the device buffer.
func (m *Memory) Buffer() *cuda.Buffer { return m.buf }

// Engine is a tensor.Engine over the device memory of one cuda.Context.
// It is not safe for concurrent use.
type Engine struct {
	// PoisonScratch, a test aid, fills every new scratch tensor with NaN
	// (as an arena hands out stale buffers): a device op that leaves a
	// value of its output unset shows as a NaN.
	PoisonScratch bool

	ctx   *cuda.Context
	mod   *cuda.Module
	ks    map[string]*cuda.Kernel
	add   *cuda.Kernel // spn_bias_relu: y = x + b with one row and no ReLU
	fillK *cuda.Kernel // spn_fill
	blas  *cuda.BLAS   // made on first use
	next  uintptr
	mem   map[uintptr]*Memory
	// arena is the memory of the runs' scratch values (Scratch,
	// Scratch32, Scratch64, Zeros' chunks, the built-ins' results): one
	// allocation, from which a run carves its values one after another
	// in the order it asks for them, and which Reset gives back whole
	// for the next run to carve anew. used counts the bytes the run has
	// asked for so far. A value that does not fit is an allocation of
	// its own (spill), which Reset frees; Reset then makes the arena as
	// large as the largest run so far asked for (want, rounded up to a
	// quarter-power of two). So once the largest batch has run, a run
	// makes no cuMemAlloc or cuMemFree (synchronous calls; cuMemFree
	// waits for the device), and the device holds about one run's
	// scratch, not an allocation for every size the batches reached. A
	// value freed during the run (Free) keeps its bytes until Reset.
	arena      *cuda.Buffer
	used, want int
	spill      []*cuda.Buffer
	// scratch is the run's scratch memory, which Reset forgets.
	scratch []*Memory
	// zeros is the run's zeroed chunk Zeros carves from (nil: none yet),
	// zeroOff the values of it taken; zeroRun counts the values Zeros
	// gave this run, zeroMost the most it gave a run.
	zeros                      *cuda.Buffer
	zeroOff, zeroRun, zeroMost int
}

var (
	_ tensor.Engine = (*Engine)(nil)
	_ tensor.Adder  = (*Engine)(nil)
)

// New returns the engine of ctx, launching the kernels of mod (a module
// of models/cuda/kern's Source).
func New(ctx *cuda.Context, mod *cuda.Module) (*Engine, error) {
	e := &Engine{ctx: ctx, mod: mod, ks: map[string]*cuda.Kernel{}, next: addrBase, mem: map[uintptr]*Memory{}}
	var err error
	if e.add, err = e.Kernel("spn_bias_relu"); err != nil {
		return nil, err
	}
	if e.fillK, err = e.Kernel("spn_fill"); err != nil {
		return nil, err
	}
	return e, nil
}

// Kernel returns the entry point name of the engine's module (the device
// ops' kernels), found once.
func (e *Engine) Kernel(name string) (*cuda.Kernel, error) {
	if k, ok := e.ks[name]; ok {
		return k, nil
	}
	k, err := e.mod.Kernel(name)
	if err != nil {
		return nil, fmt.Errorf("device engine: %w", err)
	}
	e.ks[name] = k
	return k, nil
}

// Launch runs kernel name of the engine's module over at least threads
// threads (blocks of Block; the kernels return for indices past their
// size).
func (e *Engine) Launch(name string, threads int, args ...any) error {
	k, err := e.Kernel(name)
	if err != nil {
		return err
	}
	if err := k.Launch((max(threads, 1)+Block-1)/Block, Block, args...); err != nil {
		return fmt.Errorf("device engine: %w", err)
	}
	return nil
}

// BLAS returns the engine's cuBLAS handle, made on first use (Close
// destroys it).
func (e *Engine) BLAS() (*cuda.BLAS, error) {
	if e.blas == nil {
		b, err := e.ctx.NewBLAS()
		if err != nil {
			return nil, fmt.Errorf("device engine: %w", err)
		}
		e.blas = b
	}
	return e.blas, nil
}

// Context returns the engine's context.
func (e *Engine) Context() *cuda.Context { return e.ctx }

// AllocAccessible implements tensor.Engine: device memory is not host
// memory.
func (e *Engine) AllocAccessible() bool { return false }

// Alloc implements tensor.Engine: size bytes of float32 values (size a
// positive multiple of 4), scratch memory that Reset frees. gorgonia/tensor
// calls it for the result of a built-in that allocates before it calls
// the engine (MatMul).
func (e *Engine) Alloc(size int64) (tensor.Memory, error) {
	m, err := e.alloc(size, true)
	if err != nil {
		return nil, err
	}
	return m, nil
}

func (e *Engine) alloc(size int64, scratch bool) (*Memory, error) {
	if size <= 0 || size%4 != 0 {
		return nil, fmt.Errorf("device engine: cannot allocate %d bytes: want a positive number of float32 values", size)
	}
	n := int(size / 4)
	m := &Memory{addr: e.next, size: uintptr(size), scratch: scratch}
	if scratch {
		buf, err := carve[float32](e, n)
		if err != nil {
			return nil, fmt.Errorf("device engine: %w", err)
		}
		m.buf = buf
	} else {
		buf, err := e.allocate(n)
		if err != nil {
			return nil, fmt.Errorf("device engine: %w", err)
		}
		m.buf = buf
	}
	e.next += (uintptr(size) + addrAlign - 1) / addrAlign * addrAlign
	e.register(m)
	return m, nil
}

// arenaAlign is the alignment, in bytes, of the values carved from the
// arena: cuMemAlloc's, which cuBLAS and coalesced loads want.
const arenaAlign = 256

// carve returns n values of type T of the run's scratch memory: the
// arena's next bytes, or an allocation of its own where the arena is
// too small (see Engine.arena).
func carve[T float32 | float64](e *Engine, n int) (*cuda.Buffer, error) {
	var zero T
	off := (e.used + arenaAlign - 1) / arenaAlign * arenaAlign
	e.used = off + max(n, 1)*int(unsafe.Sizeof(zero))
	if e.arena != nil && e.used <= e.arenaBytes() {
		return cuda.View[T](e.arena, off, n)
	}
	b, err := cuda.Alloc[T](e.ctx, n)
	if err != nil {
		return nil, err
	}
	e.spill = append(e.spill, b)
	return b, nil
}

// arenaBytes is the arena's size (0 without one).
func (e *Engine) arenaBytes() int {
	if e.arena == nil {
		return 0
	}
	return 4 * e.arena.Len()
}

// allocate allocates n float32 values on the device, memory of their
// own (a kept tensor's); when the device is out of memory and the arena
// is idle (between runs), it frees the arena and tries again.
func (e *Engine) allocate(n int) (*cuda.Buffer, error) {
	b, err := cuda.Alloc[float32](e.ctx, n)
	if err == nil || !errors.Is(err, cuda.ErrOutOfMemory) || e.arena == nil || e.used > 0 {
		return b, err
	}
	if terr := e.Trim(); terr != nil {
		return nil, errors.Join(err, terr)
	}
	return cuda.Alloc[float32](e.ctx, n)
}

// Scratch64 returns a float64 device buffer of n values (not
// initialised) that Reset gives back: a device op's partial sums, which
// live for one run.
func (e *Engine) Scratch64(n int) (*cuda.Buffer, error) { return scratchBuffer[float64](e, n) }

// Scratch32 returns a float32 device buffer of n values (not
// initialised) that Reset gives back: the temporary memory of a device
// op's math, which lives for one run. Unlike Scratch it makes no tensor
// (Gorgonia never sees it), which spares the host the tensor's making
// and the engine's bookkeeping of it.
func (e *Engine) Scratch32(n int) (*cuda.Buffer, error) { return scratchBuffer[float32](e, n) }

// scratchBuffer returns n values of T of the run's scratch memory.
func scratchBuffer[T float32 | float64](e *Engine, n int) (*cuda.Buffer, error) {
	if n < 1 {
		return nil, fmt.Errorf("device engine: a scratch buffer of %d values", n)
	}
	b, err := carve[T](e, n)
	if err != nil {
		return nil, fmt.Errorf("device engine: %w", err)
	}
	return b, nil
}

// Zeros returns n float32 values of device memory set to zero, valid
// until Reset: the gradients a backward op adds to. They are carved from
// a chunk zeroed by one launch, as large as the rest of the largest run
// so far needs, so that a run like an earlier one zeroes once.
func (e *Engine) Zeros(n int) (*cuda.Buffer, error) {
	if n < 1 {
		return nil, fmt.Errorf("device engine: %d zeroed values", n)
	}
	if e.zeros == nil || e.zeroOff+n > e.zeros.Len() {
		// Rounded up, so that a run a little larger than the largest
		// before it still zeroes once.
		b, err := carve[float32](e, sizeClass(max(n, e.zeroMost-e.zeroRun)))
		if err != nil {
			return nil, fmt.Errorf("device engine: %w", err)
		}
		if err := e.fill(b, 0); err != nil {
			return nil, err
		}
		e.zeros, e.zeroOff = b, 0
	}
	z, err := e.zeros.Slice(e.zeroOff, n)
	if err != nil {
		return nil, err
	}
	e.zeroOff += n
	e.zeroRun += n
	return z, nil
}

// sizeClass is n rounded up to a quarter-power of two (2^e, 1.25·2^e,
// 1.5·2^e, 1.75·2^e), at least 256, which adds less than a quarter: the
// arena's bytes for runs that asked for n bytes, and a zero chunk's
// values for n values, with room to spare for a somewhat larger run.
func sizeClass(n int) int {
	const least = 256
	if n <= least {
		return least
	}
	step := 1 << (bits.Len(uint(n-1)) - 3) // a quarter of the power of two below n
	return (n + step - 1) / step * step
}

// Trim frees the arena, the device memory the engine keeps for its next
// runs; between runs only (after Reset), as the run's values are in it.
// It waits for the work enqueued on the stream first (Synchronize), which
// may still use the arena.
func (e *Engine) Trim() error {
	if e.used > 0 {
		return errors.New("device engine: Trim during a run")
	}
	if e.arena == nil {
		return nil
	}
	// The work enqueued before may still read and write the arena: it is
	// freed once the stream has run it (cuMemFree is not relied on to
	// wait for it).
	if err := e.ctx.Synchronize(); err != nil {
		return err
	}
	return e.freeArena()
}

// freeArena frees the arena, once the stream has run the work that uses
// it.
func (e *Engine) freeArena() error {
	if e.arena == nil {
		return nil
	}
	err := e.arena.Free()
	e.arena = nil
	return err
}

// Kept returns the bytes of device memory the engine keeps for its runs'
// scratch values (the arena): neither a tensor's nor free.
func (e *Engine) Kept() int64 { return int64(e.arenaBytes()) }

// memory returns the engine's memory at address addr.
func (e *Engine) memory(addr uintptr, what string) (*Memory, error) {
	m, ok := e.mem[addr]
	if !ok {
		return nil, fmt.Errorf("device engine: %s at %#x is not device memory of this engine", what, addr)
	}
	return m, nil
}

// Free implements tensor.Engine.
func (e *Engine) Free(mem tensor.Memory, size int64) error {
	m, err := e.memory(mem.Uintptr(), "freed memory")
	if err != nil {
		return err
	}
	if int64(m.size) != size {
		return fmt.Errorf("device engine: freeing %d bytes of a block of %d", size, m.size)
	}
	delete(e.mem, m.addr)
	if m.borrowed || m.scratch {
		return nil
	}
	return m.buf.Free()
}

// Memset implements tensor.Engine for a float32 value (on the device).
func (e *Engine) Memset(mem tensor.Memory, val interface{}) error {
	v, ok := val.(float32)
	if !ok {
		return fmt.Errorf("device engine: memset with %T, want float32", val)
	}
	m, err := e.memory(mem.Uintptr(), "memset's memory")
	if err != nil {
		return err
	}
	return e.fill(m.buf, v)
}

// Fill sets every value of t, a tensor of this engine, to v.
func (e *Engine) Fill(t tensor.Tensor, v float32) error {
	b, err := e.Buffer(t)
	if err != nil {
		return err
	}
	return e.fill(b, v)
}

func (e *Engine) fill(b *cuda.Buffer, v float32) error {
	n := b.Len()
	if err := e.fillK.Launch((n+Block-1)/Block, Block, b, v, n); err != nil {
		return fmt.Errorf("device engine: %w", err)
	}
	return nil
}

// Memclr implements tensor.Engine (tensor.Engine gives it no error
// return: a failure shows at the next copy or Synchronize of the
// context, or not at all for memory that is not the engine's).
func (e *Engine) Memclr(mem tensor.Memory) { _ = e.Memset(mem, float32(0)) }

// Memcpy implements tensor.Engine by refusing: the driver binding has no
// device-to-device copy, and a TapeMachine run of the spn graph does not
// copy values.
func (e *Engine) Memcpy(dst, src tensor.Memory) error {
	return errors.New("device engine: no device-to-device copy (Memcpy)")
}

// Accessible implements tensor.Engine by refusing: a host view of device
// memory is what the engine exists to prevent.
func (e *Engine) Accessible(mem tensor.Memory) (tensor.Memory, error) {
	return nil, errors.New("device engine: device memory has no host view (use ToHost)")
}

// WorksWith implements tensor.Engine: contiguous row-major data.
func (e *Engine) WorksWith(order tensor.DataOrder) bool {
	return order.IsRowMajor() && order.IsContiguous() && !order.IsTransposed()
}

// dense wraps m as a float32 tensor of shape.
func (e *Engine) dense(m *Memory, shape []int) *tensor.Dense {
	return tensor.New(tensor.Of(tensor.Float32), tensor.WithShape(shape...),
		tensor.FromMemory(m.addr, m.size), tensor.WithEngine(e))
}

func size(shape []int) (int, error) {
	n := 1
	for _, s := range shape {
		if s < 1 {
			return 0, fmt.Errorf("device engine: shape %v has an empty dimension", shape)
		}
		n *= s
	}
	return n, nil
}

// Tensor returns a new float32 device tensor of shape (values not
// initialised), kept until Free or Close.
func (e *Engine) Tensor(shape ...int) (*tensor.Dense, error) { return e.tensor(false, shape) }

// Scratch returns a new float32 device tensor of shape (values not
// initialised) that Reset frees: the memory of one run's values.
func (e *Engine) Scratch(shape ...int) (*tensor.Dense, error) { return e.tensor(true, shape) }

func (e *Engine) tensor(scratch bool, shape []int) (*tensor.Dense, error) {
	n, err := size(shape)
	if err != nil {
		return nil, err
	}
	m, err := e.alloc(int64(n)*4, scratch)
	if err != nil {
		return nil, err
	}
	if scratch && e.PoisonScratch {
		if err := e.fill(m.buf, float32(math.NaN())); err != nil {
			return nil, err
		}
	}
	return e.dense(m, shape), nil
}

// View returns a device tensor of shape over b, float32 device memory
// the engine does not own (a view of a cuda.Pack's array): a scratch
// tensor, which Reset forgets without freeing b.
func (e *Engine) View(b *cuda.Buffer, shape ...int) (*tensor.Dense, error) {
	return e.view(b, true, shape)
}

// Alias returns a device tensor of shape over b, float32 device memory
// the engine does not own (a parameter's part of the device optimiser's
// one array of values), kept until Free or Close, which forget it
// without freeing b.
func (e *Engine) Alias(b *cuda.Buffer, shape ...int) (*tensor.Dense, error) {
	return e.view(b, false, shape)
}

func (e *Engine) view(b *cuda.Buffer, scratch bool, shape []int) (*tensor.Dense, error) {
	n, err := size(shape)
	if err != nil {
		return nil, err
	}
	if b == nil {
		return nil, errors.New("device engine: a view of no buffer")
	}
	if b.Kind() != kern.F32Ptr || b.Len() != n {
		return nil, fmt.Errorf("device engine: a float32 tensor of shape %v over %v", shape, b)
	}
	m := &Memory{addr: e.next, size: uintptr(n) * 4, buf: b, scratch: scratch, borrowed: true}
	e.next += (m.size + addrAlign - 1) / addrAlign * addrAlign
	e.register(m)
	return e.dense(m, shape), nil
}

// register records m as the engine's memory (and the run's, if scratch).
func (e *Engine) register(m *Memory) {
	e.mem[m.addr] = m
	if m.scratch {
		e.scratch = append(e.scratch, m)
	}
}

// FromHost returns a new device tensor of shape holding v (one
// host→device copy), kept until Free or Close.
func (e *Engine) FromHost(v []float32, shape ...int) (*tensor.Dense, error) {
	n, err := size(shape)
	if err != nil {
		return nil, err
	}
	if n != len(v) {
		return nil, fmt.Errorf("device engine: %d values for shape %v", len(v), shape)
	}
	t, err := e.Tensor(shape...)
	if err != nil {
		return nil, err
	}
	b, _ := e.Buffer(t)
	if err := cuda.Upload(b, v); err != nil {
		return nil, errors.Join(fmt.Errorf("device engine: %w", err), e.FreeTensor(t))
	}
	return t, nil
}

// Buffer returns the device buffer behind t, a tensor of this engine.
func (e *Engine) Buffer(t tensor.Tensor) (*cuda.Buffer, error) {
	if t == nil {
		return nil, errors.New("device engine: nil tensor")
	}
	if t.Dtype() != tensor.Float32 {
		return nil, fmt.Errorf("device engine: tensor of %v, want float32", t.Dtype())
	}
	m, ok := e.mem[t.Uintptr()]
	if !ok {
		_, err := e.memory(t.Uintptr(), fmt.Sprintf("tensor %v", t.Shape())) // the error, formatted only then
		return nil, err
	}
	if t.Shape().TotalSize() != m.buf.Len() {
		return nil, fmt.Errorf("device engine: tensor %v is a view of %d values (views are not supported)", t.Shape(), m.buf.Len())
	}
	return m.buf, nil
}

// ToHost copies the values of t, a tensor of this engine, to the host.
func (e *Engine) ToHost(t tensor.Tensor) ([]float32, error) {
	b, err := e.Buffer(t)
	if err != nil {
		return nil, err
	}
	v := make([]float32, b.Len())
	if err := cuda.Download(v, b); err != nil {
		return nil, fmt.Errorf("device engine: %w", err)
	}
	return v, nil
}

// FreeTensor frees the memory of t, a tensor of this engine.
func (e *Engine) FreeTensor(t tensor.Tensor) error {
	m, err := e.memory(t.Uintptr(), "freed tensor")
	if err != nil {
		return err
	}
	return e.Free(m, int64(m.size))
}

// Reset ends a run: it forgets the run's scratch tensors (Scratch, and
// the results of Add and the built-ins) and gives the arena back for the
// next run. If values of the run did not fit the arena, it frees them
// and makes the arena as large as the largest run so far asked for; if
// the device has no room for that, the next run allocates its values
// apart as this one did, and the Reset after it tries again. Before it
// frees anything it waits for the work enqueued on the stream
// (Synchronize): a run's steps are asynchronous, and their kernels may
// still use what it frees; a run that fits the arena frees nothing and
// does not wait.
func (e *Engine) Reset() error {
	e.zeroMost = max(e.zeroMost, e.zeroRun)
	e.zeros, e.zeroOff, e.zeroRun = nil, 0, 0
	for _, m := range e.scratch {
		delete(e.mem, m.addr) // whether or not it was freed during the run
	}
	clear(e.scratch)
	e.scratch = e.scratch[:0]
	e.want = max(e.want, e.used)
	e.used = 0
	var errs []error
	grow := e.want > e.arenaBytes()
	if len(e.spill) > 0 || grow && e.arena != nil {
		// The run's enqueued work may still use its values and the
		// arena: they are freed once the stream has run it (one wait
		// for both; cuMemFree is not relied on to wait for it).
		errs = append(errs, e.ctx.Synchronize())
	}
	for _, b := range e.spill {
		errs = append(errs, b.Free())
	}
	clear(e.spill)
	e.spill = e.spill[:0]
	if grow {
		errs = append(errs, e.freeArena())
		b, err := cuda.Alloc[float32](e.ctx, sizeClass(e.want)/4)
		switch {
		case err == nil:
			e.arena = b
		case !errors.Is(err, cuda.ErrOutOfMemory):
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Live returns the number of device blocks the engine holds and their
// bytes.
func (e *Engine) Live() (blocks int, bytes int64) {
	for _, m := range e.mem {
		blocks++
		bytes += int64(m.size)
	}
	return blocks, bytes
}

// Close frees all the engine's memory, the arena and its cuBLAS handle.
func (e *Engine) Close() error {
	var errs []error
	if e.blas != nil {
		errs = append(errs, e.blas.Destroy())
		e.blas = nil
	}
	for _, m := range e.mem {
		errs = append(errs, e.Free(m, int64(m.size)))
	}
	e.scratch, e.zeros, e.used = nil, nil, 0
	for _, b := range e.spill {
		errs = append(errs, b.Free())
	}
	e.spill = nil
	errs = append(errs, e.Trim())
	return errors.Join(errs...)
}

// Add implements tensor.Adder: a + b for float32 device tensors of equal
// shapes, into a new scratch tensor. The result is always fresh memory,
// whatever the options ask (UseUnsafe, WithReuse): Gorgonia uses the
// returned value, and no value a graph node is bound to is overwritten,
// so the gradient nodes' values are intact after a run.
func (e *Engine) Add(a, b tensor.Tensor, opts ...tensor.FuncOpt) (tensor.Tensor, error) {
	return e.elementwise("adding", a, b, func(yb, ab, bb *cuda.Buffer, n int) error {
		// spn_bias_relu over one row of n values without ReLU: y = a + b.
		return e.add.Launch((n+Block-1)/Block, Block, yb, ab, bb, 1, n, 0)
	})
}

// elementwise computes y = f(a, b) for float32 device tensors of equal
// shapes into a new scratch tensor: launch runs the kernel over the n
// values; what names the operation in errors.
func (e *Engine) elementwise(what string, a, b tensor.Tensor, launch func(yb, ab, bb *cuda.Buffer, n int) error) (tensor.Tensor, error) {
	if !a.Shape().Eq(b.Shape()) {
		return nil, fmt.Errorf("device engine: %s shapes %v and %v", what, a.Shape(), b.Shape())
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
	if err := launch(yb, ab, bb, ab.Len()); err != nil {
		return nil, fmt.Errorf("device engine: %s %v: %w", what, a.Shape(), err)
	}
	return y, nil
}

// AddScalar implements tensor.Adder by refusing: the spn graph adds no
// scalars to device tensors.
func (e *Engine) AddScalar(a tensor.Tensor, b interface{}, leftTensor bool, opts ...tensor.FuncOpt) (tensor.Tensor, error) {
	return nil, fmt.Errorf("device engine: adding a scalar to a device tensor %v is not supported", a.Shape())
}
