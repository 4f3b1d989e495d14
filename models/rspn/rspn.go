// Package rspn is R-SPN (paper §5.3), model kind "rspn": the SPN whose
// first hop aggregates per relation (edge type) with an MLP of its own,
//
//	h_u ← (1+ε)·MLP_s(h_u) + α_1 Σ_{j=1..R} Σ_{v: r_j(u,v)} MLP_j(h_v) + Σ_{i=2..k} α_i Σ_{v∈N_i(u)} MLP_h(h_v)
//
// with α = softmax of k logits, R relation types, SPN's input encoding,
// pooling and readout (models/rt), and no residual connections or layer
// norm, as the paper says.
package rspn

import (
	"fmt"
	"math/rand/v2"

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
const Name = "rspn"

// Kind is model kind "rspn".
type Kind struct{}

// Name implements models.Kind.
func (Kind) Name() string { return Name }

// Check implements models.Kind: SPN's fields, and the dataset must carry
// relations (edge types).
func (Kind) Check(m modelspec.Model, d modelspec.DatasetInfo) []modelspec.FieldError {
	errs := rt.CheckHops(rt.CheckCommon(m), m, d)
	if d.Known && d.Relations < 1 {
		errs = append(errs, rt.Errf("kind", "rspn aggregates per relation (edge type), but the dataset%s has untyped edges (e.g. dataset kind qm9 has 4 bond types)", rt.OfKind(d)))
	}
	if m.GatedReadout && m.Dropout != 0 {
		errs = append(errs, rt.Errf("dropout", "the gated readout has no dropout (GNN-FiLM's has none): set dropout: 0 with gated_readout, not %v", m.Dropout))
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
	// MLP_s (self), MLP_h (hops ≥ 2) and MLP_1..MLP_R (relations), and
	// their names (buffer names): self, higher, rel...
	self, higher *rt.MLP
	rel          []*rt.MLP
	names        []string
}

// Model is an R-SPN computed through Gorgonia.
type Model struct {
	rt.Engine
	// atom is OGB's AtomEncoder, nil without categorical node features.
	atom   *rt.Atom
	layers []*layer
	// gated is GNN-FiLM's gated-sum readout (model.gated_readout), used
	// instead of the engine's layer readout; nil without it.
	gated *rt.Gated
	// td is what the layers' ops read of the batch: an object of its own
	// (see spn.Model.gd).
	td *nbop.Data
}

var (
	_ models.Model      = (*Model)(nil)
	_ models.HopWeights = (*Model)(nil)
)

// New builds the R-SPN of cfg from seed.
func New(cfg models.Config, seed uint64, be kernels.Backend) (*Model, error) {
	if err := rt.CheckConfig(Kind{}, cfg); err != nil {
		return nil, err
	}
	if be == nil {
		return nil, fmt.Errorf("rspn.New: nil kernel backend")
	}
	m := cfg.Model
	init := rand.New(rand.NewPCG(seed, 0x5eed1))
	md := &Model{Engine: rt.NewEngine(cfg, seed, be), td: &nbop.Data{}}
	md.Arch = md
	d := m.Hidden
	md.Enc = param.NewEncoder("enc", cfg.NumLabels, cfg.AttrDim, d, init)
	md.atom = rt.NewAtom(cfg, d, init)
	readInit := rt.GlobalReadInit(seed)
	mlp := func(name string) *rt.MLP { l := rt.NewMLP(name, d, init); return &l }
	for t := 1; t <= m.Layers; t++ {
		name := fmt.Sprintf("layer%d", t)
		l := &layer{agg: param.NewHopAggregation(name+".agg", m.K, d, m.Eps, m.LearnEps)}
		l.read = rt.NewGlobalRead(name, m, readInit)
		l.self, l.higher = mlp(name+".mlp_s"), mlp(name+".mlp_h")
		l.names = []string{name + ".mlp_s", name + ".mlp_h"}
		for j := 1; j <= cfg.NumEdgeTypes; j++ {
			rn := fmt.Sprintf("%s.mlp_r%d", name, j)
			l.rel = append(l.rel, mlp(rn))
			l.names = append(l.names, rn)
		}
		md.layers = append(md.layers, l)
	}
	if m.GatedReadout {
		md.gated = rt.NewGated(cfg, init)
	} else {
		md.Readout = rt.NewReadout(cfg, init)
	}
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
		ps = append(ps, l.self.Params()...)
		ps = append(ps, l.higher.Params()...)
		for _, r := range l.rel {
			ps = append(ps, r.Params()...)
		}
	}
	for _, r := range m.Readout {
		ps = append(ps, r.Params()...)
	}
	if m.gated != nil {
		ps = append(ps, m.gated.Params()...)
	}
	return ps
}

// Buffers implements models.Model: the batch-norm running statistics of
// every MLP, by the MLP's name.
func (m *Model) Buffers() map[string][]float64 {
	b := map[string][]float64{}
	for _, l := range m.layers {
		for i, x := range append([]*rt.MLP{l.self, l.higher}, l.rel...) {
			x.AddBuffers(b, l.names[i])
		}
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

// CheckBatch implements rt.Arch: SPN's checks, then the relations and the
// categorical node features.
func (m *Model) CheckBatch(b *data.Batch, o rt.Opts) error {
	if err := rt.CheckBatch(m.Cfg, m.need(), b, o); err != nil {
		return err
	}
	if len(b.Rel) != m.Cfg.NumEdgeTypes {
		return fmt.Errorf("batch carries %d relations, rspn was built for %d", len(b.Rel), m.Cfg.NumEdgeTypes)
	}
	for j, r := range b.Rel {
		if err := data.CheckCSR(r, b.N); err != nil {
			return fmt.Errorf("relation r_%d: %w", j+1, err)
		}
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
	if err := m.td.Set(b, nbop.Need{K: m.Cfg.Model.K, Relations: true}); err != nil {
		return nil, err
	}
	return hops, nil
}

// BuildGraph implements rt.Arch: the expression graph for the padded
// sizes of key (α = softmax of k logits, A_i = N_i, r_j(u,v) the edges of
// relation j):
//
//	h⁰ = Enc(labels, attrs) + AtomEncoder(categorical node features)
//	hᵗ_u = (1+ε)·MLP_s(hᵗ⁻¹)_u + α_1·Σ_j Σ_{v: r_j(u,v)} MLP_j(hᵗ⁻¹)_v + Σ_{i=2..k} α_i·Σ_{v∈N_i(u)} MLP_h(hᵗ⁻¹)_v [+ (Σ_{v∈G(u)} hᵗ⁻¹_v)·Wᵗ]
//
// the bracketed term with model.global_readout (SP-MPNN with global
// readout, paper §3); then SPN's readout out = Σ_t Dropout(Wᵗ·pool(hᵗ) +
// bᵗ), or with model.gated_readout GNN-FiLM's gated sum
// out = Σ_v σ(W_g·[h⁰_v, hᵀ_v] + b_g) ⊙ (W_t·hᵀ_v + b_t) (rt.Gated), and the
// loss.
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
		s := l.self.Apply(bdr, be, bd, key, l.names[0], h, l.self.Bind(param))
		hh := l.higher.Apply(bdr, be, bd, key, l.names[1], h, l.higher.Bind(param))
		xs := make(G.Nodes, len(l.rel))
		for j, r := range l.rel {
			xs[j] = r.Apply(bdr, be, bd, key, l.names[2+j], h, r.Bind(param))
		}
		rel := bdr.Op(be, nbop.RelAgg{ID: name + ".rel", Be: be, D: td, R: len(l.rel), N: N, W: d}, xs...)
		sum := bdr.Op(be, nbop.Combine{ID: name + ".combine", Be: be, D: td, K: k, N: N, W: d}, s, rel, hh, alpha, eps)
		h = rt.GlobalRead(bdr, be, td, name, w, sum, h, N, d)
		hs = append(hs, h)
	}
	if m.gated != nil {
		return m.FinishOut(bdr, p, be, bd, m.gated.Apply(bdr, p, be, bd, hs[0], h), Name)
	}
	return m.Finish(bdr, p, be, bd, hs, Name)
}
