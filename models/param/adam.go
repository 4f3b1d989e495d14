package param

import "math"

// Adam is the Adam optimiser (Kingma & Ba) with PyTorch's semantics,
// including its coupled L2 weight decay (g ← g + λ·w before the moments).
type Adam struct {
	LR, Beta1, Beta2, Eps, WeightDecay float64

	params []*Param
	m, v   [][]float32
	t      int
	blocks []block // the values cut into blocks (StepBlocks, CheckFinite)
}

// NewAdam returns Adam over params with β = (0.9, 0.999) and ε = 1e-8.
func NewAdam(params []*Param, lr, weightDecay float64) *Adam {
	a := &Adam{LR: lr, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: weightDecay, params: params, blocks: blocksOf(params)}
	for _, p := range params {
		a.m = append(a.m, make([]float32, len(p.W)))
		a.v = append(a.v, make([]float32, len(p.W)))
	}
	return a
}

// Blocks runs f(b) for b = 0..n−1, in any order and on any goroutines (each
// b exactly once), and returns when all are done: e.g. a kernels.Backend's
// ForEachChunk, one chunk per block. A nil Blocks runs them in order.
type Blocks func(n int, f func(b int))

// blockLen is the number of values of one block of StepBlocks and
// CheckFinite: large enough to dwarf the cost of handing a block out,
// small enough to split a model of tens of thousands of values.
const blockLen = 4096

// block is values [lo, hi) of parameter p.
type block struct{ p, lo, hi int }

// blocksOf returns the parameters' values cut into blocks of blockLen.
func blocksOf(params []*Param) []block {
	var bs []block
	for pi, p := range params {
		for lo := 0; lo < len(p.W); lo += blockLen {
			bs = append(bs, block{pi, lo, min(lo+blockLen, len(p.W))})
		}
	}
	return bs
}

// do runs f over n blocks with run, or in order when run is nil.
func (run Blocks) do(n int, f func(b int)) {
	if run == nil {
		for b := range n {
			f(b)
		}
		return
	}
	run(n, f)
}

// Step applies one update from the accumulated gradients and clears them.
func (a *Adam) Step() { a.StepBlocks(nil) }

// StepBlocks is Step with the values updated block by block through run.
// Each value's update is the same arithmetic on whichever goroutine runs
// it, so the result does not depend on run.
func (a *Adam) StepBlocks(run Blocks) {
	a.t++
	bc1 := 1 - math.Pow(a.Beta1, float64(a.t))
	bc2 := 1 - math.Pow(a.Beta2, float64(a.t))
	run.do(len(a.blocks), func(bi int) {
		b := a.blocks[bi]
		p := a.params[b.p]
		g := p.G[b.lo:b.hi]
		if !p.Frozen {
			a.update(adamSlice{W: p.W[b.lo:b.hi], G: g, M: a.m[b.p][b.lo:b.hi], V: a.v[b.p][b.lo:b.hi], Decay: !p.NoDecay}, bc1, bc2)
		}
		clear(g)
	})
}

// adamSlice is one slice of a parameter for Adam.update: its values W,
// gradient G and first and second moments M and V (the same length), and
// whether weight decay applies to it (Decay).
type adamSlice struct {
	W, G, M, V []float32
	Decay      bool
}

// update is Adam's step on one slice s of a parameter, with the bias
// corrections bc1 and bc2 of the step.
func (a *Adam) update(s adamSlice, bc1, bc2 float64) {
	w, g, m, v, decay := s.W, s.G, s.M, s.V, s.Decay
	for i, g32 := range g {
		g := float64(g32)
		if a.WeightDecay != 0 && decay {
			g += a.WeightDecay * float64(w[i])
		}
		mi := a.Beta1*float64(m[i]) + (1-a.Beta1)*g
		vi := a.Beta2*float64(v[i]) + (1-a.Beta2)*g*g
		m[i], v[i] = float32(mi), float32(vi)
		w[i] -= float32(a.LR * (mi / bc1) / (math.Sqrt(vi/bc2) + a.Eps))
	}
}

// CheckFinite returns the error of the first parameter (in order) whose
// values or gradient hold a NaN or Inf (Param.CheckFinite's), checking the
// blocks through run; nil when all are finite.
func (a *Adam) CheckFinite(run Blocks) error {
	bad := make([]bool, len(a.blocks))
	run.do(len(a.blocks), func(bi int) {
		b := a.blocks[bi]
		p := a.params[b.p]
		bad[bi] = !finite(p.W[b.lo:b.hi]) || !finite(p.G[b.lo:b.hi])
	})
	for bi, isBad := range bad {
		if isBad {
			return a.params[a.blocks[bi].p].CheckFinite()
		}
	}
	return nil
}

// finite reports whether every value of x is neither NaN nor ±Inf.
func finite(x []float32) bool {
	for _, v := range x {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return false
		}
	}
	return true
}
