package ref

import (
	"fmt"
	"math/rand/v2"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/models"
	"github.com/spn-project/spn/models/param"
)

// SPNLayer is one shortest path network layer:
//
//	h_u ← MLP( (1+ε)·h_u + Σ_{i=1..k} α_i Σ_{v ∈ N_i(u)} h_v )
//
// with α = softmax of k learnable logits and
// MLP = Linear → BatchNorm → ReLU → Linear → BatchNorm → ReLU.
type SPNLayer struct {
	// Agg holds ε, the α logits and the hop sums over N_i.
	Agg *HopAggregation
	// Lin1, BN1, Lin2, BN2 are the MLP.
	Lin1 *Linear
	BN1  *BatchNormReLU
	Lin2 *Linear
	BN2  *BatchNormReLU
}

// Forward applies the layer to h (n×hidden) with hop sets N_1..N_k.
func (l *SPNLayer) Forward(h []float64, hops []data.CSR, n int, train bool) []float64 {
	agg := l.Agg.Forward(h, hops, n) // (1+ε)h_u + Σ_i α_i Σ_{v∈N_i(u)} h_v
	z := l.Lin1.Forward(agg, n)
	z = l.BN1.Forward(z, n, train)
	z = l.Lin2.Forward(z, n)
	return l.BN2.Forward(z, n, train)
}

// Backward returns dh for the layer's last Forward.
func (l *SPNLayer) Backward(dy []float64) []float64 {
	d := l.BN2.Backward(dy)
	d = l.Lin2.Backward(d)
	d = l.BN1.Backward(d)
	d = l.Lin1.Backward(d)
	return l.Agg.Backward(d)
}

// SPN is the shortest path network with the GIN readout of Errica et al.:
//
//	out = Σ_{t=0..T} Dropout(W_t·pool(h^(t)) + b_t)
//
// where h^(0) is the input encoding.
type SPN struct {
	cfg     models.Config
	useAdj  bool // GIN: aggregate over Batch.Adj instead of Batch.Hop[0]
	Enc     *Encoder
	Layers  []*SPNLayer
	Pools   []*Pool
	Readout []*Linear
	Drop    []*Dropout
	rng     *rand.Rand

	hs [][]float64
}

// MaxParams bounds the parameter count of a model (2^26 float32 = 256 MiB).
const MaxParams = 1 << 26

// NewSPN builds an SPN from cfg (Model.K hops, Model.Layers layers).
func NewSPN(cfg models.Config, seed uint64) (models.Model, error) {
	return newSPN(cfg, seed, false)
}

// NewGIN builds GIN: the SPN with k = 1 over the adjacency (Model.K must be
// 0 or 1).
func NewGIN(cfg models.Config, seed uint64) (models.Model, error) {
	if cfg.Model.K > 1 {
		return nil, fmt.Errorf("model.k = %d: gin aggregates over direct neighbours only (k = 1)", cfg.Model.K)
	}
	cfg.Model.K = 1
	return newSPN(cfg, seed, true)
}

func newSPN(cfg models.Config, seed uint64, useAdj bool) (*SPN, error) {
	m := cfg.Model
	switch {
	case m.K < 1:
		return nil, fmt.Errorf("model.k = %d: need at least 1 hop", m.K)
	case m.Unreachable:
		return nil, fmt.Errorf("model.unreachable: the hand-written reference SPN does not aggregate over N_∞")
	case m.Layers < 1:
		return nil, fmt.Errorf("model.layers = %d: need at least 1 layer", m.Layers)
	case m.Hidden < 1:
		return nil, fmt.Errorf("model.hidden = %d: need a positive width", m.Hidden)
	case m.Dropout < 0 || m.Dropout >= 1:
		return nil, fmt.Errorf("model.dropout = %v: need 0 ≤ p < 1", m.Dropout)
	case cfg.Out < 1:
		return nil, fmt.Errorf("model output width %d: need at least 1", cfg.Out)
	case cfg.Task != models.TaskClassification && cfg.Task != models.TaskRegression:
		return nil, fmt.Errorf("unknown task %q", cfg.Task)
	}
	// Bound the size before allocating: a configuration read from a file
	// must not exhaust memory.
	d64 := float64(m.Hidden)
	size := float64(cfg.NumLabels+cfg.AttrDim+1)*d64 + float64(m.Layers)*(2*d64*d64+6*d64+float64(m.K)) + float64(m.Layers+1)*(d64+1)*float64(cfg.Out)
	if size > MaxParams || cfg.NumLabels < 0 || cfg.AttrDim < 0 {
		return nil, fmt.Errorf("model of %.3g parameters exceeds the limit of %d (layers %d, hidden %d, k %d, inputs %d+%d, out %d)",
			size, MaxParams, m.Layers, m.Hidden, m.K, cfg.NumLabels, cfg.AttrDim, cfg.Out)
	}
	init := param.NewInit(seed)
	s := &SPN{cfg: cfg, useAdj: useAdj, rng: param.MaskStream(seed)}
	d := m.Hidden
	s.Enc = NewEncoder("enc", cfg.NumLabels, cfg.AttrDim, d, init)
	for t := 1; t <= m.Layers; t++ {
		name := fmt.Sprintf("layer%d", t)
		s.Layers = append(s.Layers, &SPNLayer{
			Agg:  NewHopAggregation(name+".agg", m.K, d, m.Eps, m.LearnEps),
			Lin1: NewLinear(name+".lin1", d, d, init),
			BN1:  NewBatchNormReLU(name+".bn1", d),
			Lin2: NewLinear(name+".lin2", d, d, init),
			BN2:  NewBatchNormReLU(name+".bn2", d),
		})
	}
	for t := 0; t <= m.Layers; t++ {
		p, err := NewPool(m.Pool, d)
		if err != nil {
			return nil, fmt.Errorf("model.pool: %w", err)
		}
		s.Pools = append(s.Pools, p)
		s.Readout = append(s.Readout, NewLinear(fmt.Sprintf("readout%d", t), d, cfg.Out, init))
		s.Drop = append(s.Drop, &Dropout{P: m.Dropout})
	}
	return s, nil
}

// Hops implements models.Model: k for SPN, 0 for GIN (which reads Batch.Adj).
func (s *SPN) Hops() int {
	if s.useAdj {
		return 0
	}
	return s.cfg.Model.K
}

// Config implements models.Model.
func (s *SPN) Config() models.Config { return s.cfg }

// Params implements models.Model.
func (s *SPN) Params() []*param.Param {
	ps := s.Enc.Params()
	for _, l := range s.Layers {
		ps = append(ps, l.Agg.Params()...)
		ps = append(ps, l.Lin1.Params()...)
		ps = append(ps, l.BN1.Params()...)
		ps = append(ps, l.Lin2.Params()...)
		ps = append(ps, l.BN2.Params()...)
	}
	for _, r := range s.Readout {
		ps = append(ps, r.Params()...)
	}
	return ps
}

// Buffers implements models.Model: the batch-norm running statistics.
func (s *SPN) Buffers() map[string][]float64 {
	b := map[string][]float64{}
	for t, l := range s.Layers {
		for _, bn := range []struct {
			name string
			n    *BatchNormReLU
		}{{"bn1", l.BN1}, {"bn2", l.BN2}} {
			b[fmt.Sprintf("layer%d.%s.running_mean", t+1, bn.name)] = bn.n.RunMean
			b[fmt.Sprintf("layer%d.%s.running_var", t+1, bn.name)] = bn.n.RunVar
		}
	}
	return b
}

// HopWeights implements models.HopWeights.
func (s *SPN) HopWeights() (alpha [][]float64, eps []float64) {
	for _, l := range s.Layers {
		alpha = append(alpha, l.Agg.Alpha())
		eps = append(eps, float64(l.Agg.Eps.W[0]))
	}
	return alpha, eps
}

// Forward implements models.Model.
func (s *SPN) Forward(b *data.Batch, train bool) ([]float32, error) {
	k := s.cfg.Model.K
	var hops []data.CSR
	if s.useAdj {
		hops = []data.CSR{b.Adj}
	} else {
		if len(b.Hop) < k {
			return nil, fmt.Errorf("batch carries %d hop sets, model needs k = %d", len(b.Hop), k)
		}
		hops = b.Hop[:k]
	}
	if err := s.cfg.CheckNodeInputs(b); err != nil {
		return nil, err
	}
	n, g, o := b.N, b.NumGraphs, s.cfg.Out
	h := s.Enc.Forward(b.Labels, b.Attrs, n)
	s.hs = append(s.hs[:0], h)
	for _, l := range s.Layers {
		h = l.Forward(h, hops, n, train)
		s.hs = append(s.hs, h)
	}
	out := make([]float64, g*o)
	for t, h := range s.hs {
		p := s.Pools[t].Forward(h, b.GraphPtr, n)
		r := s.Readout[t].Forward(p, g)
		r = s.Drop[t].Forward(r, train, s.rng)
		for j, v := range r {
			out[j] += v
		}
	}
	return to32(out), nil
}

// Backward implements models.Model.
func (s *SPN) Backward(dOut []float32) {
	T := len(s.Layers)
	d := to64(dOut)
	dh := make([][]float64, T+1)
	for t := range s.hs {
		dr := s.Drop[t].Backward(d)
		dp := s.Readout[t].Backward(dr)
		dh[t] = s.Pools[t].Backward(dp)
	}
	for t := T; t >= 1; t-- {
		dx := s.Layers[t-1].Backward(dh[t])
		for j, v := range dx {
			dh[t-1][j] += v
		}
	}
	s.Enc.Backward(dh[0])
}
