package engine

import (
	"errors"
	"fmt"
	"math"
	"math/bits"

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
	// borrowed memory (View, Alias) is another's: freeing it forgets it.
	borrowed bool
	// block, for scratch memory, is the pooled allocation buf is the
	// first values of: freeing the memory returns block to the pool.
	block *cuda.Buffer
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
	// pool holds the allocations of freed scratch memory by size class
	// (sizeClass), most recently freed last, for the next run's scratch
	// memory of that class, or of a class down to half its size when
	// that one's are in use (take): a caching allocator, as PyTorch's.
	// cuMemAlloc and cuMemFree are synchronous driver calls (cuMemFree
	// waits for the device), and a run's scratch values are the same
	// sizes from step to step, so after the first run of a batch shape a
	// run makes no allocation. Trim frees the pool.
	pool map[poolKey][]*cuda.Buffer
	// scratch is the run's scratch memory in the order it was made, which
	// Reset frees in that order (into the pool: which allocation the next
	// run's tensors get does not depend on a map's order).
	scratch []*Memory
	// runBufs are the run's pooled buffers that are not tensors
	// (Scratch32's, Scratch64's, Zeros' chunks), which Reset returns to
	// the pool.
	runBufs []*cuda.Buffer
	// zeros is the run's zeroed chunk Zeros carves from (nil: none yet),
	// zeroOff the values of it taken; zeroRun counts the values Zeros
	// gave this run, zeroMost the most it gave a run.
	zeros                      *cuda.Buffer
	zeroOff, zeroRun, zeroMost int
}

// poolKey is a pool's class: the kind of the values and their number.
type poolKey struct {
	kind  kern.Kind
	class int
}

var (
	_ tensor.Engine = (*Engine)(nil)
	_ tensor.Adder  = (*Engine)(nil)
)

// New returns the engine of ctx, launching the kernels of mod (a module
// of models/cuda/kern's Source).
func New(ctx *cuda.Context, mod *cuda.Module) (*Engine, error) {
	e := &Engine{ctx: ctx, mod: mod, ks: map[string]*cuda.Kernel{}, next: addrBase, mem: map[uintptr]*Memory{}, pool: map[poolKey][]*cuda.Buffer{}}
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
		block, err := take[float32](e, sizeClass(n))
		if err != nil {
			return nil, fmt.Errorf("device engine: %w", err)
		}
		m.block = block
		m.buf, _ = block.Slice(0, n) // n ≤ the class
	} else {
		buf, err := allocate[float32](e, n)
		if err != nil {
			return nil, fmt.Errorf("device engine: %w", err)
		}
		m.buf = buf
	}
	e.next += (uintptr(size) + addrAlign - 1) / addrAlign * addrAlign
	e.register(m)
	return m, nil
}

// take returns an allocation of at least class values of type T: from
// the pool, the most recently freed one of the smallest class from class
// up to twice it that holds one, else a new one of class values. Taking
// a larger class when class's own are all in use lets the scratch of a
// batch larger than the last reuse what a smaller batch left in the
// pool, instead of every class that the batches' sizes reach holding
// allocations of its own (a caller uses the first values it asked for;
// give returns the allocation to its own class).
func take[T float32 | float64](e *Engine, class int) (*cuda.Buffer, error) {
	var zero T
	kind := kern.F32Ptr
	if _, ok := any(zero).(float64); ok {
		kind = kern.F64Ptr
	}
	for c := class; c <= 2*class; c = sizeClass(c + 1) {
		key := poolKey{kind, c}
		if free := e.pool[key]; len(free) > 0 {
			b := free[len(free)-1]
			e.pool[key] = free[:len(free)-1]
			return b, nil
		}
	}
	return allocate[T](e, class)
}

// give returns b, an allocation of the pool's classes, to the pool.
func (e *Engine) give(b *cuda.Buffer) {
	key := poolKey{b.Kind(), b.Len()}
	e.pool[key] = append(e.pool[key], b)
}

// allocate allocates n values on the device; when the device is out of
// memory and the pool holds allocations, it frees them and tries again.
func allocate[T float32 | float64](e *Engine, n int) (*cuda.Buffer, error) {
	b, err := cuda.Alloc[T](e.ctx, n)
	if err == nil || !errors.Is(err, cuda.ErrOutOfMemory) {
		return b, err
	}
	if blocks, _ := e.Pooled(); blocks == 0 {
		return nil, err
	}
	if terr := e.Trim(); terr != nil {
		return nil, errors.Join(err, terr)
	}
	return cuda.Alloc[T](e.ctx, n)
}

// Scratch64 returns a float64 device buffer of at least n values (not
// initialised; its first n values are the op's) that Reset gives back:
// a device op's partial sums, which live for one run.
func (e *Engine) Scratch64(n int) (*cuda.Buffer, error) { return scratchBuffer[float64](e, n) }

// Scratch32 returns a float32 device buffer of n values (not
// initialised) that Reset gives back: the temporary memory of a device
// op's math, which lives for one run. Unlike Scratch it makes no tensor
// (Gorgonia never sees it), which spares the host the tensor's making
// and the engine's bookkeeping of it.
func (e *Engine) Scratch32(n int) (*cuda.Buffer, error) {
	b, err := scratchBuffer[float32](e, n)
	if err != nil {
		return nil, err
	}
	return b.Slice(0, n)
}

// scratchBuffer takes a pooled buffer of at least n values of T for the
// run (runBufs, which Reset returns to the pool).
func scratchBuffer[T float32 | float64](e *Engine, n int) (*cuda.Buffer, error) {
	if n < 1 {
		return nil, fmt.Errorf("device engine: a scratch buffer of %d values", n)
	}
	b, err := take[T](e, sizeClass(n))
	if err != nil {
		return nil, fmt.Errorf("device engine: %w", err)
	}
	e.runBufs = append(e.runBufs, b)
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
		b, err := take[float32](e, sizeClass(max(n, e.zeroMost-e.zeroRun)))
		if err != nil {
			return nil, fmt.Errorf("device engine: %w", err)
		}
		e.runBufs = append(e.runBufs, b)
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

// sizeClass is the number of values of the pooled allocation that holds
// n: at least 256 values (1 KiB), else n rounded up to a quarter-power
// of two (2^e, 1.25·2^e, 1.5·2^e, 1.75·2^e), which wastes less than a
// fifth and lets the scratch of batches of different sizes share
// allocations.
func sizeClass(n int) int {
	const least = 256
	if n <= least {
		return least
	}
	step := 1 << (bits.Len(uint(n-1)) - 3) // a quarter of the power of two below n
	return (n + step - 1) / step * step
}

// Trim frees the allocations the pool holds (those of freed scratch
// memory): device memory the engine keeps for its next runs.
func (e *Engine) Trim() error {
	var errs []error
	for key, free := range e.pool {
		for _, b := range free {
			errs = append(errs, b.Free())
		}
		delete(e.pool, key)
	}
	return errors.Join(errs...)
}

// Pooled returns the number of allocations the pool holds and their
// bytes: device memory that is neither a tensor's nor free.
func (e *Engine) Pooled() (blocks int, bytes int64) {
	for key, free := range e.pool {
		size := int64(4)
		if key.kind == kern.F64Ptr {
			size = 8
		}
		blocks += len(free)
		bytes += int64(len(free)) * int64(key.class) * size
	}
	return blocks, bytes
}

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
	switch {
	case m.borrowed:
		return nil
	case m.block != nil:
		e.give(m.block)
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

// Reset frees every scratch tensor (Scratch, and the results of Add and
// the built-ins) into the pool, for the next run.
func (e *Engine) Reset() error {
	for _, b := range e.runBufs {
		e.give(b)
	}
	e.runBufs = e.runBufs[:0]
	e.zeroMost = max(e.zeroMost, e.zeroRun)
	e.zeros, e.zeroOff, e.zeroRun = nil, 0, 0
	var errs []error
	for _, m := range e.scratch {
		if _, live := e.mem[m.addr]; live { // not freed during the run
			errs = append(errs, e.Free(m, int64(m.size)))
		}
	}
	clear(e.scratch)
	e.scratch = e.scratch[:0]
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

// Close frees all the engine's memory, the pool's and its cuBLAS handle.
func (e *Engine) Close() error {
	var errs []error
	if e.blas != nil {
		errs = append(errs, e.blas.Destroy())
		e.blas = nil
	}
	for _, m := range e.mem {
		errs = append(errs, e.Free(m, int64(m.size)))
	}
	e.scratch = nil
	for _, b := range e.runBufs {
		e.give(b)
	}
	e.runBufs, e.zeros = nil, nil
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
