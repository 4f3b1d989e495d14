package cuda

import (
	"errors"
	"fmt"
	"slices"
	"unsafe"
)

// HostBuffer is page-locked ("pinned") host memory of a context: the
// host side of the asynchronous copies (DownloadAsync, Pack.UploadAsync),
// which the GPU's copy engine reads and writes directly, so that a copy
// enqueued on the stream returns at once. (With pageable host memory a
// host→device copy first waits for all the work enqueued before it, and
// a device→host copy returns only when it is done.) It comes from
// cuMemAllocHost_v2: spn needs none of cuMemHostAlloc's flags (one
// context, no mapping into the device's address space), and without
// flags the two are the same allocation. Allocating and freeing it are
// slow, synchronous driver calls, so it is allocated once and reused.
type HostBuffer struct {
	ctx   *Context
	ptr   unsafe.Pointer
	n     int
	freed bool
}

// AllocHost allocates n bytes of page-locked host memory (not
// initialised); Free, or Close of the context, frees it.
func (c *Context) AllocHost(n int) (*HostBuffer, error) {
	if n < 1 {
		return nil, fmt.Errorf("cuda: cannot allocate %d bytes of page-locked memory", n)
	}
	h := &HostBuffer{ctx: c, n: n}
	err := c.do(func() error {
		c.calls.HostAllocs++
		if err := check("cuMemAllocHost_v2", c.api.memAllocHost(&h.ptr, uint64(n))); err != nil {
			return fmt.Errorf("%w (%d bytes of page-locked host memory)", err, n)
		}
		c.track(h)
		c.hosts = append(c.hosts, h)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return h, nil
}

// Len returns the size of the memory in bytes.
func (h *HostBuffer) Len() int { return h.n }

// Bytes returns the memory (nil once it is freed), valid until Free or
// the context's Close.
func (h *HostBuffer) Bytes() []byte { return HostValues[byte](h) }

// HostValues returns h's memory as values of T (bytes for the Pack's
// staging): as many as fit, nil once it is freed, valid until Free or
// the context's Close.
func HostValues[T Elem | byte](h *HostBuffer) []T {
	if h.freed {
		return nil
	}
	var z T
	return unsafe.Slice((*T)(h.ptr), h.n/int(unsafe.Sizeof(z)))
}

// Free releases the memory (cuMemFreeHost, which waits for the device).
// Freeing twice does nothing.
func (h *HostBuffer) Free() error { return h.ctx.drop(h, &h.freed) }

func (h *HostBuffer) release() error {
	h.freed = true
	c := h.ctx
	c.hosts = slices.DeleteFunc(c.hosts, func(x *HostBuffer) bool { return x == h })
	c.calls.HostFrees++
	return check("cuMemFreeHost", c.api.memFreeHost(h.ptr))
}

// pinned checks, inside c.do, that the n bytes at p lie in one live
// page-locked allocation of c: an asynchronous copy of other memory
// would be synchronous on a GPU. use names the copy in the error.
func (c *Context) pinned(p unsafe.Pointer, n int, use string) error {
	a := uintptr(p)
	for _, h := range c.hosts {
		b := uintptr(h.ptr)
		if a >= b && a-b <= uintptr(h.n) && uintptr(n) <= uintptr(h.n)-(a-b) {
			return nil
		}
	}
	return fmt.Errorf("cuda: %s: the host memory is not page-locked memory of this context (AllocHost)", use)
}

// DownloadAsync enqueues the copy of b into dst on the Context's stream
// and returns without waiting for it (cuMemcpyDtoHAsync_v2). dst must
// have room for exactly b's values and lie in page-locked memory of b's
// context (HostValues of an AllocHost); it holds the values once the
// host has waited for an Event recorded after the call (Event.Wait), and
// must not be read or written before. The copy runs in stream order:
// after the work enqueued before it, whose results it reads, and before
// the work enqueued after it, which may then overwrite b.
func DownloadAsync[T Elem](dst []T, b *Buffer) error {
	return b.ctx.do(func() error {
		if err := fromDevice(b, dst); err != nil || len(dst) == 0 {
			return err
		}
		n := len(dst) * sizeOf(b.kind)
		if err := b.ctx.pinned(unsafe.Pointer(&dst[0]), n, "copying from the device"); err != nil {
			return err
		}
		b.ctx.calls.ToHostAsync++
		return check("cuMemcpyDtoHAsync_v2", callC(b.ctx.api.memcpyDtoHAsync, uintptr(unsafe.Pointer(&dst[0])), uintptr(b.ptr), uintptr(n), b.ctx.stream))
	})
}

// eventDisableTiming is CU_EVENT_DISABLE_TIMING: an event that only
// orders and synchronises, cheaper to record and wait for than a timed
// one.
const eventDisableTiming = 2

// Event is a driver event of a context without timing (cuEventCreate
// with CU_EVENT_DISABLE_TIMING): Record marks the point of the
// Context's stream after the work enqueued so far, and Wait blocks the host until
// that work has run (cuEventSynchronize), and only that: work enqueued
// after Record goes on. It is how the host learns that an asynchronous
// copy has run. Destroy, or Close of the context, destroys it.
type Event struct {
	ctx       *Context
	ev        uintptr
	destroyed bool
}

// NewEvent creates an event of the context.
func (c *Context) NewEvent() (*Event, error) {
	e := &Event{ctx: c}
	err := c.do(func() error {
		if err := check("cuEventCreate", c.api.ev.create(&e.ev, eventDisableTiming)); err != nil {
			return err
		}
		c.track(e)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return e, nil
}

// Record records the event on the Context's stream (cuEventRecord), after
// the work enqueued so far; a later Record moves it.
func (e *Event) Record() error { return e.ctx.do(e.record) }

// record is Record inside e.ctx.do.
func (e *Event) record() error {
	if e.destroyed {
		return errors.New("cuda: recording an event: the event is destroyed")
	}
	return check("cuEventRecord", callC(e.ctx.api.ev.record, e.ev, e.ctx.stream))
}

// Wait blocks until the work before the event's last Record has run (at
// once when it has, or when the event was never recorded). A failure of
// that work may be reported here.
func (e *Event) Wait() error { return e.ctx.do(e.wait) }

// wait is Wait inside e.ctx.do.
func (e *Event) wait() error {
	if e.destroyed {
		return errors.New("cuda: waiting for an event: the event is destroyed")
	}
	e.ctx.calls.Waits++
	return check("cuEventSynchronize", callC(e.ctx.api.ev.sync, e.ev))
}

// Destroy destroys the event. Destroying twice does nothing.
func (e *Event) Destroy() error { return e.ctx.drop(e, &e.destroyed) }

func (e *Event) release() error {
	e.destroyed = true
	return check("cuEventDestroy_v2", e.ctx.api.ev.destroy(e.ev))
}
