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
	"math/rand/v2"

	G "gorgonia.org/gorgonia"

	"github.com/spn-project/spn/models"
	"github.com/spn-project/spn/models/kernels"
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
type Model struct{ rt.AdjNet }

var _ models.Model = (*Model)(nil)

// layer is one GCN layer: Â·h, then the SPN's MLP.
type layer struct {
	rt.MLP
	gd *graphData
}

// New builds the GCN of cfg; initialisation and dropout masks derive from
// seed.
func New(cfg models.Config, seed uint64, be kernels.Backend) (*Model, error) {
	gd := &graphData{}
	md := &Model{rt.AdjNet{Data: gd}}
	err := md.Init(md, Name, Kind{}, cfg, seed, be, rt.Parts{
		Layer: func(_ int, name string, init *rand.Rand) rt.Layer {
			return &layer{MLP: rt.NewMLP(name, cfg.Model.Hidden, init), gd: gd}
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
	agg := s.Op(newGCNAgg(s.Name+".gcn", s.Be, s.BD, l.gd, s.N, s.D), h)
	return l.Apply(s.Bdr, s.Be, s.BD, s.Key, s.Name, agg, l.Bind(s.Param))
}
