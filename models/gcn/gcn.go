// Package gcn is Kipf & Welling's graph convolutional network (model kind
// "gcn", a competitor of the paper's Table 2), built like the SPN: the
// same input encoder, layer-sum readout and loss (models/rt), with the
// layer
//
//	h ← MLP(D̂^-1/2 (A+I) D̂^-1/2 · h)
//
// and the SPN's MLP (Linear → BN → ReLU → Linear → BN → ReLU), so that
// only the message passing differs.
package gcn

import (
	"fmt"
	"math/rand/v2"

	G "gorgonia.org/gorgonia"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/models"
	"github.com/spn-project/spn/models/kernels"
	"github.com/spn-project/spn/models/param"
	"github.com/spn-project/spn/models/rt"
	"github.com/spn-project/spn/schema/modelspec"
)

// Name is the model kind.
const Name = "gcn"

// Kind is model kind "gcn".
type Kind struct{}

// Name implements models.Kind.
func (Kind) Name() string { return Name }

// Check implements models.Kind: the common fields and k == 1.
func (Kind) Check(m modelspec.Model, _ modelspec.DatasetInfo) []modelspec.FieldError {
	return rt.CheckDirect(rt.CheckCommon(m), Name, m.K)
}

// New implements models.Kind.
func (Kind) New(cfg models.Config, seed uint64, be kernels.Backend) (models.Model, error) {
	return New(cfg, seed, be)
}

// Model is a GCN computed through Gorgonia.
type Model struct {
	rt.Engine
	layers []rt.MLP
	gd     *graphData
}

var _ models.Model = (*Model)(nil)

// New builds the GCN of cfg; initialisation and dropout masks derive from
// seed.
func New(cfg models.Config, seed uint64, be kernels.Backend) (*Model, error) {
	if err := rt.CheckConfig(Kind{}, cfg); err != nil {
		return nil, err
	}
	if be == nil {
		return nil, fmt.Errorf("gcn.New: nil kernel backend")
	}
	d := cfg.Model.Hidden
	md := &Model{Engine: rt.NewEngine(cfg, seed, be), gd: &graphData{}}
	md.Arch = md
	init := rand.New(rand.NewPCG(seed, 0x5eed1))
	md.Enc = param.NewEncoder("enc", cfg.NumLabels, cfg.AttrDim, d, init)
	for t := 1; t <= cfg.Model.Layers; t++ {
		md.layers = append(md.layers, rt.NewMLP(fmt.Sprintf("layer%d", t), d, init))
	}
	md.Readout = rt.NewReadout(cfg, init)
	return md, nil
}

// Hops implements models.Model: GCN reads Batch.Adj only.
func (m *Model) Hops() int { return 0 }

// Params implements models.Model: encoder, layers in order, readouts.
func (m *Model) Params() []*param.Param {
	ps := m.Enc.Params()
	for i := range m.layers {
		ps = append(ps, m.layers[i].Params()...)
	}
	for _, r := range m.Readout {
		ps = append(ps, r.Params()...)
	}
	return ps
}

// Buffers implements models.Model: the batch-norm running statistics.
func (m *Model) Buffers() map[string][]float64 {
	b := map[string][]float64{}
	for t := range m.layers {
		m.layers[t].AddBuffers(b, fmt.Sprintf("layer%d", t+1))
	}
	return b
}

// GradParams implements rt.Arch: the parameters bound in p.
func (m *Model) GradParams(p *rt.Program) []*param.Param { return p.BoundParams() }

// CheckBatch implements rt.Arch.
func (m *Model) CheckBatch(b *data.Batch, o rt.Opts) error {
	return rt.CheckBatch(m.Cfg, rt.Need{Adj: true, K: 1}, b, o)
}

// Prepare implements rt.Arch: the adjacency and its GCN weights.
func (m *Model) Prepare(b *data.Batch) ([]data.CSR, error) {
	if err := m.gd.set(b); err != nil {
		return nil, err
	}
	return []data.CSR{b.Adj}, nil
}

// BuildGraph implements rt.Arch: encoder, hᵗ = MLPᵗ(Â·hᵗ⁻¹) per layer,
// the SPN's readout and the loss with its gradient.
func (m *Model) BuildGraph(key rt.Key, bd *rt.BatchData) (*rt.Program, error) {
	N, d := key.N, m.Cfg.Model.Hidden
	bdr, p, be := m.NewProgram(key, bd)
	param := func(prm *param.Param) *G.Node { return p.Param(bdr, prm) }
	h := m.Encode(bdr, p, be, bd)
	hs := []*G.Node{h}
	for t := range m.layers {
		l := &m.layers[t]
		name := fmt.Sprintf("layer%d", t+1)
		agg := bdr.Op(be, newGCNAgg(name+".gcn", be, bd, m.gd, N, d), h)
		h = l.Apply(bdr, be, bd, key, name, agg, l.Bind(param))
		hs = append(hs, h)
	}
	return m.Finish(bdr, p, be, bd, hs, Name)
}
