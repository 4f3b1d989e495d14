package rt

import (
	"errors"
	"fmt"
	"math/rand/v2"

	G "gorgonia.org/gorgonia"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/models"
	"github.com/spn-project/spn/models/kernels"
	"github.com/spn-project/spn/models/nbop"
	"github.com/spn-project/spn/models/param"
)

// Arch is what a model kind supplies to the Engine: checking a batch
// against the model's inputs, pointing the per-batch data at a batch,
// building the expression graph and naming the parameters the graph's
// gradients belong to.
type Arch interface {
	// CheckBatch verifies b (and the targets and output gradient o asks
	// for) before anything is drawn or built; most kinds call the
	// package's CheckBatch.
	CheckBatch(b *data.Batch, o Opts) error
	// Prepare returns the hop sets the layers aggregate over
	// (BatchData.Hops) and sets any other per-batch data of the model;
	// b has passed CheckBatch.
	Prepare(b *data.Batch) ([]data.CSR, error)
	// BuildGraph constructs the expression graph for the padded sizes of
	// key (the Engine compiles it): NewProgram, Encode, the kind's
	// layers, Finish.
	BuildGraph(key Key, bd *BatchData) (*Program, error)
	// GradParams returns the parameters of p's gradients, in order.
	GradParams(p *Program) []*param.Param
}

// Engine is the machinery every Gorgonia model kind shares: the input
// encoder and layer-sum readout parameters, the dropout generator, the
// cache of compiled graphs, the training step and evaluation, and the
// models.Model adaptor (Forward, Backward). Net.Init builds a kind's
// Engine with NewEngine, sets Arch to the kind's model and fills Enc and
// Readout (in the order of the initialisation draws).
type Engine struct {
	Arch Arch
	// Cfg is the configuration the model was built for.
	Cfg models.Config
	be  kernels.Backend
	// Enc is the input encoder h⁰ = Enc(labels, attrs); Readout are the
	// T+1 per-layer readouts (encoder output first).
	Enc     *param.Encoder
	Readout []*param.Linear
	// ReadoutNorm are, with model.layer_norm, the layer norms of the
	// readouts t = 1..T (nil without).
	ReadoutNorm []*param.LayerNorm
	rng         *rand.Rand // dropout masks
	ar          *arena     // node-sized buffers, recycled from run to run

	// cache holds the compiled graphs by padded sizes and kind.
	cache *Cache[Key, *Program]
	// CacheHits and CacheMisses count the compiled graphs reused and built.
	CacheHits, CacheMisses int

	// pending is the training-mode batch of the last Forward, for the
	// models.Model adaptor's Backward.
	pending *pendingForward
	// backErr is an error of the adaptor's Backward, returned by the next
	// Forward (Backward has no error return).
	backErr error
	// dev is the device the model trains on (UseDevice; nil: the CPU).
	dev *deviceState
}

// NewEngine returns the Engine of a model built for cfg from seed: the
// dropout generator of the reference SPN (models/internal/testkit/ref) and
// an empty cache (NewCache). The caller sets Arch, Enc and Readout.
func NewEngine(cfg models.Config, seed uint64, be kernels.Backend) Engine {
	return Engine{Cfg: cfg, be: be, rng: param.MaskStream(seed), ar: &arena{},
		cache: NewCache[Key, *Program]()}
}

// CheckConfig verifies cfg with the Check of kind k (the one place of a
// kind's constraints) and the dataset-side fields every model reads; a
// kind's constructor calls it first.
func CheckConfig(k models.Kind, cfg models.Config) error {
	if cfg.Model.Kind != k.Name() {
		return fmt.Errorf("model.kind %q: this constructor builds kind %s", cfg.Model.Kind, k.Name())
	}
	var errs []error
	for _, fe := range k.Check(cfg.Model, models.ConfigInfo(cfg)) {
		errs = append(errs, fe)
	}
	switch {
	case cfg.Out < 1:
		errs = append(errs, fmt.Errorf("model output width %d: need at least 1", cfg.Out))
	case cfg.Task != models.TaskClassification && cfg.Task != models.TaskRegression && cfg.Task != models.TaskBinary:
		errs = append(errs, fmt.Errorf("unknown task %q", cfg.Task))
	}
	return errors.Join(errs...)
}

// Config implements models.Model.
func (e *Engine) Config() models.Config { return e.Cfg }

// Step runs one training step on b: a training-mode forward (batch
// statistics, which also update the running statistics, and dropout), the
// loss inside the graph (cross-entropy or MSE, mean over the batch) and its
// backward; the parameter gradients are added to Params()[i].G. It returns
// the loss and the NumGraphs×Out outputs.
func (e *Engine) Step(b *data.Batch) (loss float64, out []float32, err error) {
	p, err := e.stepProgram(b, false)
	if err != nil {
		return 0, nil, err
	}
	if e.dev != nil {
		return e.dev.step(p, e.Arch.GradParams(p), e.Cfg.Out)
	}
	if err := p.run(); err != nil {
		return 0, nil, err
	}
	if err := p.accumulate(e.Arch.GradParams(p)); err != nil {
		return 0, nil, err
	}
	lv, ok := p.vals.loss.Data().(float32)
	if !ok {
		return 0, nil, fmt.Errorf("loss node holds %T, want float32", p.vals.loss.Data())
	}
	return float64(lv), p.outputs(e.Cfg.Out), nil
}

// StepAsync implements models.AsyncStepper: on the device path (UseDevice)
// it is Step without the host waiting for the device. The batch goes up
// from page-locked staging memory, the loss and the outputs come back
// into page-locked memory (asynchronous copies, enqueued in the step
// after its kernels), and resolve waits for an event recorded after
// them and returns what Step would, bit for bit. StepAsync returns once
// the step is enqueued, so the caller can prepare and enqueue the next
// step, and DeviceAdam.Step, before it resolves this one. Without a
// DeviceAdam the gradients come back synchronously, so the host waits
// for the step anyway. On the CPU it is Step, resolved.
func (e *Engine) StepAsync(b *data.Batch) (resolve func() (loss float64, out []float32, err error), err error) {
	if e.dev == nil {
		loss, out, err := e.Step(b)
		if err != nil {
			return nil, err
		}
		return func() (float64, []float32, error) { return loss, out, nil }, nil
	}
	p, err := e.stepProgram(b, true)
	if err != nil {
		return nil, err
	}
	return e.dev.stepAsync(p, e.Arch.GradParams(p), e.Cfg.Out)
}

// stepProgram checks b and returns the training step's graph for it,
// prepared (async: the batch sent through the page-locked staging).
func (e *Engine) stepProgram(b *data.Batch, async bool) (*Program, error) {
	// Check before drawing the dropout masks, so a bad batch consumes no
	// randomness.
	if err := e.Arch.CheckBatch(b, Opts{lossInGraph: true}); err != nil {
		return nil, err
	}
	return e.program(b, Opts{train: true, lossInGraph: true, updateStats: true, masks: e.drawMasks(b.NumGraphs), async: async})
}

// Predict returns the NumGraphs×Out outputs for b in evaluation mode
// (running statistics, no dropout); it changes no state.
func (e *Engine) Predict(b *data.Batch) ([]float32, error) {
	p, err := e.build(b, Opts{})
	if err != nil {
		return nil, err
	}
	if e.dev != nil {
		return e.dev.forward(p, e.Cfg.Out)
	}
	if err := p.run(); err != nil {
		return nil, err
	}
	return p.outputs(e.Cfg.Out), nil
}

// pendingForward is what the models.Model adaptor keeps between Forward and
// Backward.
type pendingForward struct {
	b     *data.Batch
	masks [][]float32
	out   []float32
}

// Forward implements models.Model. In evaluation mode it is Predict. In
// training mode it runs a training-mode forward graph (updating the running
// statistics and drawing the dropout masks); Backward then runs a second
// graph that repeats the forward with the same masks and batch statistics
// (without updating the running statistics again) and differentiates
// ⟨out, dOut⟩. The adaptor therefore pays one extra forward per step; Step
// is the fast path.
func (e *Engine) Forward(b *data.Batch, train bool) ([]float32, error) {
	e.pending = nil
	if err := e.backErr; err != nil {
		e.backErr = nil
		return nil, fmt.Errorf("previous backward pass: %w", err)
	}
	if !train {
		return e.Predict(b)
	}
	if err := e.Arch.CheckBatch(b, Opts{}); err != nil {
		return nil, err
	}
	masks := e.drawMasks(b.NumGraphs)
	p, err := e.program(b, Opts{train: true, updateStats: true, masks: masks})
	if err != nil {
		return nil, err
	}
	var out []float32
	if e.dev != nil {
		if out, err = e.dev.forward(p, e.Cfg.Out); err != nil {
			return nil, err
		}
	} else {
		if err := p.run(); err != nil {
			return nil, err
		}
		out = p.outputs(e.Cfg.Out)
	}
	e.pending = &pendingForward{b: b, masks: masks, out: out}
	return out, nil
}

// Backward implements models.Model: it accumulates the parameter gradients
// of ⟨out, dOut⟩ for the last training-mode Forward. Backward after an
// evaluation-mode Forward, or any error (the interface has no error
// return), makes the next Forward fail.
func (e *Engine) Backward(dOut []float32) {
	pf := e.pending
	e.pending = nil
	if pf == nil {
		e.backErr = fmt.Errorf("Backward without a training-mode Forward")
		return
	}
	p, err := e.build(pf.b, Opts{train: true, seed: dOut, masks: pf.masks})
	switch {
	case err != nil:
	case e.dev != nil:
		_, _, err = e.dev.step(p, e.Arch.GradParams(p), 0)
	default:
		if err = p.run(); err == nil {
			err = p.accumulate(e.Arch.GradParams(p))
		}
	}
	e.backErr = err
}

// drawMasks draws the inverted-dropout masks of the T+1 readouts for g
// graphs from the model's generator (DrawMasks).
func (e *Engine) drawMasks(g int) [][]float32 {
	return DrawMasks(e.rng, e.Cfg.Model.Dropout, len(e.Readout), g, e.Cfg.Out)
}

// DrawMasks draws from rng the inverted-dropout masks of a step at rate
// p: one per readout term, g×out values each, 1/(1−p) with probability
// 1−p and 0 otherwise, term by term and row-major (nil when p ≤ 0).
func DrawMasks(rng *rand.Rand, p float64, readouts, g, out int) [][]float32 {
	if p <= 0 {
		return nil
	}
	keep := float32(1 / (1 - p))
	masks := make([][]float32, readouts)
	for t := range masks {
		mk := make([]float32, g*out)
		for i := range mk {
			if rng.Float64() >= p {
				mk[i] = keep
			}
		}
		masks[t] = mk
	}
	return masks
}

// keyFor returns the key of the compiled graph that serves batch b.
func (e *Engine) keyFor(b *data.Batch, o Opts) Key {
	return Key{N: RoundUp(b.N, NodeBucket), G: RoundUp(b.NumGraphs, GraphBucket),
		train: o.train, update: o.train && o.updateStats, dropout: o.train && o.masks != nil,
		loss: o.lossInGraph, seeded: o.seed != nil}
}

// build checks b (CheckBatch with o) and returns its compiled graph
// (program).
func (e *Engine) build(b *data.Batch, o Opts) (*Program, error) {
	if err := e.Arch.CheckBatch(b, o); err != nil {
		return nil, err
	}
	return e.program(b, o)
}

// program returns the compiled graph of the model for batch b, which has
// passed CheckBatch with the inputs o asks for: a cached one of the same
// padded sizes and kind, re-pointed at b, or a new one. A batch is
// checked once a step: checking reads every hop set entry, as much work
// on the host as packing them for the device.
func (e *Engine) program(b *data.Batch, o Opts) (*Program, error) {
	hops, err := e.Arch.Prepare(b)
	if err != nil {
		return nil, err
	}
	key := e.keyFor(b, o)
	p, ok := e.cache.Get(key)
	if ok {
		e.CacheHits++
		p.bd.set(b, hops)
		if p.lossData != nil {
			p.lossData.G, p.lossData.Target = b.NumGraphs, b.Target
		}
	} else {
		e.CacheMisses++
		if p, err = e.Arch.BuildGraph(key, NewBatchData(b, hops)); err != nil {
			return nil, err
		}
		if e.dev != nil {
			p.vm = G.NewTapeMachine(p.g, G.WithEngine(e.dev.e))
		} else {
			p.vm = G.NewTapeMachine(p.g)
		}
		e.cache.Put(key, p, p.g, p.vm)
	}
	if e.dev != nil {
		return p, e.dev.prepare(e.Arch, p, o)
	}
	// Per-batch inputs: masks and the output gradient, zero in the padding.
	c := e.Cfg.Out
	for t, mk := range p.masks {
		copy(mk, o.masks[t][:b.NumGraphs*c])
		clear(mk[b.NumGraphs*c:])
	}
	if p.seed != nil {
		copy(p.seed, o.seed)
		clear(p.seed[len(o.seed):])
	}
	for i := range p.params {
		pb := &p.params[i]
		if pb.w != &pb.p.W[0] {
			if err := bindParam(pb); err != nil {
				return nil, err
			}
		}
	}
	return p, nil
}

// NewProgram starts the expression graph of key over the batch data bd.
func (e *Engine) NewProgram(key Key, bd *BatchData) (*Builder, *Program, Env) {
	bdr := &Builder{g: G.NewGraph()}
	env := Env{Backend: e.be, ar: e.ar}
	if e.dev != nil {
		env.Dev, env.dev = e.dev.e, e.dev
	}
	return bdr, &Program{key: key, g: bdr.g, bd: bd, ar: e.ar, vals: &readVals{}, dev: e.dev}, env
}

// Param returns a new parameter node of p's graph bound to the storage of
// prm (the first binding error is kept in bdr).
func (p *Program) Param(bdr *Builder, prm *param.Param) *G.Node {
	x := G.NewTensor(bdr.g, G.Float32, len(prm.Shape), G.WithShape(prm.Shape...), G.WithName(prm.Name))
	p.params = append(p.params, paramBinding{node: x, p: prm})
	if bdr.err == nil {
		if p.dev != nil {
			bdr.err = p.dev.bind(&p.params[len(p.params)-1])
		} else {
			bdr.err = bindParam(&p.params[len(p.params)-1])
		}
	}
	return x
}

// Encode adds the input encoding h⁰ = Enc(labels, attrs) to p's graph
// (parameter nodes in the order of the encoder's Params).
func (e *Engine) Encode(bdr *Builder, p *Program, be Env, bd *BatchData) *G.Node {
	var encIn G.Nodes
	for _, prm := range e.Enc.Params() {
		encIn = append(encIn, p.Param(bdr, prm))
	}
	return bdr.Op(be, newEncoder("enc", be, bd, encoderShape{NumLabels: e.Cfg.NumLabels, AttrDim: e.Cfg.AttrDim, N: p.key.N, D: e.Cfg.Model.Hidden}), encIn...)
}

// NewReadout draws the readout's maps Wᵗ, bᵗ (t = 0..layers, named
// readoutT, as Finish binds them) from init: the last parameters a kind
// draws, after its layers.
func NewReadout(cfg models.Config, init *rand.Rand) []*param.Linear {
	var r []*param.Linear
	for t := 0; t <= cfg.Model.Layers; t++ {
		r = append(r, param.NewLinear(fmt.Sprintf("readout%d", t), cfg.Model.Hidden, cfg.Out, init))
	}
	return r
}

// NewReadoutNorms returns, with model.layer_norm, the layer norms of the
// readouts t = 1..layers (named readoutT.ln, γ = 1, β = 0: no draws from
// the initialisation generator), else nil.
func NewReadoutNorms(cfg models.Config) []*param.LayerNorm {
	if !cfg.Model.LayerNorm {
		return nil
	}
	var r []*param.LayerNorm
	for t := 1; t <= cfg.Model.Layers; t++ {
		r = append(r, param.NewLayerNorm(fmt.Sprintf("readout%d.ln", t), cfg.Model.Hidden))
	}
	return r
}

// Finish adds to p's graph the readout out = Σ_t Dropout(Wᵗ·pool(hᵗ) + bᵗ)
// (with model.layer_norm, Σ_t Dropout(Wᵗ·LNᵗ(pool(hᵗ)) + bᵗ), LN⁰ the
// identity) over the node states hs (encoder output first), one op (layerSum),
// then the loss (or ⟨out, seed⟩) and its symbolic gradient when key asks
// for one; what names the graph in errors.
func (e *Engine) Finish(bdr *Builder, p *Program, be Env, bd *BatchData, hs []*G.Node, what string) (*Program, error) {
	cfg, key := e.Cfg, p.key
	N, G_, d, c := key.N, key.G, cfg.Model.Hidden, cfg.Out
	if len(hs) != len(e.Readout) {
		return nil, fmt.Errorf("%d node states for %d readouts", len(hs), len(e.Readout))
	}
	in := append([]*G.Node(nil), hs...)
	for t := range hs {
		in = append(in, p.Param(bdr, e.Readout[t].W), p.Param(bdr, e.Readout[t].B))
	}
	norm := e.ReadoutNorm != nil
	if norm && len(e.ReadoutNorm) != len(hs)-1 {
		return nil, fmt.Errorf("%d readout layer norms for %d readouts", len(e.ReadoutNorm), len(hs))
	}
	for _, ln := range e.ReadoutNorm {
		in = append(in, p.Param(bdr, ln.Gamma), p.Param(bdr, ln.Beta))
	}
	if key.dropout {
		for t := range hs {
			mk := make([]float32, G_*c)
			p.masks = append(p.masks, mk)
			mn := bdr.Data(fmt.Sprintf("readout%d.dropout_mask", t), mk, G_, c)
			p.maskNodes = append(p.maskNodes, mn)
			in = append(in, mn)
		}
	}
	ls, err := newLayerSum("readout", be, bd, layerSumOpts{Pool: cfg.Model.Pool, T1: len(hs), Norm: norm, Dropout: key.dropout, N: N, G: G_, D: d, C: c})
	if err != nil {
		return nil, err
	}
	out := bdr.Op(be, ls, in...)
	return e.FinishOut(bdr, p, be, bd, out, what)
}

// FinishOut adds to p's graph what follows the readout out (graphs ×
// outputs): the loss (or ⟨out, seed⟩) and its symbolic gradient when the
// key asks for one; what names the graph in errors. Finish calls it after
// the layer readout; a kind with a readout of its own calls it directly.
func (e *Engine) FinishOut(bdr *Builder, p *Program, be Env, bd *BatchData, out *G.Node, what string) (*Program, error) {
	cfg, key := e.Cfg, p.key
	G_, c := key.G, cfg.Out
	if bdr.err != nil {
		return nil, bdr.err
	}

	if p.dev == nil {
		G.Read(out, &p.vals.out)
	} else {
		p.outNode = out
	}
	var cost *G.Node
	switch {
	case key.loss && cfg.Task == models.TaskClassification:
		cost = bdr.Op(be, newCrossEntropy("loss.cross_entropy", bd, G_, c), out)
	case key.loss && cfg.Task == models.TaskBinary:
		p.lossData = &nbop.Data{G: bd.G, Target: bd.Target}
		cost = bdr.Op(be, nbop.BCE{ID: "loss.bce", D: p.lossData, G: G_, T: c}, out)
	case key.loss:
		cost = bdr.Op(be, newMSE("loss.mse", bd, G_, c), out)
	case key.seeded:
		p.seed = make([]float32, G_*c)
		p.seedNode = bdr.Data("seed", p.seed, G_, c)
		cost = bdr.Op(be, newDot("loss.dot_seed", G_, c), out, p.seedNode)
	}
	if bdr.err != nil {
		return nil, bdr.err
	}
	if cost != nil {
		if p.dev == nil {
			G.Read(cost, &p.vals.loss)
		} else {
			p.lossNode = cost
		}
		wrt := make(G.Nodes, len(p.params))
		for i, pb := range p.params {
			wrt[i] = pb.node
		}
		grads, err := G.Grad(cost, wrt...)
		if err != nil {
			return nil, fmt.Errorf("differentiating the %s graph: %w", what, err)
		}
		if p.dev != nil {
			p.gradNodes = grads
		} else {
			p.vals.grads = make([]G.Value, len(grads))
			for i, gn := range grads {
				G.Read(gn, &p.vals.grads[i])
			}
		}
		p.hasGrad = true
	}
	return p, nil
}

// LimitCache bounds the model's compiled-graph cache to graphs graphs
// (0: none, every batch builds and compiles its graph) and bytes
// estimated bytes (GraphBytes), dropping the oldest beyond them.
func (e *Engine) LimitCache(graphs int, bytes int64) { e.cache.Limit(graphs, bytes) }

// CachedGraphs returns the number of compiled graphs the model keeps and
// their estimated bytes.
func (e *Engine) CachedGraphs() (int, int64) { return e.cache.Len(), e.cache.Bytes() }

var _ models.Backed = (*Engine)(nil)

// Backend returns the kernels the model computes with (models.Backed).
func (e *Engine) Backend() kernels.Backend { return e.be }

// ArenaBytes returns the bytes the model's buffer arena holds and the most
// bytes one run of a compiled graph has taken from it.
func (e *Engine) ArenaBytes() (held, run int64) { return e.ar.Bytes(), e.ar.Requested() }
