package rt

import (
	"github.com/spn-project/spn/models/cuda/engine"
	"github.com/spn-project/spn/models/kernels"
)

// Env is what the ops compute with: the kernel backend and, when not nil,
// the arena their large n×d outputs come from. With Dev the graph runs on
// that device engine (Builder.Op applies the ops' device math).
type Env struct {
	kernels.Backend
	ar  *arena
	Dev *engine.Engine
	// dev is the model's device state on the device path (nil on the
	// CPU), where a batch norm registers its device statistics.
	dev *deviceState
}

// Buf returns n floats with unspecified contents (every caller overwrites
// all of them); it implements op.Buffers.
func (e Env) Buf(n int) []float32 {
	if e.ar == nil {
		return make([]float32, n)
	}
	return e.ar.get(n)
}

// Zeros returns n zeroed floats.
func (e Env) Zeros(n int) []float32 {
	if e.ar == nil {
		return make([]float32, n)
	}
	b := e.ar.get(n)
	clear(b)
	return b
}

// arena is the memory of the node-sized buffers of one model, recycled
// from run to run: a run of a compiled graph takes buffers with get, and
// reset (before the next run) makes all of it available again. Every
// value that outlives a run (outputs, loss, gradients) is copied out by
// gorgonia.Read, so no buffer is in use across runs.
//
// It is a bump allocator over a list of chunks that are never freed: get
// cuts the next buffer from the current chunk, moving on to the next chunk
// when the buffer does not fit and appending a chunk when there is none.
// A run therefore takes the same memory whatever the runs before it were,
// and the arena holds at most
//
//	Bytes() ≤ 5/4·R + C·L + minChunk
//
// bytes, where R is the most one run has taken (Requested, buffers rounded
// up to the alignment), C the number of chunks and L the largest single
// buffer (the tail a chunk may leave unused): close to R, where the
// first-fit list of buffers it replaces kept 1.8–3.5·R. It grows only when a run
// takes more than every run before it, so it is flat across epochs once
// the largest batch has been seen. Buffers start at multiples of align
// floats (64 bytes). Which memory a request gets depends on the order of
// requests only; results never depend on it, since every user overwrites
// its buffer.
type arena struct {
	chunks [][]float32
	cur    int   // chunk being cut from
	off    int   // next free float in chunks[cur]
	run    int64 // floats taken since the last reset (aligned)
	maxRun int64 // most floats one run took
}

const (
	// align is the alignment of buffers, in floats (64 bytes).
	align = 16
	// minChunk is the smallest chunk the arena appends, in floats (1 MiB).
	minChunk = 1 << 18
)

// get returns a buffer of length n not handed out since the last reset.
func (a *arena) get(n int) []float32 {
	m := RoundUp(max(n, 1), align)
	a.run += int64(m)
	for ; a.cur < len(a.chunks); a.cur, a.off = a.cur+1, 0 {
		if c := a.chunks[a.cur]; a.off+m <= len(c) {
			b := c[a.off : a.off+n : a.off+n]
			a.off += m
			return b
		}
	}
	// A new chunk: what this buffer needs, at least a quarter of what the
	// run has taken and an eighth of the largest run so far (so a growing
	// run appends few chunks and overshoots by at most a quarter).
	size := max(m, int(a.run/4), int(a.maxRun/8), minChunk)
	c := make([]float32, size)
	a.chunks = append(a.chunks, c)
	a.cur, a.off = len(a.chunks)-1, m
	return c[:n:n]
}

// reset makes all of the arena available again.
func (a *arena) reset() {
	a.maxRun = max(a.maxRun, a.run)
	a.cur, a.off, a.run = 0, 0, 0
}

// Bytes returns the bytes the arena holds.
func (a *arena) Bytes() int64 {
	var n int64
	for _, c := range a.chunks {
		n += 4 * int64(len(c))
	}
	return n
}

// Requested returns the most bytes one run has taken (aligned).
func (a *arena) Requested() int64 { return 4 * max(a.maxRun, a.run) }
