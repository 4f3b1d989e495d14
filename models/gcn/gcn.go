// Package gcn is Kipf & Welling's graph convolutional network (model kind
// "gcn", a competitor of the paper's Table 2), built like the SPN: the
// same input encoder, layer-sum readout and loss (models/rt), with the
// layer
//
//	h ← MLP(D̂^-1/2 (A+I) D̂^-1/2 · h)
//
// and the SPN's MLP (Linear → BN → ReLU → Linear → BN → ReLU), so that
// only the message passing differs. With model.linear the layer is the
// official SP-MPNN code's (PyTorch Geometric's GCNConv, nothing between
// layers):
//
//	h ← D̂^-1/2 (A+I) D̂^-1/2 · h · Θ + b
//
// so the whole network up to the readout is affine in its input.
package gcn

import (
	"math/rand/v2"

	G "gorgonia.org/gorgonia"

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

// CheckDevice implements models.DeviceKind: rt.CheckDevice (both
// variants have device math).
func (Kind) CheckDevice(cfg models.Config) error { return rt.CheckDevice(cfg) }

// ParamCount implements models.Kind: the encoder, per layer the MLP
// (or, with model.linear, Θ and b), and the layer-sum readout.
func (Kind) ParamCount(cfg models.Config) int64 {
	d := cfg.Model.Hidden
	layer := rt.MLPSize(d, 1)
	if cfg.Model.Linear {
		layer = param.LinearSize(d, d)
	}
	return rt.NetSize(cfg, 0, layer, rt.LayerSumReadout)
}

// New implements models.Kind.
func (Kind) New(cfg models.Config, seed uint64, be kernels.Backend) (models.Model, error) {
	return New(cfg, seed, be)
}

// Model is a GCN computed through Gorgonia.
type Model struct {
	rt.AdjNet
}

var (
	_ models.Model      = (*Model)(nil)
	_ models.DeviceKind = Kind{}
	_ rt.DevicePreparer = (*Model)(nil)
)

// layer is one GCN layer: Â·h, then the SPN's MLP.
type layer struct {
	rt.MLP
	gd *graphData
}

// New builds the GCN of cfg; initialisation and dropout masks derive from
// seed.
func New(cfg models.Config, seed uint64, be kernels.Backend) (*Model, error) {
	gd := &graphData{}
	md := &Model{AdjNet: rt.AdjNet{Data: gd}}
	err := md.Init(md, Kind{}, cfg, seed, be, rt.Parts{
		Pkg: Name,
		Layer: func(_ int, name string, init *rand.Rand) rt.Layer {
			d := cfg.Model.Hidden
			if cfg.Model.Linear {
				return &linearLayer{lin: param.NewGlorotLinear(name+".lin", d, d, init), gd: gd}
			}
			return &layer{MLP: rt.NewMLP(name, d, init), gd: gd}
		},
	})
	if err != nil {
		return nil, err
	}
	return md, nil
}

// Step implements rt.Layer: hᵗ = MLPᵗ(Â·hᵗ⁻¹), the messages Â_uv·h_v
// summed over N(u) ∪ {u} and the MLP as update (rt.Net adds the encoder
// before the layers and the SPN's readout after them).
func (l *layer) Step(s *rt.Step, h *G.Node) *G.Node {
	agg := s.Op(newGCNAgg(s.Name+".gcn", s.Be, l.gd, s.N, s.D), h)
	return l.Apply(s, s.Name, agg, l.Bind(s.Param))
}

// linearLayer is the official code's GCN layer (model.linear): Â·h·Θ + b,
// Θ Glorot-uniform and b zero at initialisation, no batch norm.
type linearLayer struct {
	lin *param.Linear
	gd  *graphData
}

// Params implements rt.Layer: Θ and b.
func (l *linearLayer) Params() []*param.Param { return l.lin.Params() }

// AddBuffers implements rt.Layer: the layer has no running statistics.
func (l *linearLayer) AddBuffers(map[string][]float64, string) {}

// Step implements rt.Layer: hᵗ = Â·hᵗ⁻¹·Θᵗ + bᵗ.
func (l *linearLayer) Step(s *rt.Step, h *G.Node) *G.Node {
	agg := s.Op(newGCNAgg(s.Name+".gcn", s.Be, l.gd, s.N, s.D), h)
	return s.Op(rt.NewLinear(s.Name+".lin", s.Be, s.BD, rt.LinearOpts{N: s.N, In: s.D, Out: s.D}), agg, s.Param(l.lin.W), s.Param(l.lin.B))
}
