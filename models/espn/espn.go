// Package espn is E-SPN (paper appendix), model kind "espn": the SPN whose
// first hop reads categorical edge features through a BondEncoder with
// distinct embeddings at every layer,
//
//	h_u ← MLP((1+ε)·h_u + α_1 Σ_{v∈N(u)} ReLU(h_v + e_uv) + Σ_{i=2..k} α_i Σ_{v∈N_i(u)} h_v)
//
// with e_uv = BondEncoderᵗ(edge features of (u,v)), node inputs through
// OGB's AtomEncoder added to SPN's encoder, and SPN's MLP, pooling and
// readout (models/rt).
package espn

import (
	"fmt"
	"math/rand/v2"
	"slices"

	G "gorgonia.org/gorgonia"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/models"
	"github.com/spn-project/spn/models/kernels"
	"github.com/spn-project/spn/models/nbop"
	"github.com/spn-project/spn/models/param"
	"github.com/spn-project/spn/models/rt"
	"github.com/spn-project/spn/schema/modelspec"
)

// Name is the model kind.
const Name = "espn"

// Kind is model kind "espn".
type Kind struct{}

// Name implements models.Kind.
func (Kind) Name() string { return Name }

// Check implements models.Kind: SPN's fields, and the dataset must carry
// categorical edge features.
func (Kind) Check(m modelspec.Model, d modelspec.DatasetInfo) []modelspec.FieldError {
	errs := rt.CheckHops(rt.CheckCommon(m), m, d)
	if d.Known && !d.EdgeFeatures {
		errs = append(errs, rt.Errf("kind", "espn reads categorical edge features, but the dataset%s has none (e.g. dataset kind ogb has 3 bond features)", rt.OfKind(d)))
	}
	return errs
}

// New implements models.Kind.
func (Kind) New(cfg models.Config, seed uint64, be kernels.Backend) (models.Model, error) {
	return New(cfg, seed, be)
}

// layer holds one layer's parameters.
type layer struct {
	agg *param.HopAggregation // the k α logits and ε
	// read is the global readout map W (d×d), nil without global readout.
	read *param.Param
	// bond are the layer's BondEncoder tables, out SPN's MLP.
	bond *param.Param
	out  rt.MLP
}

// Model is an E-SPN computed through Gorgonia.
type Model struct {
	rt.Engine
	// atom is OGB's AtomEncoder, nil without categorical node features.
	atom   *rt.Atom
	layers []*layer
	// td is what the layers' ops read of the batch: an object of its own
	// (see spn.Model.gd).
	td *nbop.Data
}

var (
	_ models.Model      = (*Model)(nil)
	_ models.HopWeights = (*Model)(nil)
)

// New builds the E-SPN of cfg from seed.
func New(cfg models.Config, seed uint64, be kernels.Backend) (*Model, error) {
	if err := rt.CheckConfig(Kind{}, cfg); err != nil {
		return nil, err
	}
	if be == nil {
		return nil, fmt.Errorf("espn.New: nil kernel backend")
	}
	m := cfg.Model
	init := rand.New(rand.NewPCG(seed, 0x5eed1))
	md := &Model{Engine: rt.NewEngine(cfg, seed, be), td: &nbop.Data{}}
	md.Arch = md
	d := m.Hidden
	md.Enc = param.NewEncoder("enc", cfg.NumLabels, cfg.AttrDim, d, init)
	md.atom = rt.NewAtom(cfg, d, init)
	readInit := rt.GlobalReadInit(seed)
	for t := 1; t <= m.Layers; t++ {
		name := fmt.Sprintf("layer%d", t)
		l := &layer{agg: param.NewHopAggregation(name+".agg", m.K, d, m.Eps, m.LearnEps)}
		l.read = rt.NewGlobalRead(name, m, readInit)
		l.bond = rt.EmbedTables(name+".bond", cfg.EdgeFeatVocab, d, init)
		l.out = rt.NewMLP(name, d, init)
		md.layers = append(md.layers, l)
	}
	md.Readout = rt.NewReadout(cfg, init)
	return md, nil
}

// Hops implements models.Model: the model reads N_1..N_k.
func (m *Model) Hops() int { return m.Cfg.Model.K }

// Params implements models.Model, in the order BuildGraph binds them.
func (m *Model) Params() []*param.Param {
	ps := m.Enc.Params()
	if m.atom != nil {
		ps = append(ps, m.atom.P)
	}
	for _, l := range m.layers {
		ps = append(ps, l.agg.Params()...)
		if l.read != nil {
			ps = append(ps, l.read)
		}
		ps = append(ps, l.bond)
		ps = append(ps, l.out.Params()...)
	}
	for _, r := range m.Readout {
		ps = append(ps, r.Params()...)
	}
	return ps
}

// Buffers implements models.Model: the batch-norm running statistics of
// every layer's MLP.
func (m *Model) Buffers() map[string][]float64 {
	b := map[string][]float64{}
	for t, l := range m.layers {
		l.out.AddBuffers(b, fmt.Sprintf("layer%d", t+1))
	}
	return b
}

// HopWeights implements models.HopWeights: α and ε per layer.
func (m *Model) HopWeights() (alpha [][]float64, eps []float64) {
	aggs := make([]*param.HopAggregation, len(m.layers))
	for i, l := range m.layers {
		aggs[i] = l.agg
	}
	return rt.HopWeights(aggs)
}

// GradParams implements rt.Arch: the parameters bound in p.
func (m *Model) GradParams(p *rt.Program) []*param.Param { return p.BoundParams() }

// need are the hop sets N_1..N_k.
func (m *Model) need() rt.Need { return rt.Need{K: m.Cfg.Model.K} }

// CheckBatch implements rt.Arch: SPN's checks, then the edge features and
// the categorical node features.
func (m *Model) CheckBatch(b *data.Batch, o rt.Opts) error {
	if err := rt.CheckBatch(m.Cfg, m.need(), b, o); err != nil {
		return err
	}
	c := m.Cfg
	if !slices.Equal(b.EdgeFeatVocab, c.EdgeFeatVocab) || len(b.EdgeFeat) != len(b.Adj.Idx)*len(c.EdgeFeatVocab) {
		return fmt.Errorf("batch has %d edge feature values with vocabularies %v, espn was built for %v over %d edge entries", len(b.EdgeFeat), b.EdgeFeatVocab, c.EdgeFeatVocab, len(b.Adj.Idx))
	}
	if err := rt.CheckCategories(b.EdgeFeat, c.EdgeFeatVocab); err != nil {
		return fmt.Errorf("edge features: %w", err)
	}
	return m.atom.CheckBatch(b)
}

// Prepare implements rt.Arch: the hop sets, and the typed data of the
// batch.
func (m *Model) Prepare(b *data.Batch) ([]data.CSR, error) {
	hops, err := m.need().Sets(b)
	if err != nil {
		return nil, err
	}
	if err := m.td.Set(b, nbop.Need{K: m.Cfg.Model.K, Edges: true}); err != nil {
		return nil, err
	}
	return hops, nil
}

// BuildGraph implements rt.Arch: the expression graph for the padded
// sizes of key (α = softmax of k logits, A_i = N_i, e_uv =
// BondEncoderᵗ(edge features), one per layer):
//
//	h⁰ = Enc(labels, attrs) + AtomEncoder(categorical node features)
//	hᵗ_u = MLP((1+ε)·hᵗ⁻¹_u + α_1·Σ_{v∈N(u)} ReLU(hᵗ⁻¹_v + e_uv) + Σ_{i=2..k} α_i·Σ_{v∈N_i(u)} hᵗ⁻¹_v [+ (Σ_{v∈G(u)} hᵗ⁻¹_v)·Wᵗ])
//
// the bracketed term with model.global_readout (SP-MPNN with global
// readout, paper §3); then SPN's readout out = Σ_t Dropout(Wᵗ·pool(hᵗ) +
// bᵗ) and the loss.
func (m *Model) BuildGraph(key rt.Key, bd *rt.BatchData) (*rt.Program, error) {
	N, d, k := key.N, m.Cfg.Model.Hidden, m.Cfg.Model.K
	bdr, p, be := m.NewProgram(key, bd)
	param := func(prm *param.Param) *G.Node { return p.Param(bdr, prm) }
	td := m.td

	h := m.atom.Add(bdr, p, be, td, m.Encode(bdr, p, be, bd), N, d)
	hs := []*G.Node{h}
	for t, l := range m.layers {
		name := fmt.Sprintf("layer%d", t+1)
		logits, eps := param(l.agg.Logits), param(l.agg.Eps)
		alpha := bdr.Op(be, rt.NewSoftmax(name+".alpha", k), logits)
		var w *G.Node // the global readout map
		if l.read != nil {
			w = param(l.read)
		}
		msg := bdr.Op(be, nbop.EdgeMsg{ID: name + ".edge", Be: be, D: td, Rows: l.bond.Shape[0], N: N, W: d}, h, param(l.bond))
		agg := bdr.Op(be, nbop.Combine{ID: name + ".combine", Be: be, D: td, K: k, N: N, W: d}, h, msg, h, alpha, eps)
		agg = rt.GlobalRead(bdr, be, td, name, w, agg, h, N, d)
		h = l.out.Apply(bdr, be, bd, key, name, agg, l.out.Bind(param))
		hs = append(hs, h)
	}
	return m.Finish(bdr, p, be, bd, hs, Name)
}
