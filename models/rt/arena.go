package rt

import (
	"cmp"
	"slices"
	"unsafe"

	G "gorgonia.org/gorgonia"

	"github.com/spn-project/spn/models/cuda/engine"
	"github.com/spn-project/spn/models/kernels"
	"github.com/spn-project/spn/models/op"
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

// Release implements op.Tracker: buf, scratch the running op took (Buf,
// Zeros) and reads no more, goes back to the arena at once. Without
// lifetimes (or for a buffer not from the arena) it does nothing: the
// buffer is then free at the next run.
func (e Env) Release(buf []float32) {
	if e.ar != nil {
		e.ar.drop(buf)
	}
}

// Side implements op.Tracker: buf, the running gradient node's side
// values, dies once its part nodes have run.
func (e Env) Side(buf []float32) {
	if e.ar != nil {
		e.ar.handOff(buf)
	}
}

// Enter implements op.Tracker: the op adaptor's Do of o begins.
func (e Env) Enter(o G.Op) {
	if e.ar != nil {
		e.ar.enter(o)
	}
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
// bytes, where R is the most one run has taken from the bump (Requested,
// buffers rounded up to the alignment), C the number of chunks and L the
// largest single buffer (the tail a chunk may leave unused). It grows only
// when a run takes more than every run before it, so it is flat across
// epochs once the largest batch has been seen. Buffers start at multiples
// of align floats (64 bytes).
//
// Within a run, buffers are also reused once dead. With the lifetimes of
// the run's compiled graph (use), the op adaptor announces each node's Do
// (enter); the buffers taken during a node's Do are its node's, and they
// are released, to be handed out again by get, once every node that reads
// that node's value has run (lifetimes). A training step then holds the
// forward values its backward pass still reads and the gradients in
// flight, not every buffer of the step. get takes the smallest released
// block that fits (the lowest address of equal ones) before cutting from
// the bump. Which memory a request gets depends on the order of requests
// and releases only, the same from run to run; results never depend on
// it, since every user overwrites its buffer.
type arena struct {
	chunks [][]float32
	cur    int   // chunk being cut from
	off    int   // next free float in chunks[cur]
	run    int64 // floats the bump holds since the last reset (aligned)
	peak   int64 // most of run since the last reset
	maxRun int64 // most floats one run took from the bump

	// The run's lifetimes (nil: nothing is released before reset) and
	// what the run has done with them.
	life  *lifetimes
	node  int       // the node whose Do is running, -1: none or unknown
	left  []int     // per node, consumers still to run
	done  []bool    // per node, whether its Do has begun
	owned [][]block // per node, the blocks taken during its Do
	side  [][]block // per gradient node, its side values' blocks (op.Tracker.Side)
	parts []int     // per gradient node, part nodes still to run
	free  []block   // released blocks, by chunk and start, adjacent ones merged
}

// block is floats [start, end) of chunk c.
type block struct{ c, start, end int }

const (
	// align is the alignment of buffers, in floats (64 bytes).
	align = 16
	// minChunk is the smallest chunk the arena appends, in floats (1 MiB).
	minChunk = 1 << 18
)

// get returns a buffer of length n not handed out since the last reset, or
// handed out and released since.
func (a *arena) get(n int) []float32 {
	m := RoundUp(max(n, 1), align)
	b, ok := a.reuse(m)
	if !ok {
		b = a.bump(m)
	}
	if a.life != nil && a.node >= 0 {
		a.owned[a.node] = append(a.owned[a.node], b)
	}
	return a.chunks[b.c][b.start : b.start+n : b.start+n]
}

// reuse cuts m floats from the smallest released block that holds them.
func (a *arena) reuse(m int) (block, bool) {
	best := -1
	for i, f := range a.free {
		if l := f.end - f.start; l >= m && (best < 0 || l < a.free[best].end-a.free[best].start) {
			best = i
		}
	}
	if best < 0 {
		return block{}, false
	}
	f := a.free[best]
	b := block{f.c, f.start, f.start + m}
	if b.end == f.end {
		a.free = append(a.free[:best], a.free[best+1:]...)
	} else {
		a.free[best].start = b.end
	}
	return b, true
}

// bump cuts m floats from the chunks, appending one when none has room.
func (a *arena) bump(m int) block {
	a.run += int64(m)
	a.peak = max(a.peak, a.run)
	for ; a.cur < len(a.chunks); a.cur, a.off = a.cur+1, 0 {
		if c := a.chunks[a.cur]; a.off+m <= len(c) {
			a.off += m
			return block{a.cur, a.off - m, a.off}
		}
	}
	// A new chunk: what this buffer needs, at least a quarter of what the
	// run has taken and an eighth of the largest run so far (so a growing
	// run appends few chunks and overshoots by at most a quarter).
	size := max(m, int(a.peak/4), int(a.maxRun/8), minChunk)
	a.chunks = append(a.chunks, make([]float32, size))
	a.cur, a.off = len(a.chunks)-1, m
	return block{a.cur, 0, m}
}

// release makes b available to get again: merged with the released blocks
// next to it, and given back to the bump when it ends where the bump
// cuts.
func (a *arena) release(b block) {
	i, _ := slices.BinarySearchFunc(a.free, b, func(f, b block) int {
		return cmp.Or(cmp.Compare(f.c, b.c), cmp.Compare(f.start, b.start))
	})
	if i < len(a.free) && a.free[i].c == b.c && a.free[i].start == b.end {
		b.end = a.free[i].end
		a.free = append(a.free[:i], a.free[i+1:]...)
	}
	if i > 0 && a.free[i-1].c == b.c && a.free[i-1].end == b.start {
		i--
		b.start = a.free[i].start
		a.free = append(a.free[:i], a.free[i+1:]...)
	}
	if b.c == a.cur && b.end == a.off {
		a.run -= int64(b.end - b.start)
		a.off = b.start
		return
	}
	a.free = slices.Insert(a.free, i, b)
}

// use sets the lifetimes of the next run's compiled graph (nil: none,
// nothing released before reset); reset keeps them.
func (a *arena) use(l *lifetimes) {
	a.life = l
	a.startRun()
}

// startRun clears what a run has done with its lifetimes.
func (a *arena) startRun() {
	a.node, a.free = -1, a.free[:0]
	if a.life == nil {
		return
	}
	n := len(a.life.uses)
	if len(a.left) != n {
		a.left, a.done, a.owned = make([]int, n), make([]bool, n), make([][]block, n)
		a.side, a.parts = make([][]block, n), make([]int, n)
	}
	copy(a.left, a.life.uses)
	copy(a.parts, a.life.parts)
	clear(a.done)
	for i := range a.owned {
		a.owned[i], a.side[i] = a.owned[i][:0], a.side[i][:0]
	}
}

// enter ends the Do of the node running (releasing the blocks of the nodes
// all of whose readers have now run) and begins o's.
func (a *arena) enter(o G.Op) {
	if a.life == nil {
		return
	}
	if j := a.node; j >= 0 {
		for _, p := range a.life.reads[j] {
			if a.left[p]--; a.left[p] == 0 {
				a.releaseNode(p)
			}
		}
		if g := a.life.partOf[j]; g >= 0 {
			if a.parts[g]--; a.parts[g] == 0 {
				for _, b := range a.side[g] {
					a.release(b)
				}
				a.side[g] = a.side[g][:0]
			}
		}
	}
	j, ok := a.life.node[o]
	if ok && a.done[j] {
		// A node run twice is not what the lifetimes describe: release
		// nothing more this run.
		a.life, a.node = nil, -1
		return
	}
	a.node = -1
	if ok {
		a.node, a.done[j] = j, true
	}
}

// drop releases buf, taken during the running node's Do, at once.
func (a *arena) drop(buf []float32) {
	if b, ok := a.take(buf); ok {
		a.release(b)
	}
}

// handOff moves buf, taken during the running node's Do, from the node's
// blocks to its side values (released once its part nodes have run).
func (a *arena) handOff(buf []float32) {
	if a.life == nil || a.node < 0 || a.life.parts[a.node] == 0 {
		return
	}
	if b, ok := a.take(buf); ok {
		a.side[a.node] = append(a.side[a.node], b)
	}
}

// take removes the block of buf from the running node's blocks; false
// when buf is not one of them (or no node's Do is running with
// lifetimes).
func (a *arena) take(buf []float32) (block, bool) {
	if a.life == nil || a.node < 0 || len(buf) == 0 {
		return block{}, false
	}
	p := unsafe.SliceData(buf)
	own := a.owned[a.node]
	for i := len(own) - 1; i >= 0; i-- {
		if b := own[i]; &a.chunks[b.c][b.start] == p {
			a.owned[a.node] = append(own[:i], own[i+1:]...)
			return b, true
		}
	}
	return block{}, false
}

// releaseNode releases the blocks taken during node j's Do.
func (a *arena) releaseNode(j int) {
	for _, b := range a.owned[j] {
		a.release(b)
	}
	a.owned[j] = a.owned[j][:0]
}

// reset makes all of the arena available again.
func (a *arena) reset() {
	a.maxRun = max(a.maxRun, a.peak)
	a.cur, a.off, a.run, a.peak = 0, 0, 0, 0
	a.startRun()
}

// Bytes returns the bytes the arena holds.
func (a *arena) Bytes() int64 {
	var n int64
	for _, c := range a.chunks {
		n += 4 * int64(len(c))
	}
	return n
}

// Requested returns the most bytes one run has taken from the bump
// (aligned).
func (a *arena) Requested() int64 { return 4 * max(a.maxRun, a.peak) }

// lifetimes are when the buffers of a compiled graph's nodes die within a
// run, for the arena: which node of the graph each op adaptor (op.Adaptor)
// is, how many adaptor nodes read each one's value, and which values
// each one reads. A node reads a value when it has the value's node as an
// input, or has as an input a node of another op (Gorgonia's own, which
// may return its input or a view of it) that reads the value so. A value
// read by a node of another op with no node reading it in turn (a
// gorgonia.Read, a graph output), and a value no node reads, live until
// the run ends. A gradient node's side values (op.Tracker.Side) are read
// by its part nodes only.
type lifetimes struct {
	node   map[G.Op]int // adaptor op → node number
	uses   []int        // per node, how many nodes read its value (-1: it lives to the end)
	reads  [][]int      // per node, the nodes whose values it reads (of those with uses ≥ 0)
	parts  []int        // per gradient node, how many part nodes read its side values
	partOf []int        // per part node, the gradient node it reads (-1: none)
}

// graphLifetimes returns the lifetimes of g's nodes.
func graphLifetimes(g *G.ExprGraph) *lifetimes {
	all := g.AllNodes()
	// An adaptor op of more than one node is left out: its Do could not
	// be told apart.
	count := map[G.Op]int{}
	for _, n := range all {
		if o := n.Op(); o != nil && op.Adaptor(o) {
			count[o]++
		}
	}
	l := &lifetimes{node: map[G.Op]int{}}
	var nodes []*G.Node
	for _, n := range all {
		if o := n.Op(); o != nil && count[o] == 1 {
			l.node[o] = len(nodes)
			nodes = append(nodes, n)
		}
	}
	l.uses = make([]int, len(nodes))
	l.reads = make([][]int, len(nodes))
	l.parts = make([]int, len(nodes))
	l.partOf = make([]int, len(nodes))
	for k := range nodes {
		l.partOf[k] = -1
	}
	// A gradient node one of whose part nodes was left out keeps its side
	// values with its own blocks (parts 0, so handOff leaves them there):
	// that part's Do could not be counted, but the part is then a node of
	// another op, whose readers count as the gradient node's.
	unsure := map[int]bool{}
	for _, n := range all {
		g, ok := op.PartOf(n.Op())
		if !ok {
			continue
		}
		j, ok := l.node[g]
		if !ok {
			continue
		}
		k, ok := l.node[n.Op()]
		if !ok {
			unsure[j] = true
			continue
		}
		l.partOf[k] = j
		l.parts[j]++
	}
	for j := range unsure {
		l.parts[j] = 0
	}
	for j, n := range nodes {
		users, ok := l.readersOf(g, n)
		if !ok {
			l.uses[j] = -1
			continue
		}
		l.uses[j] = len(users)
		for _, k := range users {
			l.reads[k] = append(l.reads[k], j)
		}
	}
	return l
}

// readersOf returns the adaptor nodes (their numbers) that read n's value
// in g, directly or through nodes of other ops, each once; false when the
// value lives to the end of the run (no node reads it, or a node of
// another op that no node reads in turn does).
func (l *lifetimes) readersOf(g *G.ExprGraph, n *G.Node) ([]int, bool) {
	readers := func(n *G.Node) []*G.Node {
		var r []*G.Node
		for it := g.To(n.ID()); it.Next(); {
			r = append(r, it.Node().(*G.Node))
		}
		slices.SortFunc(r, func(a, b *G.Node) int { return cmp.Compare(a.ID(), b.ID()) })
		return r
	}
	todo := readers(n)
	if len(todo) == 0 {
		return nil, false
	}
	seen := map[*G.Node]bool{}
	var users []int
	for len(todo) > 0 {
		r := todo[0]
		todo = todo[1:]
		if seen[r] {
			continue
		}
		seen[r] = true
		if k, ok := l.node[r.Op()]; ok {
			users = append(users, k)
			continue
		}
		next := readers(r)
		if len(next) == 0 {
			return nil, false
		}
		todo = append(todo, next...)
	}
	return users, true
}
