package gg

import (
	"errors"
	"fmt"
	"math/rand/v2"

	G "gorgonia.org/gorgonia"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/models"
	"github.com/spn-project/spn/models/kernels"
	"github.com/spn-project/spn/models/nbop"
	"github.com/spn-project/spn/models/nn"
)

// arch is what differs between the model types built on engine: checking
// a batch against the model's inputs, pointing the per-batch data at a
// batch, building the expression graph and naming the parameters the
// graph's gradients belong to.
type arch interface {
	// checkBatch verifies b (and, for o.lossInGraph and o.seed, the
	// targets and the output gradient) before anything is drawn or built.
	checkBatch(b *data.Batch, o buildOpts) error
	// prepare returns the hop sets the layers aggregate over and sets any
	// other per-batch data of the model; b has passed checkBatch.
	prepare(b *data.Batch) ([]data.CSR, error)
	// buildGraph constructs the expression graph for the padded sizes of
	// key (compiled by the caller).
	buildGraph(key progKey, bd *batchData) (*program, error)
	// gradParams returns the parameters of p's gradients, in order.
	gradParams(p *program) []*nn.Param
}

// engine is the machinery Model and Competitor share: the input encoder
// and layer-sum readout parameters, the dropout generator, the cache of
// compiled graphs, the training step and evaluation, and the models.Model
// adaptor (Forward, Backward). The embedding type supplies arch.
type engine struct {
	arch    arch
	cfg     models.Config
	be      kernels.Backend
	enc     *nn.Encoder
	readout []*nn.Linear
	rng     *rand.Rand // dropout masks
	ar      *arena     // node-sized buffers, recycled from run to run

	// cache holds the compiled graphs by padded sizes and kind, cacheOrder
	// their insertion order (the oldest is dropped first).
	cache      map[progKey]*program
	cacheOrder []progKey
	cacheSize  int // MaxCachedGraphs; 0 disables the cache
	// cacheFloats is Σ N·hidden over the cached graphs, kept at most
	// maxFloats.
	cacheFloats, maxFloats int
	// CacheHits and CacheMisses count the compiled graphs reused and built.
	CacheHits, CacheMisses int

	// pending is the training-mode batch of the last Forward, for the
	// models.Model adaptor's Backward.
	pending *pendingForward
	// backErr is an error of the adaptor's Backward, returned by the next
	// Forward (Backward has no error return).
	backErr error
}

// newEngine returns the engine of a model built for cfg from seed: the
// dropout generator of models.SPN and an empty cache of at most
// MaxCachedGraphs graphs and maxFloats node floats. The caller sets arch,
// enc and readout.
func newEngine(cfg models.Config, seed uint64, be kernels.Backend, maxFloats int) engine {
	return engine{cfg: cfg, be: be, rng: rand.New(rand.NewPCG(seed, 0xd209)), ar: &arena{},
		cache: map[progKey]*program{}, cacheSize: MaxCachedGraphs, maxFloats: maxFloats}
}

// checkConfig verifies cfg with its kind's Check (the one place of a
// kind's constraints) and the dataset-side fields every model reads.
func checkConfig(cfg models.Config) error {
	k, err := Kinds().Lookup(cfg.Model.Kind)
	if err != nil {
		return err
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
func (e *engine) Config() models.Config { return e.cfg }

// Step runs one training step on b: a training-mode forward (batch
// statistics, which also update the running statistics, and dropout), the
// loss inside the graph (cross-entropy or MSE, mean over the batch) and its
// backward; the parameter gradients are added to Params()[i].G. It returns
// the loss and the NumGraphs×Out outputs.
func (e *engine) Step(b *data.Batch) (loss float64, out []float32, err error) {
	// Check before drawing the dropout masks, so a bad batch consumes no
	// randomness.
	if err := e.arch.checkBatch(b, buildOpts{lossInGraph: true}); err != nil {
		return 0, nil, err
	}
	p, err := e.build(b, buildOpts{train: true, lossInGraph: true, updateStats: true, masks: e.drawMasks(b.NumGraphs)})
	if err != nil {
		return 0, nil, err
	}
	if err := p.run(); err != nil {
		return 0, nil, err
	}
	if err := p.accumulate(e.arch.gradParams(p)); err != nil {
		return 0, nil, err
	}
	lv, ok := p.vals.loss.Data().(float32)
	if !ok {
		return 0, nil, fmt.Errorf("loss node holds %T, want float32", p.vals.loss.Data())
	}
	return float64(lv), p.outputs(e.cfg.Out), nil
}

// Predict returns the NumGraphs×Out outputs for b in evaluation mode
// (running statistics, no dropout); it changes no state.
func (e *engine) Predict(b *data.Batch) ([]float32, error) {
	p, err := e.build(b, buildOpts{})
	if err != nil {
		return nil, err
	}
	if err := p.run(); err != nil {
		return nil, err
	}
	return p.outputs(e.cfg.Out), nil
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
func (e *engine) Forward(b *data.Batch, train bool) ([]float32, error) {
	e.pending = nil
	if err := e.backErr; err != nil {
		e.backErr = nil
		return nil, fmt.Errorf("previous backward pass: %w", err)
	}
	if !train {
		return e.Predict(b)
	}
	if err := e.arch.checkBatch(b, buildOpts{}); err != nil {
		return nil, err
	}
	masks := e.drawMasks(b.NumGraphs)
	p, err := e.build(b, buildOpts{train: true, updateStats: true, masks: masks})
	if err != nil {
		return nil, err
	}
	if err := p.run(); err != nil {
		return nil, err
	}
	out := p.outputs(e.cfg.Out)
	e.pending = &pendingForward{b: b, masks: masks, out: out}
	return out, nil
}

// Backward implements models.Model: it accumulates the parameter gradients
// of ⟨out, dOut⟩ for the last training-mode Forward. Backward after an
// evaluation-mode Forward, or any error (the interface has no error
// return), makes the next Forward fail.
func (e *engine) Backward(dOut []float32) {
	pf := e.pending
	e.pending = nil
	if pf == nil {
		e.backErr = fmt.Errorf("Backward without a training-mode Forward")
		return
	}
	p, err := e.build(pf.b, buildOpts{train: true, seed: dOut, masks: pf.masks})
	if err == nil {
		err = p.run()
	}
	if err == nil {
		err = p.accumulate(e.arch.gradParams(p))
	}
	e.backErr = err
}

// drawMasks draws the inverted-dropout masks of the T+1 readouts for g
// graphs, in the order and from the generator of models.SPN (nil when
// dropout is off).
func (e *engine) drawMasks(g int) [][]float32 {
	pd := e.cfg.Model.Dropout
	if pd <= 0 {
		return nil
	}
	keep := float32(1 / (1 - pd))
	masks := make([][]float32, len(e.readout))
	for t := range masks {
		mk := make([]float32, g*e.cfg.Out)
		for i := range mk {
			if e.rng.Float64() >= pd {
				mk[i] = keep
			}
		}
		masks[t] = mk
	}
	return masks
}

// keyFor returns the key of the compiled graph that serves batch b.
func (e *engine) keyFor(b *data.Batch, o buildOpts) progKey {
	return progKey{N: roundUp(b.N, NodeBucket), G: roundUp(b.NumGraphs, GraphBucket),
		train: o.train, update: o.train && o.updateStats, dropout: o.train && o.masks != nil,
		loss: o.lossInGraph, seeded: o.seed != nil}
}

// build returns the compiled graph of the model for batch b: a cached one
// of the same padded sizes and kind, re-pointed at b, or a new one.
func (e *engine) build(b *data.Batch, o buildOpts) (*program, error) {
	if err := e.arch.checkBatch(b, o); err != nil {
		return nil, err
	}
	hops, err := e.arch.prepare(b)
	if err != nil {
		return nil, err
	}
	key := e.keyFor(b, o)
	p, ok := e.cache[key]
	if ok {
		e.CacheHits++
		p.bd.set(b, hops)
		if p.lossData != nil {
			p.lossData.G, p.lossData.Target = b.NumGraphs, b.Target
		}
	} else {
		e.CacheMisses++
		if p, err = e.arch.buildGraph(key, newBatchData(b, hops)); err != nil {
			return nil, err
		}
		p.vm = G.NewTapeMachine(p.g)
		size := key.N * e.cfg.Model.Hidden
		if e.cacheSize > 0 && size <= e.maxFloats {
			for len(e.cacheOrder) > 0 && (len(e.cacheOrder) >= e.cacheSize || e.cacheFloats+size > e.maxFloats) {
				old := e.cacheOrder[0]
				e.cache[old].vm.Close()
				delete(e.cache, old)
				e.cacheOrder = e.cacheOrder[1:]
				e.cacheFloats -= old.N * e.cfg.Model.Hidden
			}
			e.cache[key] = p
			e.cacheOrder = append(e.cacheOrder, key)
			e.cacheFloats += size
		}
	}
	// Per-batch inputs: masks and the output gradient, zero in the padding.
	c := e.cfg.Out
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

// newProgram starts the expression graph of key over the batch data bd.
func (e *engine) newProgram(key progKey, bd *batchData) (*builder, *program, env) {
	bdr := &builder{g: G.NewGraph()}
	return bdr, &program{key: key, g: bdr.g, bd: bd, ar: e.ar, vals: &readVals{}}, env{Backend: e.be, ar: e.ar}
}

// param returns a new parameter node of p's graph bound to the storage of
// prm (the first binding error is kept in bdr).
func (p *program) param(bdr *builder, prm *nn.Param) *G.Node {
	x := G.NewTensor(bdr.g, G.Float32, len(prm.Shape), G.WithShape(prm.Shape...), G.WithName(prm.Name))
	p.params = append(p.params, paramBinding{node: x, p: prm})
	if bdr.err == nil {
		bdr.err = bindParam(&p.params[len(p.params)-1])
	}
	return x
}

// encode adds the input encoding h⁰ = Enc(labels, attrs) to p's graph
// (parameter nodes in the order of the encoder's Params).
func (e *engine) encode(bdr *builder, p *program, be env, bd *batchData) *G.Node {
	var encIn G.Nodes
	for _, prm := range e.enc.Params() {
		encIn = append(encIn, p.param(bdr, prm))
	}
	return bdr.op(be, newEncoder("enc", be, bd, e.cfg.NumLabels, e.cfg.AttrDim, p.key.N, e.cfg.Model.Hidden), encIn...)
}

// finish adds to p's graph the readout out = Σ_t Dropout(Wᵗ·pool(hᵗ) + bᵗ)
// over the node states hs (encoder output first), then the loss (or
// ⟨out, seed⟩) and its symbolic gradient when key asks for one; what names
// the graph in errors.
func (e *engine) finish(bdr *builder, p *program, be env, bd *batchData, hs []*G.Node, what string) (*program, error) {
	cfg, key := e.cfg, p.key
	N, G_, d, c := key.N, key.G, cfg.Model.Hidden, cfg.Out
	var out *G.Node
	for t, ht := range hs {
		name := fmt.Sprintf("readout%d", t)
		w, bias := p.param(bdr, e.readout[t].W), p.param(bdr, e.readout[t].B)
		pool, err := newPool(name+".pool", be, bd, cfg.Model.Pool, N, G_, d)
		if err != nil {
			return nil, err
		}
		r := bdr.op(be, pool, ht)
		r = bdr.op(be, newLinear(name+".lin", be, bd, true, G_, d, c), r, w, bias)
		if key.dropout {
			mk := make([]float32, G_*c)
			p.masks = append(p.masks, mk)
			r = bdr.op(be, newDropout(name+".dropout", G_, c), r, bdr.data(name+".dropout_mask", mk, G_, c))
		}
		if out == nil || bdr.err != nil {
			out = r
			continue
		}
		if out, err = G.Add(out, r); err != nil {
			return nil, fmt.Errorf("building the readout sum: %w", err)
		}
	}
	if bdr.err != nil {
		return nil, bdr.err
	}

	G.Read(out, &p.vals.out)
	var cost *G.Node
	switch {
	case key.loss && cfg.Task == models.TaskClassification:
		cost = bdr.op(be, newCrossEntropy("loss.cross_entropy", bd, G_, c), out)
	case key.loss && cfg.Task == models.TaskBinary:
		p.lossData = &nbop.Data{G: bd.g, Target: bd.target}
		cost = bdr.op(be, nbop.BCE{ID: "loss.bce", D: p.lossData, G: G_, T: c}, out)
	case key.loss:
		cost = bdr.op(be, newMSE("loss.mse", bd, G_, c), out)
	case key.seeded:
		p.seed = make([]float32, G_*c)
		cost = bdr.op(be, newDot("loss.dot_seed", G_, c), out, bdr.data("seed", p.seed, G_, c))
	}
	if bdr.err != nil {
		return nil, bdr.err
	}
	if cost != nil {
		G.Read(cost, &p.vals.loss)
		wrt := make(G.Nodes, len(p.params))
		for i, pb := range p.params {
			wrt[i] = pb.node
		}
		grads, err := G.Grad(cost, wrt...)
		if err != nil {
			return nil, fmt.Errorf("differentiating the %s graph: %w", what, err)
		}
		p.vals.grads = make([]G.Value, len(grads))
		for i, gn := range grads {
			G.Read(gn, &p.vals.grads[i])
		}
		p.hasGrad = true
	}
	return p, nil
}

// mlp is the Linear → BatchNorm → ReLU → Linear → BatchNorm → ReLU of an
// SPN, GIN, GCN or GAT layer (the nn structs hold the parameters, with the
// hand-written model's names and initialisation).
type mlp struct {
	lin1     *nn.Linear
	bn1      *nn.BatchNormReLU
	lin2     *nn.Linear
	bn2      *nn.BatchNormReLU
	st1, st2 *bnStats
}

// newMLP returns the MLP of layer name, drawing lin1 and then lin2 from
// init as models.newSPN does.
func newMLP(name string, d int, init *rand.Rand) mlp {
	var l mlp
	l.lin1, l.bn1 = nn.NewLinear(name+".lin1", d, d, init), nn.NewBatchNormReLU(name+".bn1", d)
	l.lin2, l.bn2 = nn.NewLinear(name+".lin2", d, d, init), nn.NewBatchNormReLU(name+".bn2", d)
	l.st1 = &bnStats{RunMean: l.bn1.RunMean, RunVar: l.bn1.RunVar, Momentum: l.bn1.Momentum, Eps: l.bn1.Eps}
	l.st2 = &bnStats{RunMean: l.bn2.RunMean, RunVar: l.bn2.RunVar, Momentum: l.bn2.Momentum, Eps: l.bn2.Eps}
	return l
}

// params returns lin1, bn1, lin2 and bn2's parameters, in that order.
func (l *mlp) params() []*nn.Param {
	ps := l.lin1.Params()
	ps = append(ps, l.bn1.Params()...)
	ps = append(ps, l.lin2.Params()...)
	return append(ps, l.bn2.Params()...)
}

// addBuffers adds the running statistics of layer t (1-based) to b, under
// the names models.SPN uses.
func (l *mlp) addBuffers(b map[string][]float64, t int) {
	b[fmt.Sprintf("layer%d.bn1.running_mean", t)] = l.st1.RunMean
	b[fmt.Sprintf("layer%d.bn1.running_var", t)] = l.st1.RunVar
	b[fmt.Sprintf("layer%d.bn2.running_mean", t)] = l.st2.RunMean
	b[fmt.Sprintf("layer%d.bn2.running_var", t)] = l.st2.RunVar
}

// mlpNodes are the parameter nodes of an mlp in one graph: W₁, b₁, γ₁, β₁,
// W₂, b₂, γ₂, β₂.
type mlpNodes [8]*G.Node

// bind returns the parameter nodes of l, made by param in params order.
func (l *mlp) bind(param func(*nn.Param) *G.Node) mlpNodes {
	return mlpNodes{param(l.lin1.W), param(l.lin1.B), param(l.bn1.Gamma), param(l.bn1.Beta),
		param(l.lin2.W), param(l.lin2.B), param(l.bn2.Gamma), param(l.bn2.Beta)}
}

// apply adds the MLP of layer name over the N×d node states x to bdr's
// graph, with batch statistics and their update as key asks.
func (l *mlp) apply(bdr *builder, be env, bd *batchData, key progKey, name string, x *G.Node, n mlpNodes) *G.Node {
	N, d := key.N, l.lin1.Out
	z := bdr.op(be, newLinear(name+".lin1", be, bd, false, N, d, d), x, n[0], n[1])
	z = bdr.op(be, newBNReLU(name+".bn1", be, bd, l.st1, key.train, key.update, N, d), z, n[2], n[3])
	z = bdr.op(be, newLinear(name+".lin2", be, bd, false, N, d, d), z, n[4], n[5])
	return bdr.op(be, newBNReLU(name+".bn2", be, bd, l.st2, key.train, key.update, N, d), z, n[6], n[7])
}
