// Package baseline is the structure-agnostic baseline of Errica et al.
// (ICLR 2020), model kind "baseline" (the paper's Table 3).
package baseline

import (
	"fmt"
	"math/rand/v2"

	"github.com/spn-project/spn/models/rt"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/models"
	"github.com/spn-project/spn/models/kernels"
	"github.com/spn-project/spn/models/param"
	"github.com/spn-project/spn/schema/modelspec"
)

// Name is the model kind.
const Name = "baseline"

// Kind is model kind "baseline".
type Kind struct{}

// Name implements models.Kind.
func (Kind) Name() string { return Name }

// Check implements models.Kind: a positive width and no dropout.
func (Kind) Check(m modelspec.Model, _ modelspec.DatasetInfo) []modelspec.FieldError {
	var errs []modelspec.FieldError
	if m.Hidden < 1 {
		errs = append(errs, rt.Errf("hidden", "hidden = %d: need a positive width", m.Hidden))
	}
	if m.Dropout != 0 {
		errs = append(errs, rt.Errf("dropout", "dropout = %v: the baseline has no dropout (Errica et al.); set model.dropout: 0", m.Dropout))
	}
	return errs
}

// ParamCount implements models.Kind: the linear maps of cfg's form.
func (Kind) ParamCount(cfg models.Config) int64 {
	h := cfg.Model.Hidden
	// The input map's LinearSize(labels + attributes, h), without the
	// sum's overflow.
	in := param.EncoderSize(cfg.NumLabels, cfg.AttrDim, h)
	if AgnosticForm(cfg) == FormFingerprint {
		return param.Sum(in, param.LinearSize(h, cfg.Out))
	}
	return param.Sum(in, param.LinearSize(h, h), param.LinearSize(h, cfg.Out))
}

// New implements models.Kind.
func (Kind) New(cfg models.Config, seed uint64, be kernels.Backend) (models.Model, error) {
	return New(cfg, seed, be)
}

// Agnostic forms.
const (
	// FormFingerprint is Errica et al.'s "MolecularFingerprint" baseline
	// of the chemical sets: out = ReLU(W₂·ReLU(W₁·Σ_v x_v + b₁) + b₂).
	FormFingerprint = "fingerprint"
	// FormDeepMultisets is their "DeepMultisets" baseline (ENZYMES):
	// out = W₃·ReLU(W₂·Σ_v ReLU(W₁·x_v + b₁) + b₂) + b₃.
	FormDeepMultisets = "deepmultisets"
)

// AgnosticForm returns the form model kind "baseline" takes for cfg: the
// DeepMultisets form when the dataset has node attributes (cfg.AttrDim > 0:
// of the TU sets only ENZYMES keeps its 18 attributes under Errica et al.'s
// inputs), the fingerprint form otherwise (node labels only: D&D, NCI1,
// PROTEINS). This is the split of Errica et al.'s configurations
// (config_BaselineChemical.yml, config_BaselineENZYMES.yml).
func AgnosticForm(cfg models.Config) string {
	if cfg.AttrDim > 0 {
		return FormDeepMultisets
	}
	return FormFingerprint
}

// Model is the structure-agnostic baseline of Errica et al. (ICLR 2020)
// computed through Gorgonia: it never reads the edges, only the multiset
// of node inputs x_v = onehot(label_v) ⊕ attrs_v of each graph. Its form
// (AgnosticForm) follows from the dataset; model.hidden is the hidden
// width, and model.dropout must be 0 (the reference models have none).
// The other model fields (k, layers, pool, eps) do not apply and are
// ignored. Like the reference code, the fingerprint form applies a ReLU
// to its output logits.
//
// Every op is one of Gorgonia's own (matrix product, broadcast add,
// rectifier, Hadamard product, sum); the sum over a graph's nodes is the
// product with a 0/1 graph×node pooling matrix (DeepMultisets) or, when
// nothing trainable comes before it (fingerprint), computed when the batch
// is loaded. Graphs are compiled per padded batch size and cached.
type Model struct {
	cfg    models.Config
	form   string
	feat   int             // F = NumLabels + AttrDim
	lins   []*param.Linear // in Params order
	reluAt []bool          // ReLU after lins[i]

	// cache holds the compiled graphs (the runtime's one cache).
	cache *rt.Cache[agnKey, *agnProg]

	// last is the batch of the last training-mode Forward, for Backward.
	last *data.Batch
	// backErr is an error of Backward, returned by the next Forward.
	backErr error

	// dev is the device the model runs on (UseDevice; nil: the CPU).
	dev *devState
}

var _ models.Model = (*Model)(nil)

// New builds the baseline for cfg; the weights are drawn from a
// PCG seeded with seed (PyTorch's default Linear initialisation,
// U(±1/√in), as param.NewLinear).
func New(cfg models.Config, seed uint64, _ kernels.Backend) (*Model, error) {
	m := cfg.Model
	f := cfg.NumLabels + cfg.AttrDim
	if err := rt.CheckConfig(Kind{}, cfg); err != nil {
		return nil, err
	}
	switch {
	case cfg.Task != models.TaskClassification:
		return nil, fmt.Errorf("task %q: the baseline is a graph classifier", cfg.Task)
	case cfg.Out < 1:
		return nil, fmt.Errorf("model output width %d: need at least 1 class", cfg.Out)
	case cfg.NumLabels < 0 || cfg.AttrDim < 0 || f < 1:
		return nil, fmt.Errorf("dataset has %d node labels and %d attributes: the baseline needs node inputs", cfg.NumLabels, cfg.AttrDim)
	}
	init := rand.New(rand.NewPCG(seed, 0xba5e))
	b := &Model{cfg: cfg, form: AgnosticForm(cfg), feat: f, cache: rt.NewCache[agnKey, *agnProg]()}
	h := m.Hidden
	switch b.form {
	case FormFingerprint:
		b.lins = []*param.Linear{param.NewLinear("mlp1", f, h, init), param.NewLinear("mlp2", h, cfg.Out, init)}
		b.reluAt = []bool{true, true}
	default:
		b.lins = []*param.Linear{param.NewLinear("vertex", f, h, init), param.NewLinear("global1", h, h, init), param.NewLinear("global2", h, cfg.Out, init)}
		b.reluAt = []bool{true, true, false}
	}
	return b, nil
}

// Form returns FormFingerprint or FormDeepMultisets.
func (b *Model) Form() string { return b.form }

// Config implements models.Model.
func (b *Model) Config() models.Config { return b.cfg }

// Hops implements models.Model: the baseline reads no hop sets.
func (b *Model) Hops() int { return 0 }

// Params implements models.Model: W and b of every linear map, input first.
func (b *Model) Params() []*param.Param {
	var ps []*param.Param
	for _, l := range b.lins {
		ps = append(ps, l.Params()...)
	}
	return ps
}

// Buffers implements models.Model: the baseline has no buffers.
func (b *Model) Buffers() map[string][]float64 { return map[string][]float64{} }

// Forward implements models.Model. The baseline has no dropout or batch
// statistics, so both modes compute the same outputs; training mode also
// remembers the batch for Backward.
func (b *Model) Forward(bt *data.Batch, train bool) ([]float32, error) {
	b.last = nil
	if err := b.backErr; err != nil {
		b.backErr = nil
		return nil, fmt.Errorf("previous backward pass: %w", err)
	}
	var out []float32
	if b.dev != nil {
		var err error
		if out, err = b.forwardDevice(bt); err != nil {
			return nil, err
		}
	} else {
		p, err := b.program(bt, false)
		if err != nil {
			return nil, err
		}
		if err := p.run(); err != nil {
			return nil, err
		}
		out = p.outputs(bt.NumGraphs * b.cfg.Out)
	}
	if train {
		b.last = bt
	}
	return out, nil
}

// Backward implements models.Model: it adds the gradients of ⟨out, dOut⟩
// for the batch of the last training-mode Forward to Params()[i].G. An
// error (the interface has no error return) makes the next Forward fail.
func (b *Model) Backward(dOut []float32) {
	bt := b.last
	b.last = nil
	if bt == nil {
		b.backErr = fmt.Errorf("Backward without a training-mode Forward")
		return
	}
	if len(dOut) != bt.NumGraphs*b.cfg.Out {
		b.backErr = fmt.Errorf("output gradient has %d values, want %d graphs × %d", len(dOut), bt.NumGraphs, b.cfg.Out)
		return
	}
	p, err := b.program(bt, true)
	if err != nil {
		b.backErr = err
		return
	}
	copy(p.seed, dOut)
	clear(p.seed[len(dOut):])
	if b.dev != nil {
		_, b.backErr = b.runDevice(p, bt.NumGraphs)
		return
	}
	if err := p.run(); err != nil {
		b.backErr = err
		return
	}
	for i, prm := range b.Params() {
		g, err := agnFloats(p.vals.grads[i], len(prm.G))
		if err != nil {
			b.backErr = fmt.Errorf("gradient of %s: %w", prm.Name, err)
			return
		}
		for j, v := range g {
			prm.G[j] += v
		}
	}
}

// agnVals are the values a run reads out of a compiled graph (apart from
// agnProg: a Read target inside it would keep the tape machine alive
// through its finalizer).
type agnVals struct {
	out   G.Value
	grads []G.Value
}

// agnKey identifies a compiled baseline graph: padded rows and whether it
// differentiates.
type agnKey struct {
	N, G int
	grad bool
}

// agnProg is one compiled baseline graph with the backing of its data
// nodes (rewritten for every batch) and the values it reads out.
type agnProg struct {
	g    *G.ExprGraph
	vm   G.VM
	x    []float32 // rows×F node (DeepMultisets) or graph (fingerprint) inputs
	pool []float32 // G×N pooling matrix (DeepMultisets only)
	seed []float32 // G×Out output gradient (grad only)
	// vals are read out of every run; apart from agnProg for the reason
	// given at program.vals.
	vals *agnVals
	// nodes are the nodes a device run binds and reads (device graphs
	// only: compileDevice).
	nodes *devNodes
}

// program returns the compiled graph for batch bt, loaded with its inputs.
func (b *Model) program(bt *data.Batch, grad bool) (*agnProg, error) {
	if err := b.checkBatch(bt); err != nil {
		return nil, err
	}
	key := agnKey{G: rt.RoundUp(bt.NumGraphs, rt.GraphBucket), grad: grad}
	if b.form == FormDeepMultisets {
		key.N = rt.RoundUp(bt.N, rt.NodeBucket)
	}
	p, ok := b.cache.Get(key)
	if !ok {
		compile := b.compile
		if b.dev != nil {
			compile = b.compileDevice
		}
		var err error
		if p, err = compile(key); err != nil {
			return nil, err
		}
		b.cache.Put(key, p, p.g, p.vm)
	}
	b.load(p, bt)
	return p, nil
}

// load writes the batch's inputs into the data nodes of p (zero padding).
func (b *Model) load(p *agnProg, bt *data.Batch) {
	f, nl, ad := b.feat, b.cfg.NumLabels, b.cfg.AttrDim
	clear(p.x)
	// node u's features added to row r of x.
	add := func(r, u int) {
		row := p.x[r*f : (r+1)*f]
		if nl > 0 {
			row[bt.Labels[u]]++
		}
		for a := 0; a < ad; a++ {
			row[nl+a] += bt.Attrs[u*ad+a]
		}
	}
	if b.form == FormFingerprint {
		for j := 0; j < bt.NumGraphs; j++ {
			for u := bt.GraphPtr[j]; u < bt.GraphPtr[j+1]; u++ {
				add(j, int(u))
			}
		}
		return
	}
	clear(p.pool)
	n := len(p.pool) / rt.RoundUp(bt.NumGraphs, rt.GraphBucket) // padded node count
	for j := 0; j < bt.NumGraphs; j++ {
		for u := bt.GraphPtr[j]; u < bt.GraphPtr[j+1]; u++ {
			add(int(u), int(u))
			p.pool[j*n+int(u)] = 1
		}
	}
}

// compile builds the expression graph of key and its tape machine.
func (b *Model) compile(key agnKey) (*agnProg, error) {
	g := G.NewGraph()
	p := &agnProg{g: g, vals: &agnVals{}}
	rows := key.G
	if b.form == FormDeepMultisets {
		rows = key.N
	}
	p.x = make([]float32, rows*b.feat)
	h, params, err := b.layers(agnData(g, "x", p.x, rows, b.feat),
		func(prm *param.Param, rows, cols int) *G.Node { return agnParam(g, prm, rows, cols) },
		func() *G.Node {
			p.pool = make([]float32, key.G*key.N)
			return agnData(g, "pool", p.pool, key.G, key.N)
		})
	if err != nil {
		return nil, err
	}
	G.Read(h, &p.vals.out)
	if key.grad {
		p.seed = make([]float32, key.G*b.cfg.Out)
		prod, err := G.HadamardProd(h, agnData(g, "seed", p.seed, key.G, b.cfg.Out))
		if err != nil {
			return nil, fmt.Errorf("building ⟨out, seed⟩: %w", err)
		}
		cost, err := G.Sum(prod)
		if err != nil {
			return nil, fmt.Errorf("building ⟨out, seed⟩: %w", err)
		}
		grads, err := G.Grad(cost, params...)
		if err != nil {
			return nil, fmt.Errorf("differentiating the baseline graph: %w", err)
		}
		p.vals.grads = make([]G.Value, len(grads))
		for i, gn := range grads {
			G.Read(gn, &p.vals.grads[i])
		}
	}
	p.vm = G.NewTapeMachine(g)
	return p, nil
}

// layers adds the baseline's layers over the input node h to its graph
// and returns the output node and the parameter nodes in Params order:
// node(p, rows, cols) gives the node of parameter p as a rows×cols matrix,
// pool the G×N pooling matrix (DeepMultisets only, made after the first
// layer). The CPU and the device graphs are both built here.
func (b *Model) layers(h *G.Node, node func(p *param.Param, rows, cols int) *G.Node, pool func() *G.Node) (*G.Node, G.Nodes, error) {
	var params G.Nodes
	var err error
	for i, l := range b.lins {
		w := node(l.W, l.In, l.Out)
		bias := node(l.B, 1, l.Out)
		params = append(params, w, bias)
		if h, err = G.Mul(h, w); err != nil {
			return nil, nil, fmt.Errorf("building %s: %w", l.W.Name, err)
		}
		if h, err = G.BroadcastAdd(h, bias, nil, []byte{0}); err != nil {
			return nil, nil, fmt.Errorf("building %s: %w", l.B.Name, err)
		}
		if b.reluAt[i] {
			if h, err = G.Rectify(h); err != nil {
				return nil, nil, fmt.Errorf("building the rectifier after %s: %w", l.W.Name, err)
			}
		}
		if i == 0 && b.form == FormDeepMultisets {
			// Σ_{v ∈ graph j} φ(x_v) as the product with the pooling matrix.
			if h, err = G.Mul(pool(), h); err != nil {
				return nil, nil, fmt.Errorf("building the sum pooling: %w", err)
			}
		}
	}
	return h, params, nil
}

// agnData returns an input node over the backing v (rows×cols), which the
// caller rewrites between runs.
func agnData(g *G.ExprGraph, name string, v []float32, rows, cols int) *G.Node {
	t := tensor.New(tensor.WithShape(rows, cols), tensor.WithBacking(v))
	return G.NewMatrix(g, G.Float32, G.WithShape(rows, cols), G.WithName(name), G.WithValue(t))
}

// agnParam returns an input node bound to the storage of p, viewed as
// rows×cols (the optimiser's in-place updates are seen without a copy).
func agnParam(g *G.ExprGraph, p *param.Param, rows, cols int) *G.Node {
	t := tensor.New(tensor.WithShape(rows, cols), tensor.WithBacking(p.W))
	return G.NewMatrix(g, G.Float32, G.WithShape(rows, cols), G.WithName(p.Name), G.WithValue(t))
}

// run executes the compiled graph once.
func (p *agnProg) run() error {
	p.vm.Reset()
	if err := p.vm.RunAll(); err != nil {
		return fmt.Errorf("running the baseline graph: %w", err)
	}
	if p.vals.out == nil {
		return fmt.Errorf("running the baseline graph: no output value")
	}
	return nil
}

// outputs returns a copy of the first n output values (the real graphs).
func (p *agnProg) outputs(n int) []float32 {
	v, _ := p.vals.out.Data().([]float32)
	return append([]float32(nil), v[:n]...)
}

// agnFloats returns the float32 data of v, checking its length.
func agnFloats(v G.Value, want int) ([]float32, error) {
	if v == nil {
		return nil, fmt.Errorf("no value")
	}
	d, ok := v.Data().([]float32)
	if !ok {
		return nil, fmt.Errorf("value holds %T, want []float32", v.Data())
	}
	if len(d) != want {
		return nil, fmt.Errorf("%d values, want %d", len(d), want)
	}
	return d, nil
}

// checkBatch verifies bt against the model's node inputs.
func (b *Model) checkBatch(bt *data.Batch) error {
	c := b.cfg
	switch {
	case bt == nil:
		return fmt.Errorf("nil batch")
	case bt.N < 1 || bt.NumGraphs < 1:
		return fmt.Errorf("empty batch (%d graphs, %d nodes): the gorgonia path needs at least one node", bt.NumGraphs, bt.N)
	case len(bt.GraphPtr) != bt.NumGraphs+1 || bt.GraphPtr[0] != 0 || int(bt.GraphPtr[bt.NumGraphs]) != bt.N:
		return fmt.Errorf("batch graph pointers (%d) do not cover %d graphs and %d nodes", len(bt.GraphPtr), bt.NumGraphs, bt.N)
	case c.NumLabels > 0 && len(bt.Labels) != bt.N:
		return fmt.Errorf("model expects a node label per node, batch has %d labels for %d nodes", len(bt.Labels), bt.N)
	case c.AttrDim > 0 && (bt.AttrDim != c.AttrDim || len(bt.Attrs) != bt.N*c.AttrDim):
		return fmt.Errorf("model expects %d attributes per node, batch has %d (%d values)", c.AttrDim, bt.AttrDim, len(bt.Attrs))
	}
	for j := 0; j < bt.NumGraphs; j++ {
		if bt.GraphPtr[j+1] < bt.GraphPtr[j] {
			return fmt.Errorf("batch graph pointer decreases at graph %d", j)
		}
	}
	if c.NumLabels > 0 {
		for u, l := range bt.Labels {
			if l < 0 || int(l) >= c.NumLabels {
				return fmt.Errorf("node %d has label %d outside the model's vocabulary [0,%d)", u, l, c.NumLabels)
			}
		}
	}
	return nil
}
