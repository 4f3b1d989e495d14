// Package spn is the shortest path network (SPN) of Abboud, Dimitrov and
// Ceylan (LoG 2022), model kind "spn", and GIN (kind "gin"), the SPN with
// k = 1 over the adjacency. One SPN layer computes
//
//	h_u ← MLP((1+ε)·h_u + Σ_{i=1..k} α_i Σ_{v: dist(u,v)=i} h_v),  α = softmax(logits)
//
// (with model.unreachable, plus α_∞ Σ_{v∈N_∞(u)} h_v over the nodes of
// u's graph that u cannot reach, α then the softmax of k+1 logits: the
// paper's appendix, for disconnected graphs) with the logits zero at initialisation (uniform α) or, with
// model.alpha_init "normal", drawn from N(0, 1) as in the official code
// (Model.BuildGraph, one line per term). The shared Gorgonia runtime
// (models/rt) does the rest: input encoding, layer-sum readout, loss,
// bucketing, the compiled-graph cache, Step and Predict.
package spn

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

// Kind is model kind "spn" or, with GIN, "gin".
type Kind struct{ GIN bool }

// Name implements models.Kind.
func (k Kind) Name() string {
	if k.GIN {
		return "gin"
	}
	return "spn"
}

// Check implements models.Kind: the common fields, gin's k == 1 and
// 1 ≤ k ≤ dataset.kmax.
func (k Kind) Check(m modelspec.Model, d modelspec.DatasetInfo) []modelspec.FieldError {
	errs := rt.CheckCommon(m)
	if k.GIN && m.K != 1 {
		return append(errs, rt.Errf("k", "gin requires k == 1 (GIN is SPN with k = 1), got k = %d", m.K))
	}
	if k.GIN && m.Unreachable {
		return append(errs, rt.Errf("unreachable", "gin aggregates over direct neighbours only; use kind spn with k = 1 for N_1 and N_∞"))
	}
	return rt.CheckHops(errs, m, d)
}

// CheckDevice implements models.DeviceKind: rt.CheckDevice.
func (k Kind) CheckDevice(cfg models.Config) error { return rt.CheckDevice(cfg) }

// ParamCount implements models.Kind: the encoder, per layer the hop
// weights and the MLP, and the layer-sum readout.
func (k Kind) ParamCount(cfg models.Config) int64 {
	return rt.NetSize(cfg, 0, param.Sum(rt.HopsSize(cfg.Model), rt.MLPSize(cfg.Model.Hidden, 1)), rt.LayerSumReadout)
}

// New implements models.Kind.
func (k Kind) New(cfg models.Config, seed uint64, be kernels.Backend) (models.Model, error) {
	return New(cfg, seed, be)
}

// layer is one SPN layer: its hop weights (ε, the α logits and, with
// global readout, W) and its MLP.
type layer struct {
	rt.Hops
	rt.MLP
	// gd is the model's batch data for the layer's ops.
	gd *nbop.Data
}

// Model is the SPN (or GIN) computed through Gorgonia.
type Model struct {
	rt.Net
	useAdj bool
	// gd is what the layers' ops read of the batch (hop sets, graphs): an
	// object of its own, so that the compiled graphs (whose tape machines
	// have finalizers) do not point back into the model and keep it alive.
	gd *nbop.Data
}

var (
	_ models.Model      = (*Model)(nil)
	_ models.HopWeights = (*Model)(nil)
)

// New builds the model cfg.Model.Kind ("spn" or "gin"); all initialisation
// and dropout masks derive from seed exactly as in ref.NewSPN/NewGIN (models/internal/testkit/ref), so
// both models built from the same seed hold equal parameters.
func New(cfg models.Config, seed uint64, be kernels.Backend) (*Model, error) {
	switch cfg.Model.Kind {
	case "spn", "gin":
	default:
		return nil, fmt.Errorf("model.kind %q: spn.New builds spn and gin only", cfg.Model.Kind)
	}
	useAdj := cfg.Model.Kind == "gin"
	md := &Model{useAdj: useAdj, gd: &nbop.Data{}}
	readInit, logitInit := param.GlobalReadInit(seed), param.HopLogitInit(seed)
	err := md.Init(md, Kind{GIN: useAdj}, cfg, seed, be, rt.Parts{
		Pkg:  "spn",
		What: "model",
		Layer: func(_ int, name string, init *rand.Rand) rt.Layer {
			// Same draws, in the same order, as ref.NewSPN: the MLP's
			// from init, W's from readInit.
			return &layer{Hops: rt.NewHops(name, cfg.Model, readInit, logitInit), MLP: rt.NewMLP(name, cfg.Model.Hidden, init), gd: md.gd}
		},
	})
	if err != nil {
		return nil, err
	}
	return md, nil
}

// Hops implements models.Model: k for SPN, 0 for GIN (which reads Batch.Adj).
func (m *Model) Hops() int {
	if m.useAdj {
		return 0
	}
	return m.Cfg.Model.K
}

// Params implements models.Model, in the order and with the names of
// ref.SPN.Params: per layer the α logits, ε, the MLP, then W.
func (l *layer) Params() []*param.Param {
	ps := append(l.Agg.Params(), l.MLP.Params()...)
	if l.Read != nil {
		ps = append(ps, l.Read)
	}
	return ps
}

// HopWeights implements models.HopWeights: α and ε per layer.
func (m *Model) HopWeights() (alpha [][]float64, eps []float64) { return rt.NetHopWeights(m.Layers) }

// GradParams implements rt.Arch: the graph binds the parameters in the
// order of Params.
func (m *Model) GradParams(*rt.Program) []*param.Param { return m.Params() }

// need returns the neighbourhoods m aggregates over.
func (m *Model) need() rt.Need {
	return rt.Need{Adj: m.useAdj, K: m.Cfg.Model.K, Unreachable: m.Cfg.Model.Unreachable}
}

// ReadsUnreachable implements models.UnreachableReader: model.unreachable.
func (m *Model) ReadsUnreachable() bool { return m.Cfg.Model.Unreachable }

// CheckBatch implements rt.Arch.
func (m *Model) CheckBatch(b *data.Batch, o rt.Opts) error {
	return rt.CheckBatch(m.Cfg, m.need(), b, o)
}

// Prepare implements rt.Arch: the data of the layers' ops, N_1..N_k (the
// adjacency for GIN), then N_∞ with model.unreachable (checked by
// CheckBatch), with their transposes and the graphs of b for the global
// readout. No runtime op reads hop sets, so it returns none.
func (m *Model) Prepare(b *data.Batch) ([]data.CSR, error) {
	m.gd.SetHop1(b, m.need().Sets(b))
	return nil, nil
}

// Step implements rt.Layer: one SPN layer, its equation term by term,
//
//	hᵗ_u = MLPᵗ((1+εᵗ)·hᵗ⁻¹_u + Σ_{i=1..k} αᵗ_i Σ_{v: dist(u,v)=i} hᵗ⁻¹_v [+ (Σ_{v∈G(u)} hᵗ⁻¹_v)·Wᵗ]),  αᵗ = softmax(logitsᵗ)
//
// with MLP = Linear → BatchNorm → ReLU → Linear → BatchNorm → ReLU, with
// model.unreachable one more hop term α_∞ Σ_{v∈N_∞(u)} h_v (N_∞ is the
// last set Prepare gives HopCombine, α_∞ the last α), and the
// bracketed term only with model.global_readout (SP-MPNN with global
// readout, paper §3). rt.Net adds h⁰ = Enc(labels, attrs) before the
// layers and the readout out = Σ_{t=0..T} Dropout(Wᵗ·pool(hᵗ) + bᵗ) after
// them. Parameters are bound in the order of Params (GradParams).
func (l *layer) Step(s *rt.Step, h *G.Node) *G.Node {
	// ε and the logits of α
	logits, eps := s.Param(l.Agg.Logits), s.Param(l.Agg.Eps)
	mn := l.MLP.Bind(s.Param)

	// α = softmax(logits)
	alpha := s.Op(rt.NewSoftmax(s.Name+".alpha", l.Agg.K), logits)
	// (1+ε)·h_u + Σ_{i=1..k} α_i Σ_{v: dist(u,v)=i} h_v: the messages h_v of
	// the nodes at distance i, aggregated per hop and weighted by α_i
	agg := s.Op(&nbop.HopCombine{ID: s.Name + ".agg", Be: s.Be, D: l.gd, K: l.Agg.K, N: s.N, W: s.D}, h, alpha, eps)
	// + (Σ_{v∈G(u)} h_v)·W with global readout
	if l.Read != nil {
		agg = s.AddGlobal(l.gd, s.Param(l.Read), agg, h)
	}
	// the update: MLP = Linear → BN → ReLU → Linear → BN → ReLU
	return l.Apply(s, s.Name, agg, mn)
}

// PackDevice implements rt.DevicePreparer: the hop sets Prepare set
// (N_1..N_k, or the adjacency for GIN) and their transposes, and the
// graph offsets (the global readout's), in the run's pack.
func (m *Model) PackDevice(pk *cuda.Pack) (func(), error) {
	h, err := nbop.PackHops(pk, m.gd, 1+len(m.gd.Hops))
	if err != nil {
		return nil, err
	}
	dropPtr := m.gd.PackPtr(pk)
	m.gd.Dev = h
	return func() {
		m.gd.Dev = nil
		dropPtr()
	}, nil
}
