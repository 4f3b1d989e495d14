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
	"github.com/spn-project/spn/models/cuda"
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

// Revision implements models.Revised: 2 since a layer's 2 + R MLPs are
// one stacked op (rt.NewMLPs), which adds their input gradients in
// block order (Gorgonia added them in its own) and names the parameters
// layerT.mlps.* instead of layerT.mlp_s.*, layerT.mlp_h.*,
// layerT.mlp_r1.*, ….
func (Kind) Revision() int { return 2 }

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

// CheckDevice implements models.DeviceKind: rt.CheckDevice (the
// classification, regression and multi-task binary losses, sum or mean
// pooling or the gated readout, no global readout).
func (Kind) CheckDevice(cfg models.Config) error { return rt.CheckDevice(cfg) }

// ParamCount implements models.Kind: the encoder and the categorical
// node features' tables, per layer the hop weights and the 2 + R stacked
// MLPs, and the layer-sum or the gated readout.
func (Kind) ParamCount(cfg models.Config) int64 {
	output := int64(rt.LayerSumReadout)
	if cfg.Model.GatedReadout {
		output = rt.GatedSize(cfg)
	}
	layer := param.Sum(rt.HopsSize(cfg.Model), rt.MLPSize(cfg.Model.Hidden, 2), rt.MLPSize(cfg.Model.Hidden, cfg.NumEdgeTypes))
	return rt.NetSize(cfg, rt.AtomSize(cfg, cfg.Model.Hidden), layer, output)
}

// New implements models.Kind.
func (Kind) New(cfg models.Config, seed uint64, be kernels.Backend) (models.Model, error) {
	return New(cfg, seed, be)
}

// layer is one R-SPN layer: its hop weights and MLPs.
type layer struct {
	rt.Hops
	// mlps are MLP_s (self), MLP_h (hops ≥ 2) and MLP_1..MLP_R
	// (relations), blocks 0, 1 and 2..R+1 of one stacked MLP
	// (rt.NewMLPs), named name (its parameters name.lin1.w, …).
	mlps *rt.MLP
	name string
	// r is the number of relations R.
	r int
	// td is the model's batch data for the layer's ops.
	td *nbop.Data
}

// Model is an R-SPN computed through Gorgonia.
type Model struct{ rt.HopNet }

var (
	_ models.Model      = (*Model)(nil)
	_ models.HopWeights = (*Model)(nil)
	_ models.DeviceKind = Kind{}
	_ models.Revised    = Kind{}
	_ models.Upgrader   = Kind{}
	_ rt.DevicePreparer = (*Model)(nil)
)

// New builds the R-SPN of cfg from seed; with model.gated_readout,
// GNN-FiLM's gated sum (rt.Gated) replaces the layer readout.
func New(cfg models.Config, seed uint64, be kernels.Backend) (*Model, error) {
	md := &Model{rt.HopNet{TD: &nbop.Data{}, Typed: nbop.Need{Relations: true}}}
	readInit, logitInit := param.GlobalReadInit(seed), param.HopLogitInit(seed)
	parts := rt.Parts{
		Pkg:   Name,
		Input: md.AtomInput(cfg),
		Layer: func(_ int, name string, init *rand.Rand) rt.Layer {
			l := &layer{Hops: rt.NewHops(name, cfg.Model, readInit, logitInit), td: md.TD, name: name + ".mlps", r: cfg.NumEdgeTypes}
			mlps := rt.NewMLPs(l.name, cfg.Model.Hidden, 2+l.r, init)
			l.mlps = &mlps
			return l
		},
	}
	if cfg.Model.GatedReadout {
		parts.Output = func(init *rand.Rand) rt.Output { return rt.NewGated(cfg, init) }
	}
	if err := md.Init(md, Kind{}, cfg, seed, be, parts); err != nil {
		return nil, err
	}
	return md, nil
}

// Params implements rt.Layer: the hop weights, then the stacked MLPs'
// parameters (MLP_s, MLP_h, MLP_1..MLP_R block by block).
func (l *layer) Params() []*param.Param { return append(l.Hops.Params(), l.mlps.Params()...) }

// AddBuffers implements rt.Layer: the batch-norm running statistics of
// the stacked MLPs (each of (2 + R)·d values, block by block).
func (l *layer) AddBuffers(b map[string][]float64, _ string) { l.mlps.AddBuffers(b, l.name) }

// CheckBatch implements rt.Arch: SPN's checks, then the relations and the
// categorical node features.
func (m *Model) CheckBatch(b *data.Batch, o rt.Opts) error {
	return m.CheckWith(b, o, func(b *data.Batch) error {
		if len(b.Rel) != m.Cfg.NumEdgeTypes {
			return fmt.Errorf("batch carries %d relations, rspn was built for %d", len(b.Rel), m.Cfg.NumEdgeTypes)
		}
		for j, r := range b.Rel {
			if err := data.CheckCSR(r, b.N); err != nil {
				return fmt.Errorf("relation r_%d: %w", j+1, err)
			}
		}
		return nil
	})
}

// Step implements rt.Layer: one R-SPN layer (α = softmax of k logits,
// r_j(u,v) the edges of relation j),
//
//	hᵗ_u = (1+ε)·MLP_s(hᵗ⁻¹)_u + α_1·Σ_j Σ_{v: r_j(u,v)} MLP_j(hᵗ⁻¹)_v + Σ_{i=2..k} α_i·Σ_{v∈N_i(u)} MLP_h(hᵗ⁻¹)_v [+ (Σ_{v∈G(u)} hᵗ⁻¹_v)·Wᵗ]
//
// the bracketed term with model.global_readout (SP-MPNN with global
// readout, paper §3). rt.Net adds h⁰ = Enc(labels, attrs) +
// AtomEncoder(categorical node features) before the layers and SPN's
// readout out = Σ_t Dropout(Wᵗ·pool(hᵗ) + bᵗ), or with
// model.gated_readout GNN-FiLM's gated sum out = Σ_v σ(W_g·[h⁰_v, hᵀ_v] +
// b_g) ⊙ (W_t·hᵀ_v + b_t) (rt.Gated), after them.
func (l *layer) Step(s *rt.Step, h *G.Node) *G.Node {
	alpha, eps, w := l.Hops.Bind(s)
	// the messages MLP_s(h), MLP_h(h), MLP_1(h)..MLP_R(h) of every node,
	// stacked in blocks 0, 1, 2..R+1 of x
	x := l.mlps.Apply(s, l.name, h, l.mlps.Bind(s.Param))
	// their aggregation per relation and per hop, one op over x
	sum := s.Op(&nbop.RelCombine{ID: s.Name + ".combine", Be: s.Be, D: l.td, K: l.Agg.K, R: l.r, N: s.N, W: s.D}, x, alpha, eps)
	return s.AddGlobal(l.td, w, sum, h)
}

// PackDevice implements rt.DevicePreparer: the higher hop sets N_2..N_k
// and the relations Prepare set, with their transposes, in the run's pack
// (nbop.Data.PackTyped).
func (m *Model) PackDevice(pk *cuda.Pack) (func(), error) { return m.TD.PackTyped(pk) }
