// Package gat is Veličković et al.'s graph attention network (model kind
// "gat", a competitor of the paper's Table 2), built like the SPN: the
// same input encoder, layer-sum readout and loss (models/rt), with the
// layer
//
//	z = h·W + b,  h_u ← MLP(‖_heads Σ_{v∈N(u)∪{u}} α_uv z_v),  α_uv = softmax_v(LeakyReLU_0.2(⟨a_dst, z_u⟩ + ⟨a_src, z_v⟩))
//
// (per head over d/heads columns) and the SPN's MLP. With model.linear
// the layer is the official SP-MPNN code's (PyTorch Geometric's GATConv,
// no activation, nothing between layers): h_u ← ‖_heads Σ α_uv z_v, with
// W Glorot-uniform and b zero at initialisation.
package gat

import (
	"math"
	"math/rand/v2"

	G "gorgonia.org/gorgonia"

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

// CheckDevice implements models.DeviceKind: rt.CheckDevice (both
// variants have device math).
func (Kind) CheckDevice(cfg models.Config) error { return rt.CheckDevice(cfg) }

// ParamCount implements models.Kind: the encoder, per layer the
// attention's W, b and two heads × d/heads vectors and the MLP (none
// with model.linear), and the layer-sum readout.
func (Kind) ParamCount(cfg models.Config) int64 {
	d, heads := cfg.Model.Hidden, cfg.Model.Heads
	var vecs int64
	if heads > 0 {
		vecs = param.Times(2, param.Prod(heads, d/heads))
	}
	layer := param.Sum(param.LinearSize(d, d), vecs)
	if !cfg.Model.Linear {
		layer = param.Sum(layer, rt.MLPSize(d, 1))
	}
	return rt.NetSize(cfg, 0, layer, rt.LayerSumReadout)
}

// New implements models.Kind.
func (Kind) New(cfg models.Config, seed uint64, be kernels.Backend) (models.Model, error) {
	return New(cfg, seed, be)
}

// layer holds the attention parameters and the MLP of one GAT layer.
type layer struct {
	att        *param.Linear // z = h·W + b
	aSrc, aDst *param.Param  // attention vectors, heads × d/heads
	// MLP follows the attention unless linear (model.linear).
	rt.MLP
	linear bool
	heads  int
	gd     *graphData
}

// Model is a GAT computed through Gorgonia.
type Model struct {
	rt.AdjNet
}

var (
	_ models.Model      = (*Model)(nil)
	_ models.DeviceKind = Kind{}
	_ rt.DevicePreparer = (*Model)(nil)
)

// New builds the GAT of cfg; initialisation and dropout masks derive from
// seed.
func New(cfg models.Config, seed uint64, be kernels.Backend) (*Model, error) {
	gd := &graphData{}
	md := &Model{AdjNet: rt.AdjNet{Data: gd}}
	err := md.Init(md, Kind{}, cfg, seed, be, rt.Parts{
		Pkg: Name,
		Layer: func(_ int, name string, init *rand.Rand) rt.Layer {
			d, heads := cfg.Model.Hidden, cfg.Model.Heads
			dh := d / heads
			newAtt := param.NewLinear
			if cfg.Model.Linear {
				newAtt = param.NewGlorotLinear
			}
			l := &layer{att: newAtt(name+".att", d, d, init), linear: cfg.Model.Linear, heads: heads, gd: gd}
			l.aSrc, l.aDst = param.NewParam(name+".att.a_src", heads, dh), param.NewParam(name+".att.a_dst", heads, dh)
			bound := math.Sqrt(6 / float64(dh+1)) // Glorot-uniform, fan-in d/heads, fan-out 1
			l.aSrc.Uniform(init, bound)
			l.aDst.Uniform(init, bound)
			if !l.linear {
				l.MLP = rt.NewMLP(name, d, init)
			}
			return l
		},
	})
	if err != nil {
		return nil, err
	}
	return md, nil
}

// Params implements rt.Layer: the attention's W, b and vectors, the MLP.
func (l *layer) Params() []*param.Param {
	ps := append(l.att.Params(), l.aSrc, l.aDst)
	if l.linear {
		return ps
	}
	return append(ps, l.MLP.Params()...)
}

// AddBuffers implements rt.Layer: the MLP's running statistics (none when
// linear).
func (l *layer) AddBuffers(b map[string][]float64, name string) {
	if !l.linear {
		l.MLP.AddBuffers(b, name)
	}
}

// Step implements rt.Layer: z = h·W + b, the attention aggregation of the
// messages z_v over N(u) ∪ {u}, and the MLP as update (rt.Net adds the
// encoder before the layers and the SPN's readout after them).
func (l *layer) Step(s *rt.Step, h *G.Node) *G.Node {
	w, b := s.Param(l.att.W), s.Param(l.att.B)
	aSrc, aDst := s.Param(l.aSrc), s.Param(l.aDst)
	z := s.Op(rt.NewLinear(s.Name+".att.lin", s.Be, s.BD, rt.LinearOpts{N: s.N, In: s.D, Out: s.D}), h, w, b)
	agg := s.Op(newGATAttn(s.Name+".att", s.Be, s.BD, l.gd, attnShape{Heads: l.heads, N: s.N, D: s.D}), z, aSrc, aDst)
	if l.linear {
		return agg
	}
	return l.Apply(s, s.Name, agg, l.Bind(s.Param))
}
