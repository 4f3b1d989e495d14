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
	"github.com/spn-project/spn/models/cuda"
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
	switch {
	case d.Known && !d.EdgeFeatures && d.Kind == "file":
		errs = append(errs, rt.Errf("kind", `espn reads categorical edge features, but the file's graphs have no "edge_feat" (one row of categories per edge, as docs/data.md describes)`))
	case d.Known && !d.EdgeFeatures:
		errs = append(errs, rt.Errf("kind", "espn reads categorical edge features, but the dataset%s has none (e.g. dataset kind ogb has 3 bond features)", rt.OfKind(d)))
	}
	return errs
}

// CheckDevice implements models.DeviceKind: rt.CheckDevice (the
// classification, regression and multi-task binary losses, sum or mean
// pooling, no global readout); the AtomEncoder, the BondEncoders and the
// edge messages have device math.
func (Kind) CheckDevice(cfg models.Config) error { return rt.CheckDevice(cfg) }

// ParamCount implements models.Kind: the encoder and the categorical
// node features' tables, per layer the hop weights, the BondEncoder
// tables and the MLP, and the layer-sum readout.
func (Kind) ParamCount(cfg models.Config) int64 {
	d := cfg.Model.Hidden
	layer := param.Sum(rt.HopsSize(cfg.Model), rt.EmbedTablesSize(cfg.EdgeFeatVocab, d), rt.MLPSize(d, 1))
	return rt.NetSize(cfg, rt.AtomSize(cfg, d), layer, rt.LayerSumReadout)
}

// New implements models.Kind.
func (Kind) New(cfg models.Config, seed uint64, be kernels.Backend) (models.Model, error) {
	return New(cfg, seed, be)
}

// layer is one E-SPN layer: its hop weights, BondEncoder tables and MLP.
type layer struct {
	rt.Hops
	// bond are the layer's BondEncoder tables, out SPN's MLP.
	bond *param.Param
	out  rt.MLP
	// td is the model's batch data for the layer's ops.
	td *nbop.Data
}

// Model is an E-SPN computed through Gorgonia.
type Model struct{ rt.HopNet }

var (
	_ models.Model      = (*Model)(nil)
	_ models.HopWeights = (*Model)(nil)
	_ models.DeviceKind = Kind{}
	_ rt.DevicePreparer = (*Model)(nil)
)

// New builds the E-SPN of cfg from seed.
func New(cfg models.Config, seed uint64, be kernels.Backend) (*Model, error) {
	md := &Model{rt.HopNet{TD: &nbop.Data{}, Typed: nbop.Need{Edges: true}}}
	readInit, logitInit := param.GlobalReadInit(seed), param.HopLogitInit(seed)
	err := md.Init(md, Kind{}, cfg, seed, be, rt.Parts{
		Pkg:   Name,
		Input: md.AtomInput(cfg),
		Layer: func(_ int, name string, init *rand.Rand) rt.Layer {
			l := &layer{Hops: rt.NewHops(name, cfg.Model, readInit, logitInit), td: md.TD}
			l.bond = rt.EmbedTables(name+".bond", cfg.EdgeFeatVocab, cfg.Model.Hidden, init)
			l.out = rt.NewMLP(name, cfg.Model.Hidden, init)
			return l
		},
	})
	if err != nil {
		return nil, err
	}
	return md, nil
}

// Params implements rt.Layer: the hop weights, the BondEncoder tables,
// the MLP.
func (l *layer) Params() []*param.Param {
	return append(append(l.Hops.Params(), l.bond), l.out.Params()...)
}

// AddBuffers implements rt.Layer: the MLP's batch-norm statistics.
func (l *layer) AddBuffers(b map[string][]float64, name string) { l.out.AddBuffers(b, name) }

// CheckBatch implements rt.Arch: SPN's checks, then the edge features and
// the categorical node features.
func (m *Model) CheckBatch(b *data.Batch, o rt.Opts) error {
	return m.CheckWith(b, o, func(b *data.Batch) error {
		c := m.Cfg
		if !slices.Equal(b.EdgeFeatVocab, c.EdgeFeatVocab) || len(b.EdgeFeat) != len(b.Adj.Idx)*len(c.EdgeFeatVocab) {
			return fmt.Errorf("batch has %d edge feature values with vocabularies %v, espn was built for %v over %d edge entries", len(b.EdgeFeat), b.EdgeFeatVocab, c.EdgeFeatVocab, len(b.Adj.Idx))
		}
		if err := rt.CheckCategories(b.EdgeFeat, c.EdgeFeatVocab); err != nil {
			return fmt.Errorf("edge features: %w", err)
		}
		return nil
	})
}

// Step implements rt.Layer: one E-SPN layer (α = softmax of k logits,
// e_uv = BondEncoderᵗ(edge features)),
//
//	hᵗ_u = MLP((1+ε)·hᵗ⁻¹_u + α_1·Σ_{v∈N(u)} ReLU(hᵗ⁻¹_v + e_uv) + Σ_{i=2..k} α_i·Σ_{v∈N_i(u)} hᵗ⁻¹_v [+ (Σ_{v∈G(u)} hᵗ⁻¹_v)·Wᵗ])
//
// the bracketed term with model.global_readout (SP-MPNN with global
// readout, paper §3). rt.Net adds h⁰ = Enc(labels, attrs) +
// AtomEncoder(categorical node features) before the layers and SPN's
// readout out = Σ_t Dropout(Wᵗ·pool(hᵗ) + bᵗ) after them.
func (l *layer) Step(s *rt.Step, h *G.Node) *G.Node {
	alpha, eps, w := l.Hops.Bind(s)
	// the first hop's messages ReLU(h_v + e_uv)
	msg := s.Op(nbop.EdgeMsg{ID: s.Name + ".edge", Be: s.Be, D: l.td, Rows: l.bond.Shape[0], N: s.N, W: s.D,
		Kept: new(nbop.EdgeEmbeddings)}, h, s.Param(l.bond))
	agg := s.Op(nbop.GivenFirstHop{ID: s.Name + ".combine", Be: s.Be, D: l.td, K: l.Agg.K, N: s.N, W: s.D}, h, msg, h, alpha, eps)
	agg = s.AddGlobal(l.td, w, agg, h)
	return l.out.Apply(s, s.Name, agg, l.out.Bind(s.Param))
}

// PackDevice implements rt.DevicePreparer: the higher hop sets N_2..N_k
// with their transposes, the categorical node features, the adjacency
// with its incoming entries and the edge features Prepare set, in the
// run's pack (nbop.Data.PackTyped).
func (m *Model) PackDevice(pk *cuda.Pack) (func(), error) { return m.TD.PackTyped(pk) }
