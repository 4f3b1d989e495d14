package rt

import (
	"math/rand/v2"

	G "gorgonia.org/gorgonia"

	"github.com/spn-project/spn/models/nbop"
	"github.com/spn-project/spn/models/param"
	"github.com/spn-project/spn/schema/modelspec"
)

// Hops are the weights an SP-MPNN layer (spn, espn, rspn) puts on its hop
// sums: ε and the logits of α over k hops, and the global readout map W
// (model.global_readout; nil without it).
type Hops struct {
	Agg  *param.HopAggregation
	Read *param.Param
}

// NewHops returns layer name's hop weights for m, W drawn from readInit
// (param.GlobalReadInit): ε = m.Eps, the logits zero or, with m.AlphaInit
// "normal", drawn from logitInit (param.HopLogitInit; one generator per model,
// layers in order).
func NewHops(name string, m modelspec.Model, readInit, logitInit *rand.Rand) Hops {
	h := Hops{
		Agg:  param.NewHopAggregation(name+".agg", m.HopTerms(), m.Hidden, m.Eps, m.LearnEps),
		Read: NewGlobalRead(name, m, readInit),
	}
	if m.AlphaInit == modelspec.AlphaNormal {
		h.Agg.Logits.Normal(logitInit)
	}
	return h
}

// HopAggregation implements HopLayer.
func (h *Hops) HopAggregation() *param.HopAggregation { return h.Agg }

// Params returns the logits, ε and W (when there is one), as Bind binds
// them.
func (h *Hops) Params() []*param.Param {
	ps := h.Agg.Params()
	if h.Read != nil {
		ps = append(ps, h.Read)
	}
	return ps
}

// Bind binds the hop weights in s's graph and returns α = softmax(logits),
// ε and W (nil without global readout).
func (h *Hops) Bind(s *Step) (alpha, eps, w *G.Node) {
	logits, eps := s.Param(h.Agg.Logits), s.Param(h.Agg.Eps)
	alpha = s.Op(NewSoftmax(s.Name+".alpha", h.Agg.K), logits)
	if h.Read != nil {
		w = s.Param(h.Read)
	}
	return alpha, eps, w
}

// AddGlobal returns x + (Σ_{v∈G(u)} h_v)·W over the graphs of gd (x when
// w is nil): the global readout term of an SP-MPNN with global readout
// (paper §3), for the node w of the layer's map (nbop.GlobalRead).
func (s *Step) AddGlobal(gd *nbop.Data, w, x, h *G.Node) *G.Node {
	bdr := s.Bdr
	if w == nil || bdr.err != nil {
		return x
	}
	r := bdr.Op(s.Be, nbop.GlobalRead{ID: s.Name + ".global_readout", Be: s.Be, D: gd, N: s.N, W: s.D}, h, w)
	if bdr.err != nil {
		return x
	}
	return s.Add(x, r, s.Name+".global_readout.sum")
}
