// Package graphormer is Ying et al.'s Graphormer (model kind
// "graphormer", a competitor of the paper's Table 2), built like the SPN
// (models/rt: input encoder, layer-sum readout, loss): a degree
// (centrality) embedding added to the encoder output, then pre-LN
// transformer blocks h += Wo·MHA(LN(h)), h += FFN(LN(h)) whose attention
// runs over all node pairs of each graph with a learnable bias per head
// and shortest-path distance bucket (0..max_dist, longer distances
// clamped to max_dist, unreachable pairs in a bucket of their own).
package graphormer

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
const Name = "graphormer"

// MaxDegree clamps node degrees for Graphormer's centrality embedding.
const MaxDegree = 32

// Kind is model kind "graphormer".
type Kind struct{}

// Name implements models.Kind.
func (Kind) Name() string { return Name }

// Check implements models.Kind: the common fields, heads dividing hidden
// and 1 ≤ max_dist ≤ dataset.kmax.
func (Kind) Check(m modelspec.Model, d modelspec.DatasetInfo) []modelspec.FieldError {
	errs := rt.CheckHeads(rt.CheckCommon(m), m)
	if m.MaxDist < 1 {
		return append(errs, rt.Errf("max_dist", "max_dist = %d: need at least 1", m.MaxDist))
	}
	if d.KMax > 0 && m.MaxDist > d.KMax {
		errs = append(errs, rt.Errf("max_dist", "graphormer's max_dist = %d exceeds dataset.kmax = %d (its distance buckets read the hop sets up to max_dist)", m.MaxDist, d.KMax))
	}
	return errs
}

// ParamCount implements models.Kind: the encoder and the degree
// embedding, per layer two layer norms, the attention's four maps and
// spatial bias and the two feed-forward maps, and the layer-sum readout.
func (Kind) ParamCount(cfg models.Config) int64 {
	m := cfg.Model
	d := m.Hidden
	layer := param.Sum(param.Times(4, param.Prod(d)), param.Times(6, param.LinearSize(d, d)), param.Prod(m.MaxDist+2, m.Heads))
	return rt.NetSize(cfg, param.Prod(MaxDegree+1, d), layer, rt.LayerSumReadout)
}

// New implements models.Kind.
func (Kind) New(cfg models.Config, seed uint64, be kernels.Backend) (models.Model, error) {
	return New(cfg, seed, be)
}

// tfLayer holds the parameters of one pre-LN Graphormer block.
type tfLayer struct {
	ln1        *param.LayerNorm
	q, k, v, o *param.Linear
	bias       *param.Param // (max_dist+2) × heads
	ln2        *param.LayerNorm
	ff1, ff2   *param.Linear
	// heads and maxDist size the attention; gd is the model's batch data.
	heads, maxDist int
	gd             *graphData
}

// Model is a Graphormer computed through Gorgonia.
type Model struct {
	rt.Net
	maxDist int
	gd      *graphData
}

var _ models.Model = (*Model)(nil)

// New builds the Graphormer of cfg; initialisation and dropout masks
// derive from seed.
func New(cfg models.Config, seed uint64, be kernels.Backend) (*Model, error) {
	m := cfg.Model
	md := &Model{maxDist: m.MaxDist, gd: &graphData{}}
	err := md.Init(md, Kind{}, cfg, seed, be, rt.Parts{
		Pkg: Name,
		Input: func(init *rand.Rand) rt.Input {
			e := &degreeInput{p: param.NewParam("enc.degree", MaxDegree+1, m.Hidden), gd: md.gd}
			e.p.Uniform(init, 0.1)
			return e
		},
		Layer: func(_ int, name string, init *rand.Rand) rt.Layer {
			return newTFLayer(name, m.Hidden, m.Heads, m.MaxDist, md.gd, init)
		},
	})
	if err != nil {
		return nil, err
	}
	return md, nil
}

// degreeInput is the degree embedding E[deg] added to h⁰: (MaxDegree+1) × d.
type degreeInput struct {
	p  *param.Param
	gd *graphData
}

// Params implements rt.Input.
func (e *degreeInput) Params() []*param.Param { return []*param.Param{e.p} }

// Add implements rt.Input: h + E[deg].
func (e *degreeInput) Add(s *rt.Step, h *G.Node) *G.Node {
	return s.Op(newDegEmb("enc.degree", s.Be, s.BD, e.gd, s.N, s.D), h, s.Param(e.p))
}

// Hops implements models.Model: Graphormer reads N_1..N_max_dist (so the
// dataset's kmax must be at least max_dist).
func (m *Model) Hops() int { return m.maxDist }

// need are the hop sets the distance buckets read.
func (m *Model) need() rt.Need { return rt.Need{K: m.maxDist} }

// CheckBatch implements rt.Arch: the hop sets first, so that the message
// names max_dist.
func (m *Model) CheckBatch(b *data.Batch, o rt.Opts) error {
	if b != nil && len(b.Hop) < m.maxDist {
		return fmt.Errorf("batch carries %d hop sets, graphormer needs N_1..N_%d (model.max_dist = %d; the dataset's kmax must be at least max_dist)", len(b.Hop), m.maxDist, m.maxDist)
	}
	return rt.CheckBatch(m.Cfg, m.need(), b, o)
}

// Prepare implements rt.Arch: the checked hop sets, the degrees and the
// distance buckets of the batch.
func (m *Model) Prepare(b *data.Batch) ([]data.CSR, error) {
	hops := m.need().Sets(b)
	if err := m.gd.set(b, m.maxDist); err != nil {
		return nil, err
	}
	return hops, nil
}

// newTFLayer returns the parameters of one pre-LN Graphormer block of width
// d: layer norms (γ = 1, β = 0), the q, k, v and output projections, the
// spatial bias per distance bucket and head (zero), and a d→d→d FFN.
func newTFLayer(name string, d, heads, maxDist int, gd *graphData, init *rand.Rand) *tfLayer {
	l := &tfLayer{
		heads: heads, maxDist: maxDist, gd: gd,
		ln1: param.NewLayerNorm(name+".ln1", d),
		q:   param.NewLinear(name+".attn.q", d, d, init), k: param.NewLinear(name+".attn.k", d, d, init),
		v: param.NewLinear(name+".attn.v", d, d, init), o: param.NewLinear(name+".attn.o", d, d, init),
		bias: param.NewParam(name+".attn.spatial_bias", maxDist+2, heads),
		ln2:  param.NewLayerNorm(name+".ln2", d),
		ff1:  param.NewLinear(name+".ffn1", d, d, init), ff2: param.NewLinear(name+".ffn2", d, d, init),
	}
	for _, p := range append(append(l.ln1.Params(), l.ln2.Params()...), l.bias) {
		p.NoDecay = true
	}
	return l
}

// Params implements rt.Layer: the block's parameters in a fixed order.
func (l *tfLayer) Params() []*param.Param {
	ps := l.ln1.Params()
	for _, lin := range []*param.Linear{l.q, l.k, l.v} {
		ps = append(ps, lin.Params()...)
	}
	ps = append(ps, l.bias)
	ps = append(ps, l.o.Params()...)
	ps = append(ps, l.ln2.Params()...)
	ps = append(ps, l.ff1.Params()...)
	return append(ps, l.ff2.Params()...)
}

// AddBuffers implements rt.Layer: a block has no batch norm.
func (l *tfLayer) AddBuffers(map[string][]float64, string) {}

// Step implements rt.Layer: the block, whose messages are the attention
// values v over N_0..N_max_dist with the spatial bias, aggregated by the
// attention and updated by the residual FFN,
//
//	a = LN₁(h);  h' = h + Wo·Attn(Wq a, Wk a, Wv a; spatial bias)
//	f = LN₂(h'); out = h' + W₂·ReLU(W₁ f)
//
// (rt.Net adds h⁰ = Enc(labels, attrs) + E[deg] before the blocks and the
// SPN's readout after them).
func (l *tfLayer) Step(s *rt.Step, h *G.Node) *G.Node {
	bdr, bind, name, be, bd, gd, heads, maxDist, N, d := s.Bdr, s.Param, s.Name, s.Be, s.BD, l.gd, l.heads, l.maxDist, s.N, s.D
	lin := func(id string, ln *param.Linear, x *G.Node) *G.Node {
		return bdr.Op(be, rt.NewLinear(id, be, bd, rt.LinearOpts{N: N, In: d, Out: d}), x, bind(ln.W), bind(ln.B))
	}
	add := func(a, b *G.Node, part string) *G.Node { return s.Add(a, b, name+"."+part+".residual") }
	a := bdr.Op(be, rt.NewLayerNorm(name+".ln1", be, bd, false, N, d), h, bind(l.ln1.Gamma), bind(l.ln1.Beta))
	q, k, v := lin(name+".attn.q", l.q, a), lin(name+".attn.k", l.k, a), lin(name+".attn.v", l.v, a)
	att := bdr.Op(be, newGraphAttn(name+".attn", be, bd, gd, attnShape{Heads: heads, Buckets: maxDist + 2, N: N, D: d}), q, k, v, bind(l.bias))
	h = add(h, lin(name+".attn.o", l.o, att), "attn")
	f := bdr.Op(be, rt.NewLayerNorm(name+".ln2", be, bd, false, N, d), h, bind(l.ln2.Gamma), bind(l.ln2.Beta))
	f = bdr.Op(be, newReLU(name+".ffn.relu", N, d), lin(name+".ffn1", l.ff1, f))
	return add(h, lin(name+".ffn2", l.ff2, f), "ffn")
}
