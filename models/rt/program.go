package rt

import (
	"errors"
	"fmt"
	"strings"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/models"
	"github.com/spn-project/spn/models/nbop"
	"github.com/spn-project/spn/models/op"
	"github.com/spn-project/spn/models/param"
)

// Bucketing of compiled graphs: node-level tensors get a multiple of
// NodeBucket rows and graph-level tensors a multiple of GraphBucket rows.
// A model keeps at most MaxCachedGraphs compiled graphs whose estimated
// bytes (GraphBytes: every node's tensor, an upper bound of the values a
// graph holds after a run) add up to at most MaxCachedBytes; the oldest
// is dropped first (Cache). On the device path (UseDevice) a graph's
// values live in the device engine's arena only while it runs,
// so a cached graph holds just its host structures (its nodes and tape,
// about 0.3 to 0.5 MB at the paper's widths): a model there keeps up to
// MaxCachedDeviceGraphs, with no bound on GraphBytes (Cache.OnDevice).
// That is every node bucket that shuffled batches of 32 of D&D's graphs
// (the largest of the speed table) reach in 100 epochs, about 170, so
// that a GPU step rarely waits for Gorgonia to build and compile a graph,
// which costs the host more than the rest of such a step.
const (
	NodeBucket            = 64
	GraphBucket           = 16
	MaxCachedGraphs       = 32
	MaxCachedBytes        = 1 << 30
	MaxCachedDeviceGraphs = 256
)

// Opts selects what one graph computes.
type Opts struct {
	// train selects batch statistics and dropout (with masks).
	train bool
	// updateStats lets the training-mode batch norms update the running
	// statistics.
	updateStats bool
	// masks are the readout dropout masks (nil = no dropout).
	masks [][]float32
	// lossInGraph adds the task loss and differentiates it.
	lossInGraph bool
	// seed, when not nil, differentiates ⟨out, seed⟩ instead of a loss.
	seed []float32
	// async sends the batch to the device through the page-locked
	// staging, without the host waiting (StepAsync); it does not change
	// the graph.
	async bool
}

// Key identifies a compiled graph: its padded sizes and what it computes.
type Key struct {
	N, G                                 int
	train, update, dropout, loss, seeded bool
}

// Program is one built and compiled graph, the batch data its ops read and
// the places its results are read into.
type Program struct {
	key    Key
	g      *G.ExprGraph
	vm     G.VM
	bd     *BatchData
	params []paramBinding
	masks  [][]float32 // backing of the dropout-mask nodes (G×Out each)
	// maskNodes are the dropout-mask nodes (the device path binds them to
	// device tensors).
	maskNodes G.Nodes
	seed      []float32 // backing of the output-gradient node (G×Out)
	seedNode  *G.Node   // the output-gradient node (the device path binds it)
	// vals are the values gorgonia.Read copies out of a run. They live
	// apart from Program: a Read node holds a pointer to its target, and
	// a target inside Program would close the cycle machine → graph →
	// Read → Program → machine, which the machine's finalizer
	// (NewTapeMachine's runtime.SetFinalizer) keeps alive forever.
	vals    *readVals
	hasGrad bool
	// lossData are the targets of the multi-task BCE loss (binary task).
	lossData *nbop.Data
	ar       *arena
	life     *lifetimes // when the arena's buffers of a run die (CPU path)
	// dev is the device the graph runs on (nil: the CPU); outNode,
	// lossNode (the loss, one value) and gradNodes are then the nodes
	// whose device values a run leaves (no gorgonia.Read, which would
	// copy device memory on the host).
	dev       *deviceState
	outNode   *G.Node
	lossNode  *G.Node
	gradNodes G.Nodes
}

// readVals are the values a run reads out of a compiled graph.
type readVals struct {
	out, loss G.Value
	grads     []G.Value
}

// paramBinding is a parameter node bound to the storage of an param.Param.
type paramBinding struct {
	node *G.Node
	p    *param.Param
	w    *float32 // &p.W[0] when bound
}

// Builder applies ops to a graph, keeping the first error so that the
// layer code below reads like the equations.
type Builder struct {
	g   *G.ExprGraph
	err error
}

// Err returns the first error of building the graph.
func (b *Builder) Err() error { return b.err }

// Fail records err (when it is the first) and returns nil, so that
// layer code can continue as if a node had been built.
func (b *Builder) Fail(err error) *G.Node {
	if b.err == nil {
		b.err = err
	}
	return nil
}

// Data returns an input node holding the non-trainable values v.
func (b *Builder) Data(name string, v []float32, shape ...int) *G.Node {
	t := tensor.New(tensor.WithShape(shape...), tensor.WithBacking(v))
	return G.NewTensor(b.g, G.Float32, len(shape), G.WithShape(shape...), G.WithName(name), G.WithValue(t))
}

// bindParam binds the node of a parameter to its current storage (no copy:
// the graph reads the values the optimiser writes in place).
func bindParam(pb *paramBinding) error {
	t := tensor.New(tensor.WithShape(pb.p.Shape...), tensor.WithBacking(pb.p.W))
	if err := G.Let(pb.node, t); err != nil {
		return fmt.Errorf("binding parameter %s: %w", pb.p.Name, err)
	}
	pb.w = &pb.p.W[0]
	return nil
}

// Op adds the op.Op o to b's graph, its buffers from be.
func (b *Builder) Op(be Env, o op.Op, in ...*G.Node) *G.Node {
	if b.err != nil {
		return nil
	}
	var n *G.Node
	var err error
	if be.Dev != nil {
		do, ok := o.(op.DeviceOp)
		if !ok {
			b.err = fmt.Errorf("building %s: the op has no device math", o.Sig().ID)
			return nil
		}
		n, err = op.ApplyDevice(be.Dev, do, in...)
	} else {
		n, err = op.Apply(be, o, in...)
	}
	if err != nil {
		b.err = fmt.Errorf("building %s: %w", o.Sig().ID, err)
		return nil
	}
	return n
}

// vmError returns err, an error of Gorgonia's tape machine, as the
// error the failing node's op returned, after the node's name unless
// that error starts with it, without the
// machine's framing ("PC n. Failed to execute instruction" and the
// instruction's registers, "Failed to carry op.Do()"), which tells a
// reader nothing; the op's error keeps its chain (errors.Is: a device
// out of memory is cuda.ErrOutOfMemory). Any other error is returned
// as it is.
func vmError(err error) error {
	var ce interface {
		Err() error
		Node() *G.Node
	}
	if !errors.As(err, &ce) {
		return err
	}
	// The framing is github.com/pkg/errors' wrappers, which have Cause;
	// the ops' own errors (and Gorgonia's errors.Errorf) have none.
	cause := ce.Err()
	for {
		c, ok := cause.(interface{ Cause() error })
		if !ok || c.Cause() == nil {
			break
		}
		cause = c.Cause()
	}
	if n := ce.Node(); n != nil {
		// An op node's name is the op's with its arguments; spn's ops
		// name themselves in their errors.
		name, _, _ := strings.Cut(n.Name(), "(")
		if !strings.HasPrefix(cause.Error(), name+":") {
			return fmt.Errorf("%s: %w", name, cause)
		}
	}
	return cause
}

// RoundUp returns x rounded up to a multiple of m.
func RoundUp(x, m int) int { return (x + m - 1) / m * m }

// run executes the compiled graph once. It first recycles the model's
// buffers of the previous run: only the values copied out by gorgonia.Read
// (outputs, loss, gradients) outlive a run.
func (p *Program) run() error {
	p.ar.reset()
	if p.dev == nil {
		if p.life == nil {
			p.life = graphLifetimes(p.g)
		}
		p.ar.use(p.life)
	}
	p.vm.Reset()
	err := p.vm.RunAll()
	p.ar.use(nil) // no reference to this graph once it may be dropped
	if err != nil {
		return fmt.Errorf("running the model graph: %w", vmError(err))
	}
	if p.vals.out == nil && p.dev == nil {
		return fmt.Errorf("running the model graph: no output value")
	}
	// A cached graph keeps no reference to this batch or to the machine's
	// registers between runs.
	p.vm.Reset()
	p.bd.release()
	return nil
}

// outputs returns a copy of the real (unpadded) output values.
func (p *Program) outputs(c int) []float32 {
	v, _ := p.vals.out.Data().([]float32)
	return append([]float32(nil), v[:p.bd.G*c]...)
}

// accumulate adds the gradients read from the graph to ps[i].G.
func (p *Program) accumulate(ps []*param.Param) error {
	if !p.hasGrad {
		return fmt.Errorf("graph has no gradients")
	}
	if len(p.vals.grads) != len(ps) {
		return fmt.Errorf("graph has %d gradients for %d parameters", len(p.vals.grads), len(ps))
	}
	for i, gv := range p.vals.grads {
		if gv == nil {
			return fmt.Errorf("no gradient value for %s", ps[i].Name)
		}
		g, err := op.Floats("gradient of "+ps[i].Name, []G.Value{gv}, 0, len(ps[i].G))
		if err != nil {
			return err
		}
		for j, v := range g {
			ps[i].G[j] += v
		}
	}
	return nil
}

// Sets returns the neighbourhoods of b the model aggregates over (N_1..N_k,
// or the adjacency, then N_∞ with Unreachable); b has passed Check.
func (h Need) Sets(b *data.Batch) []data.CSR {
	var sets []data.CSR
	if h.Adj {
		sets = []data.CSR{b.Adj}
	} else {
		sets = b.Hop[:h.K:h.K] // appending N_∞ copies, leaving b.Hop as it is
	}
	if h.Unreachable {
		sets = append(sets, *b.Unreachable)
	}
	return sets
}

// Check verifies that b carries the neighbourhoods the model aggregates
// over, each a CSR over b's nodes.
func (h Need) Check(b *data.Batch) error {
	if !h.Adj && len(b.Hop) < h.K {
		return fmt.Errorf("batch carries %d hop sets, model needs k = %d", len(b.Hop), h.K)
	}
	if h.Unreachable && b.Unreachable == nil {
		return fmt.Errorf("batch carries no N_∞ (unreachable nodes), which the model reads (model.unreachable)")
	}
	sets := h.Sets(b)
	for i, c := range sets {
		name := fmt.Sprintf("hop set N_%d", i+1)
		if h.Unreachable && i == len(sets)-1 {
			name = "N_∞"
		}
		if err := data.CheckCSR(c, b.N); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	return nil
}

// Need is which neighbourhoods a model aggregates over: the adjacency
// (Adj) or the hop sets N_1..N_K, and N_∞ with Unreachable.
type Need struct {
	Adj         bool
	K           int
	Unreachable bool
}

// CheckBatch verifies batch b against the inputs of a model of
// configuration c reading the neighbourhoods need.
func CheckBatch(c models.Config, need Need, b *data.Batch, o Opts) error {
	if b == nil {
		return fmt.Errorf("nil batch")
	}
	if b.N < 1 || b.NumGraphs < 1 {
		// Gorgonia's tensors cannot be empty.
		return fmt.Errorf("empty batch (%d graphs, %d nodes): the gorgonia path needs at least one node", b.NumGraphs, b.N)
	}
	if len(b.GraphPtr) != b.NumGraphs+1 || b.GraphPtr[0] != 0 || int(b.GraphPtr[b.NumGraphs]) != b.N {
		return fmt.Errorf("batch graph pointers (%d) do not cover %d graphs and %d nodes", len(b.GraphPtr), b.NumGraphs, b.N)
	}
	for j := 0; j < b.NumGraphs; j++ {
		if b.GraphPtr[j+1] < b.GraphPtr[j] {
			return fmt.Errorf("batch graph pointer decreases at graph %d", j)
		}
	}
	if err := c.CheckNodeInputs(b); err != nil {
		return err
	}
	if o.lossInGraph {
		switch c.Task {
		case models.TaskClassification:
			if len(b.Y) != b.NumGraphs {
				return fmt.Errorf("batch has %d classes for %d graphs", len(b.Y), b.NumGraphs)
			}
			for j, y := range b.Y {
				if y < 0 || int(y) >= c.Out {
					return fmt.Errorf("graph %d of the batch has class %d outside [0,%d)", j, y, c.Out)
				}
			}
		case models.TaskRegression, models.TaskBinary:
			if len(b.Target) != b.NumGraphs*c.Out {
				return fmt.Errorf("batch has %d targets, want %d graphs × %d", len(b.Target), b.NumGraphs, c.Out)
			}
		}
	}
	if o.seed != nil && len(o.seed) != b.NumGraphs*c.Out {
		return fmt.Errorf("output gradient has %d values, want %d", len(o.seed), b.NumGraphs*c.Out)
	}
	return need.Check(b)
}

// BoundParams returns the parameters bound in p (Program.Param), in the
// order of its gradients.
func (p *Program) BoundParams() []*param.Param {
	ps := make([]*param.Param, len(p.params))
	for i, pb := range p.params {
		ps[i] = pb.p
	}
	return ps
}
