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
// its array in the one device buffer. A Pack is reused with Reset.
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
func Put[T Elem](p *Pack, dst **Buffer, v []T) {
	k := kindOf[T]()
	off := (len(p.host) + PackAlign - 1) / PackAlign * PackAlign
	size := max(len(v), 1) * sizeOf(k)
	p.host = append(p.host, make([]byte, off+size-len(p.host))...)
	if len(v) > 0 {
		copy(p.host[off:], unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), len(v)*sizeOf(k)))
	}
	p.parts = append(p.parts, packPart{off: off, n: len(v), kind: k, dst: dst})
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
// as long as it does.
func (p *Pack) Upload(c *Context, reuse *Buffer, minBytes int) (*Buffer, error) {
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
		c.calls.ToDevice++
		err := check("cuMemcpyHtoD_v2", c.api.memcpyHtoD(dev.ptr, unsafe.Pointer(&p.host[0]), uint64(len(p.host))))
		runtime.KeepAlive(p.host)
		return err
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
