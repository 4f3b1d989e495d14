package cuda

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"
	"unsafe"

	"github.com/spn-project/spn/internal/units"
	"github.com/spn-project/spn/models/cuda/kern"
)

// computeAPI holds the driver entry points a Context uses. CUdeviceptr is
// an unsigned 64-bit integer; CUcontext, CUmodule, CUfunction, CUevent
// and CUstream are pointers, held as uintptr (spn's work goes on each
// Context's own stream); CUdevice is an int.
type computeAPI struct {
	primaryCtxRetain  func(ctx *uintptr, dev int32) int32
	primaryCtxRelease func(dev int32) int32
	ctxSetCurrent     uintptr // cuCtxSetCurrent(CUcontext): called by callC
	// streamCreate is cuStreamCreate(stream, flags), streamDestroy
	// cuStreamDestroy_v2 and streamSynchronize cuStreamSynchronize: a
	// Context's stream.
	streamCreate      func(s *uintptr, flags uint32) int32
	streamDestroy     func(s uintptr) int32
	streamSynchronize func(s uintptr) int32
	memAlloc          func(p *uint64, bytes uint64) int32
	memFree           func(p uint64) int32
	// memGetInfo is cuMemGetInfo_v2(free, total): the device's free and
	// total memory, for the error of a failed allocation.
	memGetInfo func(free, total *uint64) int32
	memcpyHtoD func(dst uint64, src unsafe.Pointer, bytes uint64) int32
	memcpyDtoH func(dst unsafe.Pointer, src uint64, bytes uint64) int32
	// memAllocHost is cuMemAllocHost_v2 (page-locked host memory for
	// the context; cuMemHostAlloc with no flags is the same), memFreeHost
	// cuMemFreeHost.
	memAllocHost func(p *unsafe.Pointer, bytes uint64) int32
	memFreeHost  func(p unsafe.Pointer) int32
	// memcpyHtoDAsync is cuMemcpyHtoDAsync_v2(dst, src, bytes, stream)
	// and memcpyDtoHAsync cuMemcpyDtoHAsync_v2(dst, src, bytes, stream),
	// called by callC: the copies ordered on a stream, which return
	// before they run when the host memory is page-locked, made every
	// step.
	memcpyHtoDAsync uintptr
	memcpyDtoHAsync uintptr
	// ev are the event entry points, which the asynchronous copies' users
	// (Event) and profiles share.
	ev                eventAPI
	moduleLoadData    func(m *uintptr, image *byte) int32
	moduleGetFunction func(f *uintptr, m uintptr, name *byte) int32
	moduleUnload      func(m uintptr) int32
	// launchKernel is cuLaunchKernel(f, gx, gy, gz, bx, by, bz, shared,
	// stream, params, extra), called by callC.
	launchKernel uintptr
}

func (a *computeAPI) bindings() []binding {
	return append([]binding{
		{"cuDevicePrimaryCtxRetain", &a.primaryCtxRetain},
		{"cuDevicePrimaryCtxRelease_v2", &a.primaryCtxRelease},
		{"cuCtxSetCurrent", &a.ctxSetCurrent},
		{"cuStreamCreate", &a.streamCreate},
		{"cuStreamDestroy_v2", &a.streamDestroy},
		{"cuStreamSynchronize", &a.streamSynchronize},
		{"cuMemAlloc_v2", &a.memAlloc},
		{"cuMemFree_v2", &a.memFree},
		{"cuMemGetInfo_v2", &a.memGetInfo},
		{"cuMemcpyHtoD_v2", &a.memcpyHtoD},
		{"cuMemcpyDtoH_v2", &a.memcpyDtoH},
		{"cuMemAllocHost_v2", &a.memAllocHost},
		{"cuMemFreeHost", &a.memFreeHost},
		{"cuMemcpyHtoDAsync_v2", &a.memcpyHtoDAsync},
		{"cuMemcpyDtoHAsync_v2", &a.memcpyDtoHAsync},
		{"cuModuleLoadData", &a.moduleLoadData},
		{"cuModuleGetFunction", &a.moduleGetFunction},
		{"cuModuleUnload", &a.moduleUnload},
		{"cuLaunchKernel", &a.launchKernel},
	}, a.ev.bindings()...)
}

// Context is the primary CUDA context of one device, with the buffers,
// modules and cuBLAS handles made in it.
//
// A CUDA context is current per OS thread. Every method of a Context and
// of what it made locks the calling goroutine to its OS thread, makes the
// context current there (cuCtxSetCurrent) and unlocks after the call, so
// a Context may be used from any goroutine; its methods are serialised by
// a mutex.
//
// Each Context has a stream of its own (cuStreamCreate), on which its
// launches, cuBLAS products, asynchronous copies and events go in the
// order they are made: two Contexts of one device (two train stages
// sharing a GPU, spn run --stages-per-gpu) enqueue on two streams, whose
// kernels the GPU may run side by side, and each waits for its own work
// only. Launches and cuBLAS calls are asynchronous: Synchronize waits
// for them and reports a failure of theirs, and the copies to and from
// the host (Upload, Download, Pack.Upload) wait for the work before
// them. The asynchronous copies (DownloadAsync, Pack.UploadAsync)
// between device memory and page-locked host memory (AllocHost) do not:
// they run in stream order, after the work enqueued before them and
// before the work enqueued after them, and the host learns that one has
// run by waiting for an Event recorded after it.
//
// The stream is a blocking one (flags 0): the synchronous copies and
// cuMemFree, which run on the legacy default stream, wait for the work
// of every blocking stream of the primary context before them, and the
// work enqueued after them waits for them, so they stay in order with
// the Context's work as on one stream (and, while they run, hold up
// the other Contexts of the device too).
type Context struct {
	Device Device

	mu  sync.Mutex
	rt  *Runtime
	api *computeAPI
	dev int32
	ctx uintptr
	// stream is the Context's stream (see the type's comment).
	stream uintptr
	closed bool
	seq    int
	live   map[resource]int // what the context made and has not released, by creation order
	// calls counts the driver and cuBLAS calls that cost the most.
	calls Calls
	// mem is the device memory allocated through the context.
	mem Memory
	// hosts are the live page-locked allocations (AllocHost), which an
	// asynchronous copy's host memory must lie in.
	hosts []*HostBuffer
	// prof is the profile in progress (nil: none), events the driver
	// events of profiles (nil until the first).
	prof   *profile
	events *eventPool
}

// Memory is the device memory a context has allocated (Alloc, and the
// buffers of Pack and NewBuffer), in bytes: what is allocated now and the
// most at any time. The driver's own use and cuBLAS's workspace are not
// in it.
type Memory struct {
	Live, Peak int64
}

// Memory returns the device memory the context has allocated.
func (c *Context) Memory() Memory {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mem
}

// Calls counts a context's calls into the driver and cuBLAS that cost
// the most: on a GPU a launch or a product costs microseconds of the
// host's time whatever its size, a synchronous copy waits for the
// device, and cuMemAlloc and cuMemFree are synchronous (cuMemFree waits
// for the device), as are cuMemAllocHost and cuMemFreeHost. A training
// step's counts say where its time goes when its kernels are small, and
// whether the host waits for the device in it (ToDevice, ToHost, Frees,
// Waits).
type Calls struct {
	// ToDevice counts cuMemcpyHtoD calls, ToHost cuMemcpyDtoH calls:
	// the synchronous copies, which wait for the work before them
	// (copies of no bytes are not made and not counted).
	ToDevice, ToHost int
	// ToDeviceAsync counts cuMemcpyHtoDAsync calls, ToHostAsync
	// cuMemcpyDtoHAsync calls: the copies from and to page-locked
	// memory that the host does not wait for (Pack.UploadAsync,
	// DownloadAsync).
	ToDeviceAsync, ToHostAsync int
	// Waits counts the host's waits for an event (Event.Wait,
	// cuEventSynchronize; a profile's are not counted), Syncs its waits
	// for the context's stream (Synchronize).
	Waits, Syncs int
	// Launches counts kernel launches (cuLaunchKernel), GEMMs cuBLAS
	// products (cublasSgemm; products of no values are not made).
	Launches, GEMMs int
	// Allocs counts cuMemAlloc calls, Frees cuMemFree calls.
	Allocs, Frees int
	// HostAllocs counts cuMemAllocHost calls, HostFrees cuMemFreeHost
	// calls (page-locked host memory, AllocHost).
	HostAllocs, HostFrees int
}

// Sub returns the calls of c not in since, an earlier count of the same
// context: the calls made in between.
func (c Calls) Sub(since Calls) Calls {
	return Calls{
		ToDevice: c.ToDevice - since.ToDevice, ToHost: c.ToHost - since.ToHost,
		ToDeviceAsync: c.ToDeviceAsync - since.ToDeviceAsync, ToHostAsync: c.ToHostAsync - since.ToHostAsync,
		Waits: c.Waits - since.Waits, Syncs: c.Syncs - since.Syncs,
		Launches: c.Launches - since.Launches, GEMMs: c.GEMMs - since.GEMMs,
		Allocs: c.Allocs - since.Allocs, Frees: c.Frees - since.Frees,
		HostAllocs: c.HostAllocs - since.HostAllocs, HostFrees: c.HostFrees - since.HostFrees,
	}
}

// Calls returns the calls the context has made so far.
func (c *Context) Calls() Calls {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls
}

// resource is what a Context releases on Close when its owner has not:
// release runs with the context current and its mutex held.
type resource interface{ release() error }

// errClosed is the error of a call on a closed context.
var errClosed = errors.New("cuda: the context is closed")

// NewContext retains the primary context of device ordinal: the one
// context the device's other users (cuBLAS, other libraries) share.
// Close releases it. It binds the driver's entry points a context uses
// (memory, copies, events, modules, launches) and fails naming the first
// the driver lacks.
func (r *Runtime) NewContext(ordinal int) (*Context, error) {
	d, err := r.Device(ordinal)
	if err != nil {
		return nil, err
	}
	api := &computeAPI{}
	if err := bindAll(r.driverLib, DriverLib, api.bindings()); err != nil {
		return nil, err
	}
	var dev int32
	if err := check("cuDeviceGet", r.d.cuDeviceGet(&dev, int32(ordinal))); err != nil {
		return nil, err
	}
	var ctx uintptr
	if err := check("cuDevicePrimaryCtxRetain", api.primaryCtxRetain(&ctx, dev)); err != nil {
		if h := d.modeHint(); h != "" {
			return nil, fmt.Errorf("%w (device %v): %s", err, d, h)
		}
		return nil, fmt.Errorf("%w (device %v)", err, d)
	}
	c := &Context{Device: d, rt: r, api: api, dev: dev, ctx: ctx, live: map[resource]int{}}
	err = c.do(func() error { return check("cuStreamCreate", c.api.streamCreate(&c.stream, 0)) })
	if err != nil {
		api.primaryCtxRelease(dev)
		return nil, fmt.Errorf("%w (device %v)", err, d)
	}
	return c, nil
}

// do runs f with the context current on the calling goroutine's OS
// thread, which stays locked to it until f returns.
func (c *Context) do(f func() error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return errClosed
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := check("cuCtxSetCurrent", callC(c.api.ctxSetCurrent, c.ctx)); err != nil {
		return err
	}
	return f()
}

// track records r as live (called inside do).
func (c *Context) track(r resource) { c.seq++; c.live[r] = c.seq }

// drop releases r for its owner (Free, Destroy, Unload) unless *done,
// which r's release sets, says it is released already. After Close,
// which released it, it does nothing.
func (c *Context) drop(r resource, done *bool) error {
	err := c.do(func() error {
		if *done {
			return nil
		}
		delete(c.live, r)
		return r.release()
	})
	if errors.Is(err, errClosed) {
		return nil
	}
	return err
}

// Synchronize waits until the device has finished the work enqueued on
// the Context's stream (cuStreamSynchronize), not other Contexts'; a
// failed launch or cuBLAS call is reported here.
func (c *Context) Synchronize() error {
	return c.do(func() error {
		c.calls.Syncs++
		return check("cuStreamSynchronize", c.api.streamSynchronize(c.stream))
	})
}

// Close releases what the context made and its owners did not (cuBLAS
// handles, modules, buffers, page-locked memory and events, newest
// first), then its stream and the primary context. Closing twice does
// nothing.
func (c *Context) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var errs []error
	if err := check("cuCtxSetCurrent", callC(c.api.ctxSetCurrent, c.ctx)); err != nil {
		errs = append(errs, err)
	} else {
		rs := make([]resource, 0, len(c.live))
		for r := range c.live {
			rs = append(rs, r)
		}
		slices.SortFunc(rs, func(a, b resource) int { return c.live[b] - c.live[a] })
		for _, r := range rs {
			errs = append(errs, r.release())
		}
		if c.events != nil {
			errs = append(errs, c.events.destroy())
		}
		errs = append(errs, check("cuStreamDestroy_v2", c.api.streamDestroy(c.stream)))
	}
	clear(c.live)
	errs = append(errs, check("cuDevicePrimaryCtxRelease_v2", c.api.primaryCtxRelease(c.dev)))
	return errors.Join(errs...)
}

// Elem is an element type a Buffer holds: float32, float64 or int32, the
// kernels' float*, double* and int* (kern.F32Ptr, F64Ptr, I32Ptr).
type Elem interface{ float32 | float64 | int32 }

// kindOf returns the kernel parameter kind of a pointer to T.
func kindOf[T Elem]() kern.Kind {
	var z T
	switch any(z).(type) {
	case float32:
		return kern.F32Ptr
	case float64:
		return kern.F64Ptr
	default:
		return kern.I32Ptr
	}
}

// sizeOf returns the size in bytes of the elements of a pointer kind.
func sizeOf(k kern.Kind) int {
	if k == kern.F64Ptr {
		return 8
	}
	return 4
}

// Buffer is device memory holding n values of one element type: an
// allocation of its own, or a view of part of another buffer's (a Pack's
// arrays), which lives as long as that buffer.
type Buffer struct {
	ctx   *Context
	ptr   uint64
	n     int
	kind  kern.Kind
	freed bool
	// of is the buffer a view is part of (nil for an allocation).
	of *Buffer
}

// Len returns the number of values the buffer holds.
func (b *Buffer) Len() int { return b.n }

// Kind returns the kernel parameter kind the buffer passes as.
func (b *Buffer) Kind() kern.Kind { return b.kind }

func (b *Buffer) String() string { return fmt.Sprintf("%s[%d]", b.kind.C(), b.n) }

// Slice returns a view of the n values of b from value off on: a Buffer
// that lives as long as b's memory does (freeing it does nothing).
func (b *Buffer) Slice(off, n int) (*Buffer, error) {
	if off < 0 || n < 0 || off+n > b.n {
		return nil, fmt.Errorf("cuda: values [%d, %d) of a buffer of %d", off, off+n, b.n)
	}
	of := b
	if b.of != nil {
		of = b.of
	}
	return &Buffer{ctx: b.ctx, ptr: b.ptr + uint64(off*sizeOf(b.kind)), n: n, kind: b.kind, of: of}, nil
}

// View returns a view of n values of type T from byte off of b's memory
// on (off a multiple of T's size), whatever b's own type: one allocation
// holding values of several types, as the device engine's arena does.
// It lives as long as b's memory does (freeing it does nothing).
func View[T Elem](b *Buffer, off, n int) (*Buffer, error) {
	k := kindOf[T]()
	size := sizeOf(k)
	if total := b.n * sizeOf(b.kind); off < 0 || n < 0 || off%size != 0 || off > total || n > (total-off)/size {
		return nil, fmt.Errorf("cuda: %d values of %s from byte %d of a buffer of %d bytes", n, k.C()[:len(k.C())-1], off, total)
	}
	of := b
	if b.of != nil {
		of = b.of
	}
	return &Buffer{ctx: b.ctx, ptr: b.ptr + uint64(off), n: n, kind: k, of: of}, nil
}

// Alloc allocates device memory for n values of type T. The memory is
// not initialised. A buffer of 0 values still holds one allocation (of
// one value), so that it never passes as a null pointer.
func Alloc[T Elem](c *Context, n int) (*Buffer, error) {
	k := kindOf[T]()
	if n < 0 || n > math.MaxInt64/8 {
		return nil, fmt.Errorf("cuda: cannot allocate %d values of %s", n, k.C()[:len(k.C())-1])
	}
	b := &Buffer{ctx: c, n: n, kind: k}
	err := c.do(func() error {
		c.calls.Allocs++
		if err := check("cuMemAlloc_v2", c.api.memAlloc(&b.ptr, uint64(b.bytes()))); err != nil {
			return fmt.Errorf("%w (%s)", err, c.allocReport(b.bytes()))
		}
		c.track(b)
		c.mem.Live += int64(b.bytes())
		c.mem.Peak = max(c.mem.Peak, c.mem.Live)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return b, nil
}

// allocReport describes, inside c.do, a failed allocation of n bytes:
// the bytes asked for, the device, and what cuMemGetInfo_v2 says of its
// memory with what this context holds of it, so that a reader tells a
// model too large for the device (spn holds most of it) from a device
// that other processes fill (spn holds little of it).
func (c *Context) allocReport(n int) string {
	s := fmt.Sprintf("%s asked for on %s", units.Bytes(int64(n)), c.Device.Name)
	var free, total uint64
	if c.api.memGetInfo == nil || c.api.memGetInfo(&free, &total) != 0 {
		return fmt.Sprintf("%s, of which spn holds %s", s, units.Bytes(c.mem.Live))
	}
	return fmt.Sprintf("%s: %s free of %s, %s of it held by spn", s, units.Bytes(int64(free)), units.Bytes(int64(total)), units.Bytes(c.mem.Live))
}

// NewBuffer allocates a buffer for src and copies src into it.
func NewBuffer[T Elem](c *Context, src []T) (*Buffer, error) {
	b, err := Alloc[T](c, len(src))
	if err != nil {
		return nil, err
	}
	if err := Upload(b, src); err != nil {
		return nil, errors.Join(err, b.Free())
	}
	return b, nil
}

// usable checks that b can be used in c as a kind k pointer of n values
// at least; it names the use in its error. It runs inside c.do.
func (b *Buffer) usable(c *Context, k kern.Kind, n int, use string) error {
	switch {
	case b.ctx != c:
		return fmt.Errorf("cuda: %s: the buffer belongs to another context", use)
	case b.freed || b.of != nil && b.of.freed:
		return fmt.Errorf("cuda: %s: the buffer is freed", use)
	case b.kind != k:
		return fmt.Errorf("cuda: %s: the buffer holds %s, want %s", use, b.kind.C(), k.C())
	case b.n < n:
		return fmt.Errorf("cuda: %s: the buffer holds %d values, want %d", use, b.n, n)
	}
	return nil
}

// Upload copies src into b, which must hold exactly len(src) values of
// type T. It waits for the work launched before it.
func Upload[T Elem](b *Buffer, src []T) error {
	return b.ctx.do(func() error {
		if err := b.usable(b.ctx, kindOf[T](), len(src), "copying to the device"); err != nil {
			return err
		}
		if len(src) != b.n {
			return fmt.Errorf("cuda: copying %d values into a buffer of %d", len(src), b.n)
		}
		if len(src) == 0 {
			return nil
		}
		b.ctx.calls.ToDevice++
		err := check("cuMemcpyHtoD_v2", b.ctx.api.memcpyHtoD(b.ptr, unsafe.Pointer(&src[0]), uint64(len(src)*sizeOf(b.kind))))
		runtime.KeepAlive(src)
		return err
	})
}

// Download copies b into dst, which must have room for exactly b's
// values. It waits for the work launched before it, so a failed launch
// is reported here too.
func Download[T Elem](dst []T, b *Buffer) error {
	return b.ctx.do(func() error {
		if err := fromDevice(b, dst); err != nil || len(dst) == 0 {
			return err
		}
		b.ctx.calls.ToHost++
		err := check("cuMemcpyDtoH_v2", b.ctx.api.memcpyDtoH(unsafe.Pointer(&dst[0]), b.ptr, uint64(len(dst)*sizeOf(b.kind))))
		runtime.KeepAlive(dst)
		return err
	})
}

// fromDevice checks a copy of b into dst (inside b.ctx.do): b usable as
// values of T, dst exactly as long.
func fromDevice[T Elem](b *Buffer, dst []T) error {
	if err := b.usable(b.ctx, kindOf[T](), len(dst), "copying from the device"); err != nil {
		return err
	}
	if len(dst) != b.n {
		return fmt.Errorf("cuda: copying a buffer of %d values into %d", b.n, len(dst))
	}
	return nil
}

// Free releases the buffer's memory. Freeing twice does nothing, and
// neither does freeing a view (the buffer it is part of owns the memory).
func (b *Buffer) Free() error {
	if b.of != nil {
		return nil
	}
	return b.ctx.drop(b, &b.freed)
}

// bytes is the size of b's allocation: a buffer of no values holds one.
func (b *Buffer) bytes() int { return max(b.n, 1) * sizeOf(b.kind) }

func (b *Buffer) release() error {
	b.freed = true
	b.ctx.mem.Live -= int64(b.bytes())
	b.ctx.calls.Frees++
	return check("cuMemFree_v2", b.ctx.api.memFree(b.ptr))
}
