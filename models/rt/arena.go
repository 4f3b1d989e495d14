package rt

import "github.com/spn-project/spn/models/kernels"

// Env is what the ops compute with: the kernel backend and, when not nil,
// the arena their large n×d outputs come from.
type Env struct {
	kernels.Backend
	ar *arena
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

// arena recycles the node-sized buffers of one model from step to step: a
// run of a compiled graph takes buffers with get, and reset (before the
// next run) makes them all available again. Every value that outlives a
// run (outputs, loss, gradients) is copied out by gorgonia.Read, so no
// buffer is in use across runs. Buffers are handed out first-fit by
// capacity, in a fixed order, so the same sequence of sizes gives the same
// buffers; results never depend on it since every user overwrites its
// buffer.
type arena struct {
	bufs [][]float32
	used []bool
}

// get returns a buffer of length n not handed out since the last reset.
func (a *arena) get(n int) []float32 {
	for i, b := range a.bufs {
		if !a.used[i] && cap(b) >= n {
			a.used[i] = true
			return b[:n]
		}
	}
	// Some slack so that slightly larger batches reuse the buffer.
	b := make([]float32, n, n+n/8+64)
	a.bufs = append(a.bufs, b)
	a.used = append(a.used, true)
	return b
}

// reset makes every buffer available again.
func (a *arena) reset() { clear(a.used) }
