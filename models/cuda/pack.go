package cuda

import (
	"errors"
	"fmt"
	"runtime"
	"unsafe"

	"github.com/spn-project/spn/models/cuda/kern"
)

// PackAlign is the byte alignment of each array in a Pack: that of a
// cuMemAlloc, so that an array packed with others starts as one of its
// own would.
const PackAlign = 256

// Pack gathers arrays on the host for one host→device copy: Put appends
// an array and names the *Buffer that is to point at it; Upload copies
// them all to the device at once and sets each such *Buffer to a view of
// its array in the one device buffer (UploadAsync: through page-locked
// staging memory, without the host waiting for the device). A Pack is
// reused with Reset.
type Pack struct {
	host  []byte
	parts []packPart
}

// packPart is one array of a Pack: n values of kind at byte offset off,
// whose view Upload stores in *dst.
type packPart struct {
	off, n int
	kind   kern.Kind
	dst    **Buffer
}

// Put appends v to p; Upload will point *dst at v's values on the
// device. An empty v still takes one value's room, so that its view is
// an address inside the device buffer.
func Put[T Elem](p *Pack, dst **Buffer, v []T) { copy(Place[T](p, dst, len(v)), v) }

// Place appends room for n values to p and returns it, for the caller to
// fill before the next Put or Place on p (which may move p's memory) and
// before Upload: an array made in place, without a copy of its own. Its
// values are not set: the caller writes every one. Upload will point
// *dst at them on the device; n = 0 takes one value's room, as Put.
func Place[T Elem](p *Pack, dst **Buffer, n int) []T {
	k := kindOf[T]()
	off := (len(p.host) + PackAlign - 1) / PackAlign * PackAlign
	end := off + max(n, 1)*sizeOf(k)
	if end > cap(p.host) {
		p.host = append(p.host[:cap(p.host)], make([]byte, end-cap(p.host))...)
	}
	p.host = p.host[:end]
	p.parts = append(p.parts, packPart{off: off, n: n, kind: k, dst: dst})
	if n == 0 {
		return nil
	}
	return unsafe.Slice((*T)(unsafe.Pointer(&p.host[off])), n)
}

// Share makes Upload point *dst at the device array of the earlier Put
// whose view goes to *src: the same values, copied once (a hop set that
// is its own transpose). It fails when no Put of p names src.
func (p *Pack) Share(dst, src **Buffer) error {
	for _, pt := range p.parts {
		if pt.dst == src {
			p.parts = append(p.parts, packPart{off: pt.off, n: pt.n, kind: pt.kind, dst: dst})
			return nil
		}
	}
	return errors.New("cuda: sharing an array the pack does not hold")
}

// Len returns the bytes the pack's arrays take on the device.
func (p *Pack) Len() int { return len(p.host) }

// Reset empties p, keeping its host memory for the next arrays.
func (p *Pack) Reset() {
	p.host = p.host[:0]
	clear(p.parts)
	p.parts = p.parts[:0]
}

// Upload copies p's arrays to c's device in one copy (cuMemcpyHtoD) and
// points the *Buffer of every Put at its array there. The copy goes into
// reuse when it is a buffer of c holding at least Len bytes (its other
// bytes are left as they are), otherwise into a new buffer of at least
// minBytes bytes, and reuse is freed. It returns the buffer holding the
// arrays (reuse or the new one, which the caller frees); the views live
// as long as it does. The copy, from pageable memory, waits for the work
// enqueued before it.
func (p *Pack) Upload(c *Context, reuse *Buffer, minBytes int) (*Buffer, error) {
	return p.upload(c, reuse, minBytes, func(dev *Buffer) error {
		c.calls.ToDevice++
		err := check("cuMemcpyHtoD_v2", c.api.memcpyHtoD(dev.ptr, unsafe.Pointer(&p.host[0]), uint64(len(p.host))))
		runtime.KeepAlive(p.host)
		return err
	})
}

// UploadAsync is Upload through s, page-locked staging memory of c: it
// copies the arrays into s's next staging buffer and enqueues the copy
// from there (cuMemcpyHtoDAsync_v2 on the Context's stream), returning
// without waiting for the device. The copy runs in stream order: after
// the work enqueued before it, so one device buffer serves pack after
// pack (reuse: the next pack's copy overwrites it only after the kernels
// enqueued before that copy, which read this pack's arrays, have run),
// and before the work enqueued after it, which reads the arrays. Besides
// the wait for the staging buffer's previous copy (Staging), only a
// larger pack makes the host wait: for the cuMemFree of reuse when it
// needs a new device buffer, and for the cuMemFreeHost of a staging
// buffer too small for it.
func (p *Pack) UploadAsync(s *Staging, reuse *Buffer, minBytes int) (*Buffer, error) {
	c := s.ctx
	var st []byte
	if len(p.host) > 0 {
		var err error
		if st, err = s.next(len(p.host), minBytes); err != nil {
			return nil, fmt.Errorf("packing %d arrays: %w", len(p.parts), err)
		}
		copy(st, p.host)
	}
	return p.upload(c, reuse, minBytes, func(dev *Buffer) error {
		c.calls.ToDeviceAsync++
		if err := check("cuMemcpyHtoDAsync_v2", callC(c.api.memcpyHtoDAsync, uintptr(dev.ptr), uintptr(unsafe.Pointer(&st[0])), uintptr(len(st)), c.stream)); err != nil {
			return err
		}
		return s.evs[s.last].record()
	})
}

// upload is Upload and UploadAsync: the device buffer (reuse, or a new
// one), then copy (inside c.do, for a pack of at least one byte) into
// it, then the views.
func (p *Pack) upload(c *Context, reuse *Buffer, minBytes int, copyTo func(dev *Buffer) error) (*Buffer, error) {
	dev := reuse
	if dev == nil || dev.ctx != c || dev.of != nil || dev.freed || dev.n*sizeOf(dev.kind) < len(p.host) {
		if reuse != nil {
			if err := reuse.Free(); err != nil {
				return nil, fmt.Errorf("packing %d arrays: %w", len(p.parts), err)
			}
		}
		var err error
		if dev, err = Alloc[int32](c, (max(len(p.host), minBytes)+3)/4); err != nil {
			return nil, fmt.Errorf("packing %d arrays: %w", len(p.parts), err)
		}
	}
	err := c.do(func() error {
		if dev.freed {
			return errors.New("cuda: copying to the device: the buffer is freed")
		}
		if len(p.host) == 0 {
			return nil
		}
		return copyTo(dev)
	})
	if err != nil {
		if dev != reuse {
			err = errors.Join(err, dev.Free())
		}
		return nil, fmt.Errorf("packing %d arrays: %w", len(p.parts), err)
	}
	for _, pt := range p.parts {
		*pt.dst = &Buffer{ctx: c, ptr: dev.ptr + uint64(pt.off), n: pt.n, kind: pt.kind, of: dev}
	}
	return dev, nil
}

// StagingBuffers is the number of page-locked buffers a Staging uses in
// turn: while the copy of one pack may still be waiting for the device,
// the next pack fills another.
const StagingBuffers = 2

// Staging is the page-locked memory Pack.UploadAsync stages packs in:
// StagingBuffers buffers used in turn, each with an event recorded after
// the copy that reads it. Before a buffer is refilled, UploadAsync waits
// for its event, so a buffer is never overwritten before its copy has
// run; on a GPU that copy was enqueued StagingBuffers packs earlier and
// has normally long run, and the wait returns at once.
type Staging struct {
	ctx  *Context
	bufs [StagingBuffers]*HostBuffer // nil until first needed
	evs  [StagingBuffers]*Event
	last int // the buffer of the last pack
}

// NewStaging returns the staging memory of packs for c (the events; the
// buffers are allocated as the packs need them). Free, or Close of c,
// frees it.
func NewStaging(c *Context) (*Staging, error) {
	s := &Staging{ctx: c, last: StagingBuffers - 1}
	for i := range s.evs {
		ev, err := c.NewEvent()
		if err != nil {
			return nil, errors.Join(fmt.Errorf("staging: %w", err), s.Free())
		}
		s.evs[i] = ev
	}
	return s, nil
}

// next returns the next staging buffer's first n bytes, once the copy
// that last read it has run; a buffer shorter than n is replaced by one
// of max(n, minBytes) bytes.
func (s *Staging) next(n, minBytes int) ([]byte, error) {
	k := (s.last + 1) % StagingBuffers
	if err := s.evs[k].Wait(); err != nil {
		return nil, fmt.Errorf("staging buffer %d: %w", k, err)
	}
	s.last = k
	if b := s.bufs[k]; b == nil || b.Len() < n {
		if b != nil {
			s.bufs[k] = nil
			if err := b.Free(); err != nil {
				return nil, fmt.Errorf("staging buffer %d: %w", k, err)
			}
		}
		b, err := s.ctx.AllocHost(max(n, minBytes))
		if err != nil {
			return nil, fmt.Errorf("staging buffer %d: %w", k, err)
		}
		s.bufs[k] = b
	}
	return s.bufs[k].Bytes()[:n], nil
}

// Free frees the staging memory and destroys its events.
func (s *Staging) Free() error {
	var errs []error
	for i := range s.bufs {
		if s.bufs[i] != nil {
			errs = append(errs, s.bufs[i].Free())
			s.bufs[i] = nil
		}
		if s.evs[i] != nil {
			errs = append(errs, s.evs[i].Destroy())
			s.evs[i] = nil
		}
	}
	return errors.Join(errs...)
}
