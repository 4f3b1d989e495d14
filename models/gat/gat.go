// Package gat is Veličković et al.'s graph attention network (model kind
// "gat", a competitor of the paper's Table 2), built like the SPN: the
// same input encoder, layer-sum readout and loss (models/rt), with the
// layer
//
//	z = h·W + b,  h_u ← MLP(‖_heads Σ_{v∈N(u)∪{u}} α_uv z_v),  α_uv = softmax_v(LeakyReLU_0.2(⟨a_dst, z_u⟩ + ⟨a_src, z_v⟩))
//
// (per head over d/heads columns) and the SPN's MLP.
package gat

import (
	"fmt"
	"math"
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
const Name = "gat"

// Kind is model kind "gat".
type Kind struct{}

// Name implements models.Kind.
func (Kind) Name() string { return Name }

// Check implements models.Kind: the common fields, k == 1 and heads
// dividing hidden.
func (Kind) Check(m modelspec.Model, _ modelspec.DatasetInfo) []modelspec.FieldError {
	return rt.CheckHeads(rt.CheckDirect(rt.CheckCommon(m), Name, m.K), m)
}

// New implements models.Kind.
func (Kind) New(cfg models.Config, seed uint64, be kernels.Backend) (models.Model, error) {
	return New(cfg, seed, be)
}

// layer holds the attention parameters and the MLP of one GAT layer.
type layer struct {
	att        *param.Linear // z = h·W + b
	aSrc, aDst *param.Param  // attention vectors, heads × d/heads
	rt.MLP
}

// Model is a GAT computed through Gorgonia.
type Model struct {
	rt.Engine
	heads  int
	layers []*layer
	gd     *graphData
}

var _ models.Model = (*Model)(nil)

// New builds the GAT of cfg; initialisation and dropout masks derive from
// seed.
func New(cfg models.Config, seed uint64, be kernels.Backend) (*Model, error) {
	if err := rt.CheckConfig(Kind{}, cfg); err != nil {
		return nil, err
	}
	if be == nil {
		return nil, fmt.Errorf("gat.New: nil kernel backend")
	}
	m := cfg.Model
	d := m.Hidden
	md := &Model{Engine: rt.NewEngine(cfg, seed, be), heads: m.Heads, gd: &graphData{}}
	md.Arch = md
	init := rand.New(rand.NewPCG(seed, 0x5eed1))
	md.Enc = param.NewEncoder("enc", cfg.NumLabels, cfg.AttrDim, d, init)
	for t := 1; t <= m.Layers; t++ {
		name := fmt.Sprintf("layer%d", t)
		dh := d / md.heads
		l := &layer{att: param.NewLinear(name+".att", d, d, init)}
		l.aSrc, l.aDst = param.NewParam(name+".att.a_src", md.heads, dh), param.NewParam(name+".att.a_dst", md.heads, dh)
		bound := math.Sqrt(6 / float64(dh+1)) // Glorot-uniform, fan-in d/heads, fan-out 1
		l.aSrc.Uniform(init, bound)
		l.aDst.Uniform(init, bound)
		l.MLP = rt.NewMLP(name, d, init)
		md.layers = append(md.layers, l)
	}
	md.Readout = rt.NewReadout(cfg, init)
	return md, nil
}

// Hops implements models.Model: GAT reads Batch.Adj only.
func (m *Model) Hops() int { return 0 }

// Params implements models.Model: encoder, layers in order, readouts.
func (m *Model) Params() []*param.Param {
	ps := m.Enc.Params()
	for _, l := range m.layers {
		ps = append(ps, l.att.Params()...)
		ps = append(ps, l.aSrc, l.aDst)
		ps = append(ps, l.MLP.Params()...)
	}
	for _, r := range m.Readout {
		ps = append(ps, r.Params()...)
	}
	return ps
}

// Buffers implements models.Model: the batch-norm running statistics.
func (m *Model) Buffers() map[string][]float64 {
	b := map[string][]float64{}
	for t, l := range m.layers {
		l.AddBuffers(b, fmt.Sprintf("layer%d", t+1))
	}
	return b
}

// GradParams implements rt.Arch: the parameters bound in p.
func (m *Model) GradParams(p *rt.Program) []*param.Param { return p.BoundParams() }

// CheckBatch implements rt.Arch.
func (m *Model) CheckBatch(b *data.Batch, o rt.Opts) error {
	return rt.CheckBatch(m.Cfg, rt.Need{Adj: true, K: 1}, b, o)
}

// Prepare implements rt.Arch: the adjacency and its neighbourhoods with
// self loops.
func (m *Model) Prepare(b *data.Batch) ([]data.CSR, error) {
	if err := m.gd.set(b); err != nil {
		return nil, err
	}
	return []data.CSR{b.Adj}, nil
}

// BuildGraph implements rt.Arch: encoder, per layer z = h·W + b, the
// attention aggregation and the MLP, then the SPN's readout and the loss
// with its gradient.
func (m *Model) BuildGraph(key rt.Key, bd *rt.BatchData) (*rt.Program, error) {
	N, d := key.N, m.Cfg.Model.Hidden
	bdr, p, be := m.NewProgram(key, bd)
	param := func(prm *param.Param) *G.Node { return p.Param(bdr, prm) }
	h := m.Encode(bdr, p, be, bd)
	hs := []*G.Node{h}
	for t, l := range m.layers {
		name := fmt.Sprintf("layer%d", t+1)
		w, b := param(l.att.W), param(l.att.B)
		aSrc, aDst := param(l.aSrc), param(l.aDst)
		z := bdr.Op(be, rt.NewLinear(name+".att.lin", be, bd, false, N, d, d), h, w, b)
		agg := bdr.Op(be, newGATAttn(name+".att", be, bd, m.gd, m.heads, N, d), z, aSrc, aDst)
		h = l.Apply(bdr, be, bd, key, name, agg, l.Bind(param))
		hs = append(hs, h)
	}
	return m.Finish(bdr, p, be, bd, hs, Name)
}
