package gg

import (
	"fmt"
	"math"
	"math/rand/v2"

	G "gorgonia.org/gorgonia"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/models"
	"github.com/spn-project/spn/models/kernels"
	"github.com/spn-project/spn/models/nn"
)

// Competitor kinds of the paper's Table 2, built like the SPN of New: the
// same input encoder, the same layer-sum readout (pool → linear → dropout,
// summed over the encoder output and every layer) and the same loss, so
// that only the message passing differs.
//
//   - "gcn" (Kipf & Welling 2017): agg = D̂^-1/2 (A+I) D̂^-1/2 · h, then the
//     SPN's MLP (Linear → BN → ReLU → Linear → BN → ReLU).
//   - "gat" (Veličković et al. 2018): agg = multi-head attention over the
//     direct neighbours and the node itself of z = h·W + b (LeakyReLU 0.2,
//     softmax per destination node, heads concatenated), then the MLP.
//   - "graphormer" (Ying et al. 2021): a degree (centrality) embedding added
//     to the encoder output, then pre-LN transformer blocks
//     h += Wo·MHA(LN(h)), h += FFN(LN(h)) whose attention runs over all node
//     pairs of each graph with a learnable bias per head and shortest-path
//     distance bucket (0..max_dist, longer distances clamped to max_dist,
//     unreachable pairs in a bucket of their own).
const (
	KindGCN        = "gcn"
	KindGAT        = "gat"
	KindGraphormer = "graphormer"
)

// MaxDegree clamps node degrees for Graphormer's centrality embedding.
const (
	// MaxDegree clamps node degrees for Graphormer's centrality embedding.
	MaxDegree = 32
)

// mlpLayer holds the parameters of the SPN-style MLP of a GCN or GAT layer
// (and, for GAT, the attention parameters).
type mlpLayer struct {
	att        *nn.Linear // GAT: z = h·W + b
	aSrc, aDst *nn.Param  // GAT: attention vectors, heads × d/heads
	mlp
}

// tfLayer holds the parameters of one pre-LN Graphormer block.
type tfLayer struct {
	ln1g, ln1b *nn.Param
	q, k, v, o *nn.Linear
	bias       *nn.Param // (max_dist+2) × heads
	ln2g, ln2b *nn.Param
	ff1, ff2   *nn.Linear
}

// Competitor is a GCN, GAT or Graphormer model computed through Gorgonia.
type Competitor struct {
	engine
	kind    string
	heads   int
	maxDist int
	degEmb  *nn.Param // graphormer: (MaxDegree+1) × d
	mlp     []*mlpLayer
	tf      []*tfLayer
	// need are the aggregated sets: the adjacency, or N_1..N_max_dist for
	// Graphormer.
	need hopNeed
	gd   *graphData
}

var _ models.Model = (*Competitor)(nil)

// NewCompetitor builds the competitor model of kind cfg.Model.Kind ("gcn", "gat" or
// "graphormer"); initialisation and dropout masks derive from seed.
func NewCompetitor(cfg models.Config, seed uint64, be kernels.Backend) (*Competitor, error) {
	m := cfg.Model
	switch m.Kind {
	case KindGCN, KindGAT, KindGraphormer:
	default:
		return nil, fmt.Errorf("model.kind %q: not a competitor kind (gcn, gat, graphormer)", m.Kind)
	}
	if err := checkConfig(cfg); err != nil {
		return nil, err
	}
	if be == nil {
		return nil, fmt.Errorf("gg.NewCompetitor: nil kernel backend")
	}
	d := m.Hidden
	// The cache of a competitor is bounded by MaxCachedGraphs only.
	md := &Competitor{engine: newEngine(cfg, seed, be, math.MaxInt), kind: m.Kind, heads: m.Heads, maxDist: m.MaxDist, gd: &graphData{}}
	md.arch = md
	md.need = hopNeed{adj: true, k: 1}
	if m.Kind == KindGraphormer {
		md.need = hopNeed{k: md.maxDist}
	}

	init := rand.New(rand.NewPCG(seed, 0x5eed1))
	md.enc = nn.NewEncoder("enc", cfg.NumLabels, cfg.AttrDim, d, init)
	if m.Kind == KindGraphormer {
		md.degEmb = nn.NewParam("enc.degree", MaxDegree+1, d)
		md.degEmb.Uniform(init, 0.1)
	}
	for t := 1; t <= m.Layers; t++ {
		name := fmt.Sprintf("layer%d", t)
		if m.Kind == KindGraphormer {
			md.tf = append(md.tf, newTFLayer(name, d, md.heads, md.maxDist, init))
			continue
		}
		l := &mlpLayer{}
		if m.Kind == KindGAT {
			dh := d / md.heads
			l.att = nn.NewLinear(name+".att", d, d, init)
			l.aSrc, l.aDst = nn.NewParam(name+".att.a_src", md.heads, dh), nn.NewParam(name+".att.a_dst", md.heads, dh)
			bound := glorot(dh, 1)
			l.aSrc.Uniform(init, bound)
			l.aDst.Uniform(init, bound)
		}
		l.mlp = newMLP(name, d, init)
		md.mlp = append(md.mlp, l)
	}
	for t := 0; t <= m.Layers; t++ {
		md.readout = append(md.readout, nn.NewLinear(fmt.Sprintf("readout%d", t), d, cfg.Out, init))
	}
	return md, nil
}

// Hops implements models.Model: Graphormer reads N_1..N_max_dist (so the
// dataset's kmax must be at least max_dist); GCN and GAT read Batch.Adj.
func (m *Competitor) Hops() int {
	if m.kind == KindGraphormer {
		return m.maxDist
	}
	return 0
}

// Params implements models.Model: encoder, layers in order, readouts.
func (m *Competitor) Params() []*nn.Param {
	ps := m.enc.Params()
	if m.degEmb != nil {
		ps = append(ps, m.degEmb)
	}
	for _, l := range m.mlp {
		if l.att != nil {
			ps = append(ps, l.att.Params()...)
			ps = append(ps, l.aSrc, l.aDst)
		}
		ps = append(ps, l.mlp.params()...)
	}
	for _, l := range m.tf {
		ps = append(ps, l.params()...)
	}
	for _, r := range m.readout {
		ps = append(ps, r.Params()...)
	}
	return ps
}

// Buffers implements models.Model: the batch-norm running statistics of
// GCN and GAT (Graphormer has none).
func (m *Competitor) Buffers() map[string][]float64 {
	b := map[string][]float64{}
	for t, l := range m.mlp {
		l.addBuffers(b, t+1)
	}
	return b
}

// gradParams implements arch: the parameters bound in p.
func (m *Competitor) gradParams(p *program) []*nn.Param { return p.boundParams() }

// checkBatch verifies b against the model's inputs; for Graphormer the hop
// sets are checked first so that the message names max_dist.
func (m *Competitor) checkBatch(b *data.Batch, o buildOpts) error {
	if b != nil && m.kind == KindGraphormer && len(b.Hop) < m.maxDist {
		return fmt.Errorf("batch carries %d hop sets, graphormer needs N_1..N_%d (model.max_dist = %d; the dataset's kmax must be at least max_dist)", len(b.Hop), m.maxDist, m.maxDist)
	}
	return checkBatch(m.cfg, m.need, b, o)
}

// prepare implements arch: the checked hop sets, and the graph data of
// the batch (degrees, and Graphormer's distance buckets).
func (m *Competitor) prepare(b *data.Batch) ([]data.CSR, error) {
	hops, err := m.need.sets(b)
	if err != nil {
		return nil, err
	}
	if err := m.gd.set(b, m.kind, m.maxDist); err != nil {
		return nil, err
	}
	return hops, nil
}

// buildGraph constructs the expression graph of the competitor model for the
// padded sizes of key: encoder, the kind's layers, the SPN's readout and
// the loss with its gradient.
func (m *Competitor) buildGraph(key progKey, bd *batchData) (*program, error) {
	N, d := key.N, m.cfg.Model.Hidden
	bdr, p, be := m.newProgram(key, bd)
	param := func(prm *nn.Param) *G.Node { return p.param(bdr, prm) }
	h := m.encode(bdr, p, be, bd)
	if m.degEmb != nil {
		h = bdr.op(be, newDegEmb("enc.degree", be, bd, m.gd, N, d), h, param(m.degEmb))
	}
	hs := []*G.Node{h}
	for t, l := range m.mlp {
		name := fmt.Sprintf("layer%d", t+1)
		var agg *G.Node
		if l.att != nil {
			w, b := param(l.att.W), param(l.att.B)
			aSrc, aDst := param(l.aSrc), param(l.aDst)
			z := bdr.op(be, newLinear(name+".att.lin", be, bd, false, N, d, d), h, w, b)
			agg = bdr.op(be, newGATAttn(name+".att", be, bd, m.gd, m.heads, N, d), z, aSrc, aDst)
		} else {
			agg = bdr.op(be, newGCNAgg(name+".gcn", be, bd, m.gd, N, d), h)
		}
		h = l.apply(bdr, be, bd, key, name, agg, l.bind(param))
		hs = append(hs, h)
	}
	for t, l := range m.tf {
		h = l.apply(bdr, param, fmt.Sprintf("layer%d", t+1), be, bd, m.gd, m.heads, m.maxDist, N, d, h)
		hs = append(hs, h)
	}
	return m.finish(bdr, p, be, bd, hs, m.kind)
}

// glorot returns the Glorot-uniform bound for a fan-in/fan-out pair.
func glorot(in, out int) float64 {
	return math.Sqrt(6 / float64(in+out))
}

// boundParams returns the parameters bound in p, in the order of its
// gradients.
func (p *program) boundParams() []*nn.Param {
	ps := make([]*nn.Param, len(p.params))
	for i, pb := range p.params {
		ps[i] = pb.p
	}
	return ps
}
