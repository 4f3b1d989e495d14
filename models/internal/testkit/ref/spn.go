package ref

import (
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/models"
	"github.com/spn-project/spn/models/kernels"
	"github.com/spn-project/spn/models/param"
	"github.com/spn-project/spn/schema/modelspec"
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
func (l *SPNLayer) Forward(be kernels.Backend, h []float32, hops, hopsT []data.CSR, n int, train bool) []float32 {
	return l.forward(be, h, hops, hopsT, nil, nil, n, train)
}

func (l *SPNLayer) forward(be kernels.Backend, h []float32, hops, hopsT []data.CSR, rep, repT [][]int32, n int, train bool) []float32 {
	agg := l.Agg.ForwardGrouped(be, h, hops, hopsT, rep, repT, n) // (1+ε)h_u + Σ_i α_i Σ_{v∈N_i(u)} h_v
	z := l.Lin1.Forward(be, agg, n)
	z = l.BN1.Forward(be, z, n, train)
	z = l.Lin2.Forward(be, z, n)
	return l.BN2.Forward(be, z, n, train)
}

// Backward returns dh for the layer's last Forward.
func (l *SPNLayer) Backward(be kernels.Backend, dy []float32) []float32 {
	d := l.BN2.Backward(be, dy)
	d = l.Lin2.Backward(be, d)
	d = l.BN1.Backward(be, d)
	d = l.Lin1.Backward(be, d)
	return l.Agg.Backward(be, d)
}

// SPN is the shortest path network with the GIN readout of Errica et al.:
//
//	out = Σ_{t=0..T} Dropout(W_t·pool(h^(t)) + b_t)
//
// where h^(0) is the input encoding.
type SPN struct {
	cfg     models.Config
	be      kernels.Backend
	useAdj  bool // GIN: aggregate over Batch.Adj instead of Batch.Hop[0]
	Enc     *Encoder
	Layers  []*SPNLayer
	Pools   []*Pool
	Readout []*Linear
	Drop    []*Dropout
	rng     *rand.Rand

	hs  [][]float32
	dh  [][]float32 // gradient buffers of Backward, reused
	out []float32
	g   int
}

// MaxParams bounds the parameter count of a model (2^26 float32 = 256 MiB).
const MaxParams = 1 << 26

// NewSPN builds an SPN from cfg (Model.K hops, Model.Layers layers).
func NewSPN(cfg models.Config, seed uint64, be kernels.Backend) (models.Model, error) {
	return newSPN(cfg, seed, be, false)
}

// NewGIN builds GIN: the SPN with k = 1 over the adjacency (Model.K must be
// 0 or 1).
func NewGIN(cfg models.Config, seed uint64, be kernels.Backend) (models.Model, error) {
	if cfg.Model.K > 1 {
		return nil, fmt.Errorf("model.k = %d: gin aggregates over direct neighbours only (k = 1)", cfg.Model.K)
	}
	cfg.Model.K = 1
	return newSPN(cfg, seed, be, true)
}

func newSPN(cfg models.Config, seed uint64, be kernels.Backend, useAdj bool) (*SPN, error) {
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
	s := &SPN{cfg: cfg, be: be, useAdj: useAdj, rng: param.MaskStream(seed)}
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
		a := l.Agg.Alpha()
		row := make([]float64, len(a))
		for i, v := range a {
			row[i] = float64(v)
		}
		alpha = append(alpha, row)
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
	// Transposes for the backward pass (equal to the hop sets themselves
	// for undirected graphs, but not assumed) and groups of equal rows,
	// computed once per batch for all layers.
	hopsT := make([]data.CSR, len(hops))
	rep := make([][]int32, len(hops))
	repT := make([][]int32, len(hops))
	for i, h := range hops {
		hopsT[i] = kernels.Transpose(h)
		rep[i] = kernels.GroupRows(h)
		if slices.Equal(hopsT[i].Idx, h.Idx) && slices.Equal(hopsT[i].Ptr, h.Ptr) {
			repT[i] = rep[i]
		} else {
			repT[i] = kernels.GroupRows(hopsT[i])
		}
	}
	n, g, o := b.N, b.NumGraphs, s.cfg.Out
	s.g = g
	s.hs = s.hs[:0]
	h := s.Enc.Forward(s.be, b.Labels, b.Attrs, n)
	s.hs = append(s.hs, h)
	for _, l := range s.Layers {
		h = l.forward(s.be, h, hops, hopsT, rep, repT, n, train)
		s.hs = append(s.hs, h)
	}
	s.out = Grow(s.out, g*o)
	clear(s.out)
	for t, h := range s.hs {
		p := s.Pools[t].Forward(s.be, h, b.GraphPtr, n)
		r := s.Readout[t].Forward(s.be, p, g)
		r = s.Drop[t].Forward(r, train, s.rng)
		for j, v := range r {
			s.out[j] += v
		}
	}
	return s.out, nil
}

// Backward implements models.Model.
func (s *SPN) Backward(dOut []float32) {
	T := len(s.Layers)
	if len(s.dh) != T+1 {
		s.dh = make([][]float32, T+1)
	}
	dh := s.dh
	for t := range s.hs {
		dr := s.Drop[t].Backward(dOut)
		dp := s.Readout[t].Backward(s.be, dr)
		pb := s.Pools[t].Backward(s.be, dp)
		dh[t] = Grow(dh[t], len(pb))
		copy(dh[t], pb)
	}
	for t := T; t >= 1; t-- {
		dx := s.Layers[t-1].Backward(s.be, dh[t])
		for j, v := range dx {
			dh[t-1][j] += v
		}
	}
	s.Enc.Backward(s.be, dh[0])
}

// HandWritten returns the registry of the hand-written reference models
// (spn, gin) the model kinds are tested against.
func HandWritten() models.Registry {
	return models.NewRegistry(refKind{"spn", NewSPN}, refKind{"gin", NewGIN})
}

// refKind is a hand-written reference model kind.
type refKind struct {
	name string
	new  func(cfg models.Config, seed uint64, be kernels.Backend) (models.Model, error)
}

func (k refKind) Name() string { return k.name }

// Check leaves the checks to the constructor.
func (refKind) Check(modelspec.Model, modelspec.DatasetInfo) []modelspec.FieldError { return nil }

// ParamCount implements models.Kind: the encoder, per layer the hop
// weights and the MLP, and the readout (the SPN's shapes, written out
// here so that the reference does not lean on models/rt).
func (refKind) ParamCount(cfg models.Config) int64 {
	d := cfg.Model.Hidden
	mlp := param.Sum(param.Times(2, param.LinearSize(d, d)), param.Times(2, param.BatchNormReLUSize(d)))
	layer := param.Sum(param.HopAggregationSize(cfg.Model.K), mlp)
	return param.Sum(param.EncoderSize(cfg.NumLabels, cfg.AttrDim, d), param.Times(cfg.Model.Layers, layer),
		param.Times(cfg.Model.Layers+1, param.LinearSize(d, cfg.Out)))
}

func (k refKind) New(cfg models.Config, seed uint64, be kernels.Backend) (models.Model, error) {
	return k.new(cfg, seed, be)
}
