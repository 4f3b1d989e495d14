package rt

import (
	"fmt"
	"math/rand/v2"

	G "gorgonia.org/gorgonia"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/models"
	"github.com/spn-project/spn/models/cuda"
	"github.com/spn-project/spn/models/kernels"
	"github.com/spn-project/spn/models/nbop"
	"github.com/spn-project/spn/models/op"
	"github.com/spn-project/spn/models/param"
)

// Layer is one message-passing layer of a kind built on Net. Its Step
// adds hᵗ = layer(hᵗ⁻¹) to the graph in the three parts of PyG's
// MessagePassing: the messages from the neighbours, their aggregation and
// the update of the node state. For the SPN layer (models/spn) they are
// α_i·h_v over the nodes v at distance i, the sum (1+ε)·h_u + Σ_i α_i Σ_v
// h_v, and the MLP.
type Layer interface {
	// Params returns the layer's parameters in the order Step binds them.
	Params() []*param.Param
	// AddBuffers adds the running statistics of the layer's batch norms to
	// b, named after the layer's name (e.g. "layer1").
	AddBuffers(b map[string][]float64, name string)
	// Step adds the layer to s's graph and returns hᵗ.
	Step(s *Step, h *G.Node) *G.Node
}

// Input adds a term to the input encoding h⁰ = Enc(labels, attrs): OGB's
// AtomEncoder (Atom), Graphormer's degree embedding.
type Input interface {
	// Params returns the term's parameters in the order Add binds them.
	Params() []*param.Param
	// Add returns h plus the term.
	Add(s *Step, h *G.Node) *G.Node
}

// Output replaces the layer-sum readout (Finish) of a Net: R-SPN's gated
// readout (Gated).
type Output interface {
	// Params returns the readout's parameters in the order Out binds them.
	Params() []*param.Param
	// Out returns the graphs' outputs from the node states hs (h⁰ first).
	Out(s *Step, hs []*G.Node) *G.Node
}

// Step is what a layer's Step builds with: the graph of one padded batch
// shape and the layer's name.
type Step struct {
	Bdr *Builder
	Be  Env
	BD  *BatchData
	Key Key
	// Name is the layer's name, "layerT" with T from 1 (the encoder's
	// terms get "enc"): the prefix of its ops' ids.
	Name string
	// N is the padded number of nodes, D the hidden width.
	N, D int
	p    *Program
}

// Param returns a node of the graph bound to parameter prm.
func (s *Step) Param(prm *param.Param) *G.Node { return s.p.Param(s.Bdr, prm) }

// Op adds op over the inputs to the graph.
func (s *Step) Op(o op.Op, inputs ...*G.Node) *G.Node { return s.Bdr.Op(s.Be, o, inputs...) }

// Net is the skeleton of a message-passing model kind: the Engine (input
// encoder, layer-sum readout, compiled graphs, training step), an
// optional Input term, the layers and an optional Output readout. It
// implements Params, Buffers and the Arch's BuildGraph and GradParams; a
// kind embeds it, builds it with Init and adds CheckBatch, Prepare and
// Hops (AdjNet has those of the kinds that read the adjacency only).
type Net struct {
	Engine
	// Input is added to h⁰; nil for none.
	Input Input
	// Layers are the message-passing layers, in order.
	Layers []Layer
	// Output replaces the layer-sum readout; nil for the readout.
	Output Output
	// what names the model's graph in errors.
	what string
}

// Parts says how Net.Init draws a kind's parameters from the initialisation
// generator, and the names it gives in errors.
type Parts struct {
	// Pkg names the kind's constructor in errors ("spn" for spn.New).
	Pkg string
	// Input draws the input term (nil: none; the func may return nil).
	Input func(init *rand.Rand) Input
	// Layer draws layer t (from 1), named name ("layerT").
	Layer func(t int, name string, init *rand.Rand) Layer
	// Output draws the readout replacing the layer sum (nil: the layer-sum
	// readout of NewReadout).
	Output func(init *rand.Rand) Output
	// What names the model's graph in errors (default the kind's name).
	What string
}

// Init builds n for cfg as the model arch (the kind's model, which embeds
// n): it checks cfg for kind and the backend, then draws from
// param.NewInit(seed), in this order, the encoder, the input term, the
// layers and the readout, the order checkpoints and the reference SPN
// (models/internal/testkit/ref) rely on, and sets Engine.Arch to arch.
// parts.Pkg names the constructor in errors.
func (n *Net) Init(arch Arch, kind models.Kind, cfg models.Config, seed uint64, be kernels.Backend, parts Parts) error {
	if err := CheckConfig(kind, cfg); err != nil {
		return err
	}
	if be == nil {
		return fmt.Errorf("%s.New: nil kernel backend", parts.Pkg)
	}
	init := param.NewInit(seed)
	*n = Net{Engine: NewEngine(cfg, seed, be), what: parts.What}
	n.Arch = arch
	if n.what == "" {
		n.what = kind.Name()
	}
	d := cfg.Model.Hidden
	n.Enc = param.NewEncoder("enc", cfg.NumLabels, cfg.AttrDim, d, init)
	if parts.Input != nil {
		n.Input = parts.Input(init)
	}
	for t := 1; t <= cfg.Model.Layers; t++ {
		n.Layers = append(n.Layers, parts.Layer(t, LayerName(t), init))
	}
	if parts.Output != nil {
		n.Output = parts.Output(init)
	} else {
		n.Readout, n.ReadoutNorm = NewReadout(cfg, init), NewReadoutNorms(cfg)
	}
	return nil
}

// LayerName is the name of layer t (from 1): "layerT".
func LayerName(t int) string { return fmt.Sprintf("layer%d", t) }

// Params implements models.Model: the encoder's, the input term's, the
// layers' in order, then the readout's parameters.
func (n *Net) Params() []*param.Param {
	ps := n.Enc.Params()
	if n.Input != nil {
		ps = append(ps, n.Input.Params()...)
	}
	for _, l := range n.Layers {
		ps = append(ps, l.Params()...)
	}
	for _, r := range n.Readout {
		ps = append(ps, r.Params()...)
	}
	for _, ln := range n.ReadoutNorm {
		ps = append(ps, ln.Params()...)
	}
	if n.Output != nil {
		ps = append(ps, n.Output.Params()...)
	}
	return ps
}

// Buffers implements models.Model: the batch-norm running statistics of
// the layers.
func (n *Net) Buffers() map[string][]float64 {
	b := map[string][]float64{}
	for t, l := range n.Layers {
		l.AddBuffers(b, LayerName(t+1))
	}
	return b
}

// GradParams implements Arch: the parameters bound in p.
func (n *Net) GradParams(p *Program) []*param.Param { return p.BoundParams() }

// BuildGraph implements Arch: the expression graph for the padded sizes of
// key,
//
//	h⁰ = Enc(labels, attrs) [+ Input]
//	hᵗ = Layerᵗ.Step(hᵗ⁻¹),  t = 1..T
//	out = Σ_{t=0..T} Dropout(Wᵗ·LNᵗ(pool(hᵗ)) + bᵗ)  (or Output(h⁰..hᵀ))
//
// (LNᵗ a layer norm for t ≥ 1 with model.layer_norm, else the identity)
//
// then the loss (or ⟨out, seed⟩) and its gradient when key asks for one.
func (n *Net) BuildGraph(key Key, bd *BatchData) (*Program, error) {
	bdr, p, be := n.NewProgram(key, bd)
	s := &Step{Bdr: bdr, Be: be, BD: bd, Key: key, Name: "enc", N: key.N, D: n.Cfg.Model.Hidden, p: p}
	h := n.Encode(bdr, p, be, bd)
	if n.Input != nil {
		h = n.Input.Add(s, h)
	}
	hs := []*G.Node{h}
	for t, l := range n.Layers {
		s.Name = LayerName(t + 1)
		h = l.Step(s, h)
		hs = append(hs, h)
	}
	if n.Output != nil {
		s.Name = "readout"
		return n.FinishOut(bdr, p, be, bd, n.Output.Out(s, hs), n.what)
	}
	return n.Finish(bdr, p, be, bd, hs, n.what)
}

// HopLayer is a layer with SPN's hop weights (ε and the α logits).
type HopLayer interface {
	HopAggregation() *param.HopAggregation
}

// NetHopWeights returns α and ε per layer of layers, which must all be
// HopLayers (models.HopWeights of the SPN kinds).
func NetHopWeights(layers []Layer) (alpha [][]float64, eps []float64) {
	aggs := make([]*param.HopAggregation, len(layers))
	for i, l := range layers {
		aggs[i] = l.(HopLayer).HopAggregation()
	}
	return HopWeights(aggs)
}

// SyncHopWeights copies ε and the α logits of the model's HopLayers
// from the device into their host values (Param.W), so that HopWeights
// reports the device's: a few values per layer instead of the whole
// model (SyncHost). It does nothing unless a DeviceAdam keeps the
// parameters on the device.
func (n *Net) SyncHopWeights() error {
	if n.dev == nil || n.dev.adam == nil {
		return nil
	}
	var ps []*param.Param
	for _, l := range n.Layers {
		if hl, ok := l.(HopLayer); ok {
			a := hl.HopAggregation()
			ps = append(ps, a.Logits, a.Eps)
		}
	}
	return n.dev.adam.sync(ps)
}

// AdjData is the per-batch data of the adjacency a kind's layers read.
type AdjData interface {
	// Set fills the data from b (whose adjacency CheckBatch checked).
	Set(b *data.Batch) error
	// Pack adds the data Set filled to the run's pack for the device path
	// and returns what drops the data's references to it after the run.
	Pack(pk *cuda.Pack) (release func(), err error)
}

// AdjNet is the Net of a kind whose layers read the adjacency only (gcn,
// gat): it implements Hops, CheckBatch, Prepare and DevicePreparer.
type AdjNet struct {
	Net
	// Data is set from every batch by Prepare.
	Data AdjData
}

// Hops implements models.Model: the kind reads Batch.Adj only.
func (n *AdjNet) Hops() int { return 0 }

// CheckBatch implements Arch.
func (n *AdjNet) CheckBatch(b *data.Batch, o Opts) error {
	return CheckBatch(n.Cfg, Need{Adj: true, K: 1}, b, o)
}

// Prepare implements Arch: the adjacency, and Data set from b.
func (n *AdjNet) Prepare(b *data.Batch) ([]data.CSR, error) {
	if err := n.Data.Set(b); err != nil {
		return nil, err
	}
	return []data.CSR{b.Adj}, nil
}

// PackDevice implements DevicePreparer: the data Prepare set, in the
// run's pack.
func (n *AdjNet) PackDevice(pk *cuda.Pack) (func(), error) { return n.Data.Pack(pk) }

// HopNet is the Net of an SP-MPNN kind that reads N_1..N_k and typed data
// of the batch (espn's edge features, rspn's relations): it implements
// Hops, Prepare and the part of CheckBatch they share.
type HopNet struct {
	Net
	// Atom is OGB's AtomEncoder, nil without categorical node features.
	Atom *Atom
	// TD is what the layers' ops read of the batch: an object of its own,
	// so that the compiled graphs (whose tape machines have finalizers) do
	// not point back into the model and keep it alive.
	TD *nbop.Data
	// Typed is what TD holds beyond the hop sets (Edges or Relations).
	Typed nbop.Need
}

// AtomInput is the Parts.Input of a HopNet: it draws Atom from init and
// returns it as the input term (nil without categorical node features).
func (n *HopNet) AtomInput(cfg models.Config) func(init *rand.Rand) Input {
	return func(init *rand.Rand) Input {
		n.Atom = NewAtom(cfg, cfg.Model.Hidden, init)
		return n.Atom.Input(n.TD)
	}
}

// Hops implements models.Model: the kind reads N_1..N_k.
func (n *HopNet) Hops() int { return n.Cfg.Model.K }

// HopWeights implements models.HopWeights: α and ε per layer (every
// layer a HopLayer).
func (n *HopNet) HopWeights() (alpha [][]float64, eps []float64) { return NetHopWeights(n.Layers) }

// need are the hop sets N_1..N_k, and N_∞ with model.unreachable.
func (n *HopNet) need() Need { return Need{K: n.Cfg.Model.K, Unreachable: n.Cfg.Model.Unreachable} }

// ReadsUnreachable implements models.UnreachableReader: model.unreachable.
func (n *HopNet) ReadsUnreachable() bool { return n.Cfg.Model.Unreachable }

// CheckWith checks b's hop sets (CheckBatch), then its typed data with
// the kind's typed, then its categorical node features.
func (n *HopNet) CheckWith(b *data.Batch, o Opts, typed func(*data.Batch) error) error {
	if err := CheckBatch(n.Cfg, n.need(), b, o); err != nil {
		return err
	}
	if err := typed(b); err != nil {
		return err
	}
	return n.Atom.CheckBatch(b)
}

// Prepare implements Arch: the hop sets, and the typed data of the batch.
func (n *HopNet) Prepare(b *data.Batch) ([]data.CSR, error) {
	hn := n.need()
	need := n.Typed
	need.K, need.Unreachable = hn.K, hn.Unreachable
	if err := n.TD.Set(b, need); err != nil {
		return nil, err
	}
	return hn.Sets(b), nil
}
