// Package spn is the shortest path network (SPN) of Abboud, Dimitrov and
// Ceylan (LoG 2022), model kind "spn", and GIN (kind "gin"), the SPN with
// k = 1 over the adjacency. One SPN layer computes
//
//	h_u ← MLP((1+ε)·h_u + Σ_{i=1..k} α_i Σ_{v: dist(u,v)=i} h_v),  α = softmax(logits)
//
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
	return rt.CheckHops(errs, m, d)
}

// New implements models.Kind.
func (k Kind) New(cfg models.Config, seed uint64, be kernels.Backend) (models.Model, error) {
	return New(cfg, seed, be)
}

// layer holds the parameters of one SPN layer (the nn structs are used only
// as parameter holders with the hand-written model's names and init).
type layer struct {
	agg *param.HopAggregation // ε and the α logits
	rt.MLP
	// read is the global readout map W (d×d; model.global_readout), nil
	// without global readout.
	read *param.Param
}

// Model is the SPN (or GIN) computed through Gorgonia.
type Model struct {
	rt.Engine
	useAdj bool
	layers []*layer
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
// and dropout masks derive from seed exactly as in ref.NewSPN/NewGIN (models/internal/ref), so
// both models built from the same seed hold equal parameters.
func New(cfg models.Config, seed uint64, be kernels.Backend) (*Model, error) {
	switch cfg.Model.Kind {
	case "spn", "gin":
	default:
		return nil, fmt.Errorf("model.kind %q: spn.New builds spn and gin only", cfg.Model.Kind)
	}
	useAdj := cfg.Model.Kind == "gin"
	if err := rt.CheckConfig(Kind{GIN: useAdj}, cfg); err != nil {
		return nil, err
	}
	m := cfg.Model
	if be == nil {
		return nil, fmt.Errorf("spn.New: nil kernel backend")
	}
	// Same generators, streams and draw order as models.newSPN.
	init := rand.New(rand.NewPCG(seed, 0x5eed1))
	md := &Model{Engine: rt.NewEngine(cfg, seed, be), useAdj: useAdj, gd: &nbop.Data{}}
	md.Arch = md
	d := m.Hidden
	md.Enc = param.NewEncoder("enc", cfg.NumLabels, cfg.AttrDim, d, init)
	readInit := rt.GlobalReadInit(seed)
	for t := 1; t <= m.Layers; t++ {
		name := fmt.Sprintf("layer%d", t)
		md.layers = append(md.layers, &layer{
			agg:  param.NewHopAggregation(name+".agg", m.K, d, m.Eps, m.LearnEps),
			MLP:  rt.NewMLP(name, d, init),
			read: rt.NewGlobalRead(name, m, readInit),
		})
	}
	md.Readout = rt.NewReadout(cfg, init)
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
// ref.SPN.Params.
func (m *Model) Params() []*param.Param {
	ps := m.Enc.Params()
	for _, l := range m.layers {
		ps = append(ps, l.agg.Params()...)
		ps = append(ps, l.MLP.Params()...)
		if l.read != nil {
			ps = append(ps, l.read)
		}
	}
	for _, r := range m.Readout {
		ps = append(ps, r.Params()...)
	}
	return ps
}

// Buffers implements models.Model: the batch-norm running statistics, under
// the names ref.SPN uses.
func (m *Model) Buffers() map[string][]float64 {
	b := map[string][]float64{}
	for t, l := range m.layers {
		l.AddBuffers(b, fmt.Sprintf("layer%d", t+1))
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

// GradParams implements rt.Arch: the graph binds the parameters in the
// order of Params.
func (m *Model) GradParams(*rt.Program) []*param.Param { return m.Params() }

// need returns the neighbourhoods m aggregates over.
func (m *Model) need() rt.Need { return rt.Need{Adj: m.useAdj, K: m.Cfg.Model.K} }

// CheckBatch implements rt.Arch.
func (m *Model) CheckBatch(b *data.Batch, o rt.Opts) error {
	return rt.CheckBatch(m.Cfg, m.need(), b, o)
}

// Prepare implements rt.Arch: the data of the layers' ops, N_1..N_k (the
// adjacency for GIN; checked by CheckBatch) with their transposes and the
// graphs of b for the global readout. No runtime op reads hop sets, so
// it returns none.
func (m *Model) Prepare(b *data.Batch) ([]data.CSR, error) {
	hops := []data.CSR{b.Adj}
	if !m.useAdj {
		hops = b.Hop[:m.Cfg.Model.K]
	}
	*m.gd = nbop.Data{N: b.N, G: b.NumGraphs, Ptr: b.GraphPtr, Hop1: hops[0], Hop1T: kernels.Transpose(hops[0])}
	for _, h := range hops[1:] {
		m.gd.Hops = append(m.gd.Hops, h)
		m.gd.HopsT = append(m.gd.HopsT, kernels.Transpose(h))
	}
	return nil, nil
}

// BuildGraph implements rt.Arch: the expression graph of the model for the
// padded sizes of key,
//
//	h⁰ = Enc(labels, attrs)
//	hᵗ_u = MLPᵗ((1+εᵗ)·hᵗ⁻¹_u + Σ_{i=1..k} αᵗ_i Σ_{v: dist(u,v)=i} hᵗ⁻¹_v [+ (Σ_{v∈G(u)} hᵗ⁻¹_v)·Wᵗ]),  αᵗ = softmax(logitsᵗ)
//	out = Σ_{t=0..T} Dropout(Wᵗ·pool(hᵗ) + bᵗ)
//
// with MLP = Linear → BatchNorm → ReLU → Linear → BatchNorm → ReLU, the
// bracketed term only with model.global_readout (SP-MPNN with global
// readout, paper §3), then the loss (or ⟨out, seed⟩) and its symbolic
// gradient when asked.
func (m *Model) BuildGraph(key rt.Key, bd *rt.BatchData) (*rt.Program, error) {
	N, d, k := key.N, m.Cfg.Model.Hidden, m.Cfg.Model.K
	bdr, p, be := m.NewProgram(key, bd)
	param := func(prm *param.Param) *G.Node { return p.Param(bdr, prm) }

	// Input encoding h⁰ (parameter nodes in the order of Params()).
	h := m.Encode(bdr, p, be, bd)
	hs := []*G.Node{h}

	for t, l := range m.layers {
		name := fmt.Sprintf("layer%d", t+1)
		logits, eps := param(l.agg.Logits), param(l.agg.Eps)
		mn := l.Bind(param)

		// α = softmax(logits)
		alpha := bdr.Op(be, rt.NewSoftmax(name+".alpha", k), logits)
		// (1+ε)·h_u + Σ_{i=1..k} α_i Σ_{v: dist(u,v)=i} h_v
		agg := bdr.Op(be, nbop.Combine{ID: name + ".agg", Be: be, D: m.gd, K: k, N: N, W: d, Hop1: true, Bufs: be, Sums: new([][]float32)}, h, alpha, eps)
		// + (Σ_{v∈G(u)} h_v)·W with global readout
		if l.read != nil {
			agg = rt.GlobalRead(bdr, be, m.gd, name, param(l.read), agg, h, N, d)
		}
		// MLP: Linear → BN → ReLU → Linear → BN → ReLU
		h = l.Apply(bdr, be, bd, key, name, agg, mn)
		hs = append(hs, h)
	}

	// Readout, loss and gradient.
	return m.Finish(bdr, p, be, bd, hs, "model")
}
