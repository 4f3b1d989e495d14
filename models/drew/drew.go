// Package drew is DRew (Gutteridge, Dong, Bronstein and Di Giovanni,
// "DRew: Dynamically Rewired Message Passing with Delay", ICML 2023),
// model kind "drew": SPN's successor over the same hop sets N_k(u),
// whose reach grows with depth and whose distant messages are delayed.
// Layer t = 0..L−1 (rt.Net's layerT+1) computes
//
//	x_{t+1} = x_t + Σ_{k=1..m_t} α_{t,k}·MLP_{k,t}(x_s[u] + Σ_{v∈N_k(u)} x_s[v]),  s = t − max(k − ν, 0)
//
// with m_t = min(t+1, K) hops (K = model.k, else the layer count), the
// hop-k messages from the state s of max(k − ν, 0) layers earlier (ν =
// model.delay; ν = ∞ reads x_t for every hop), α_t equal (1/m_t) or the
// softmax of learned logits, and MLP SPN's (Linear → BN → ReLU → Linear →
// BN → ReLU). With conv "gine" the first hop's sum is E-SPN's
// Σ_{v∈N(u)} ReLU(x_s[v] + e_uv), e_uv from a BondEncoder per layer.
// With conv "gcn" a hop's term is the official DRew-GCN's
// ReLU(BN(Â_k·x_s·Θ_{k,t} + b_{k,t})), Â_k = D̂^-1/2 (A_k+I) D̂^-1/2 over
// N_k (PyG's GCNConv per hop set, then GraphGym's batch norm). The
// input encoder (with OGB's AtomEncoder for categorical node features),
// pooling and layer-sum readout are the shared runtime's (models/rt).
package drew

import (
	"fmt"
	"math/rand/v2"
	"slices"

	G "gorgonia.org/gorgonia"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/models"
	"github.com/spn-project/spn/models/cuda"
	"github.com/spn-project/spn/models/kernels"
	"github.com/spn-project/spn/models/nbop"
	"github.com/spn-project/spn/models/param"
	"github.com/spn-project/spn/models/rt"
	"github.com/spn-project/spn/schema/modelspec"
)

// Name is the model kind.
const Name = "drew"

// Kind is model kind "drew".
type Kind struct{}

// Name implements models.Kind.
func (Kind) Name() string { return Name }

// MaxHop is the largest hop the layers of m read: the layer count,
// capped by model.k when it is set (the official code's k_max).
func MaxHop(m modelspec.Model) int {
	if m.K >= 1 {
		return min(m.K, m.Layers)
	}
	return m.Layers
}

// Hops is the number of hop sets layer t (from 0) of m reads,
// min(t+1, MaxHop(m)): get_k_neighbourhoods(t) of the official code.
func Hops(m modelspec.Model, t int) int { return min(t+1, MaxHop(m)) }

// Source is the layer whose state the hop-k messages of layer t (from
// 0) read: t − max(k − ν, 0), t itself without delay (ν = ∞).
func Source(delay modelspec.Delay, t, k int) int {
	if delay == modelspec.DelayNone {
		return t
	}
	return t - max(k-int(delay), 0)
}

// Check implements models.Kind: the common fields, conv, delay and
// weights, the largest hop within dataset.kmax, and edge features for
// conv "gine".
func (Kind) Check(m modelspec.Model, d modelspec.DatasetInfo) []modelspec.FieldError {
	errs := rt.CheckCommon(m)
	if m.Conv != modelspec.ConvGIN && m.Conv != modelspec.ConvGINE && m.Conv != modelspec.ConvGCN {
		errs = append(errs, rt.Errf("conv", "must be %q, %q or %q, got %q", modelspec.ConvGIN, modelspec.ConvGINE, modelspec.ConvGCN, m.Conv))
	}
	if m.Weights != modelspec.WeightsEqual && m.Weights != modelspec.WeightsLearned {
		errs = append(errs, rt.Errf("weights", "must be %q or %q, got %q", modelspec.WeightsEqual, modelspec.WeightsLearned, m.Weights))
	}
	if m.Delay < 0 {
		errs = append(errs, rt.Errf("delay", "delay = %d: need ν ≥ 1, or \"none\"", int(m.Delay)))
	}
	if m.K < 0 {
		errs = append(errs, rt.Errf("k", "k = %d: need at least 1 hop (or no k: as many hops as layers)", m.K))
	}
	if top := MaxHop(m); d.KMax > 0 && top > d.KMax {
		if m.K >= 1 {
			errs = append(errs, rt.Errf("k", "k = %d with layers = %d reads hops up to %d, beyond dataset.kmax = %d (hops are precomputed up to kmax)", m.K, m.Layers, top, d.KMax))
		} else {
			errs = append(errs, rt.Errf("layers", "layers = %d reads hops up to %d (layer t sees hops 1..t), beyond dataset.kmax = %d: raise dataset.kmax or cap the hops with model.k ≤ %d", m.Layers, top, d.KMax, d.KMax))
		}
	}
	if m.Conv == modelspec.ConvGINE && d.Known && !d.EdgeFeatures {
		errs = append(errs, rt.Errf("conv", "conv \"gine\" reads categorical edge features, but the dataset%s has none (e.g. dataset kind ogb has 3 bond features)", rt.OfKind(d)))
	}
	return errs
}

// CheckDevice implements models.DeviceKind: rt.CheckDevice; the hop
// sums, the edge messages, the MLPs and the weighted sum have device
// math.
func (Kind) CheckDevice(cfg models.Config) error { return rt.CheckDevice(cfg) }

// ParamCount implements models.Kind: the encoder and the categorical
// node features' tables, per layer t its α logits (learned weights), its
// BondEncoder tables (gine) and m_t MLPs (gcn: m_t Dense maps), and the
// layer-sum readout.
func (Kind) ParamCount(cfg models.Config) int64 {
	m, d := cfg.Model, cfg.Model.Hidden
	size := rt.NetSize(cfg, rt.AtomSize(cfg, d), 0, rt.LayerSumReadout)
	for t := range m.Layers {
		h := Hops(m, t)
		if m.Conv == modelspec.ConvGCN {
			size = param.Sum(size, rt.DenseSize(d, h))
		} else {
			size = param.Sum(size, rt.MLPSize(d, h))
		}
		if m.Weights == modelspec.WeightsLearned {
			size = param.Sum(size, param.Prod(h))
		}
		if m.Conv == modelspec.ConvGINE {
			size = param.Sum(size, rt.EmbedTablesSize(cfg.EdgeFeatVocab, d))
		}
	}
	return size
}

// New implements models.Kind.
func (Kind) New(cfg models.Config, seed uint64, be kernels.Backend) (models.Model, error) {
	return New(cfg, seed, be)
}

// Model is a DRew computed through Gorgonia.
type Model struct {
	rt.Net
	atom *rt.Atom
	// td is what the input term and the edge messages read of the batch
	// (node and edge features, graphs); hop[k−1] holds N_k alone (as
	// the relation of a one-relation nbop.RelAgg), for the hop-k sums;
	// with conv gcn, gcn[k−1] holds Â_k instead. Objects of their own,
	// so that the compiled graphs do not point back into the model.
	td  *nbop.Data
	hop []*nbop.Data
	gcn []*nbop.GCNData
	// states are x_0..x_t while the layers are added to a graph: rt.Net
	// gives a layer its input only, and the delayed messages read
	// earlier ones.
	states *[]*G.Node
}

var (
	_ models.Model      = (*Model)(nil)
	_ models.DeviceKind = Kind{}
	_ rt.DevicePreparer = (*Model)(nil)
)

// layer is DRew layer t (from 0): its α logits (nil for equal weights),
// its BondEncoder tables (gine, nil otherwise) and a map per hop: an MLP
// (gin, gine) or a Dense (gcn).
type layer struct {
	t      int
	logits *param.Param
	bond   *param.Param
	mlps   []rt.MLP
	dense  []rt.Dense
	md     *Model
}

// hops is the number of hop sets the layer reads, m_t.
func (l *layer) hops() int { return len(l.mlps) + len(l.dense) }

// New builds the DRew of cfg from seed: per layer, in this order, the
// BondEncoder tables and the maps (MLPs, or Dense for gcn) of hops
// 1..m_t from the initialisation generator (the α logits start at zero).
func New(cfg models.Config, seed uint64, be kernels.Backend) (*Model, error) {
	m := cfg.Model
	md := &Model{td: &nbop.Data{}, states: new([]*G.Node)}
	for range MaxHop(m) {
		if m.Conv == modelspec.ConvGCN {
			md.gcn = append(md.gcn, &nbop.GCNData{})
		} else {
			md.hop = append(md.hop, &nbop.Data{})
		}
	}
	err := md.Init(md, Kind{}, cfg, seed, be, rt.Parts{
		Pkg: Name,
		Input: func(init *rand.Rand) rt.Input {
			md.atom = rt.NewAtom(cfg, m.Hidden, init)
			return md.atom.Input(md.td)
		},
		Layer: func(t int, name string, init *rand.Rand) rt.Layer {
			l := &layer{t: t - 1, md: md}
			h := Hops(m, l.t)
			if m.Weights == modelspec.WeightsLearned {
				l.logits = param.NewParam(name+".alpha_logits", h)
			}
			if m.Conv == modelspec.ConvGINE {
				l.bond = rt.EmbedTables(name+".bond", cfg.EdgeFeatVocab, m.Hidden, init)
			}
			for k := 1; k <= h; k++ {
				if m.Conv == modelspec.ConvGCN {
					l.dense = append(l.dense, rt.NewDense(hopName(name, k), m.Hidden, init))
				} else {
					l.mlps = append(l.mlps, rt.NewMLP(hopName(name, k), m.Hidden, init))
				}
			}
			return l
		},
	})
	if err != nil {
		return nil, err
	}
	return md, nil
}

// hopName names the parts of hop k of layer name: "layerT.hopK".
func hopName(name string, k int) string { return fmt.Sprintf("%s.hop%d", name, k) }

// Params implements rt.Layer: the α logits, the BondEncoder tables, the
// maps of hops 1..m_t.
func (l *layer) Params() []*param.Param {
	var ps []*param.Param
	if l.logits != nil {
		ps = append(ps, l.logits)
	}
	if l.bond != nil {
		ps = append(ps, l.bond)
	}
	for i := range l.mlps {
		ps = append(ps, l.mlps[i].Params()...)
	}
	for i := range l.dense {
		ps = append(ps, l.dense[i].Params()...)
	}
	return ps
}

// AddBuffers implements rt.Layer: the maps' batch-norm statistics, as
// name.hopK.bn1.running_mean, … (gcn: name.hopK.bn.running_mean, …).
func (l *layer) AddBuffers(b map[string][]float64, name string) {
	for i := range l.mlps {
		l.mlps[i].AddBuffers(b, hopName(name, i+1))
	}
	for i := range l.dense {
		l.dense[i].AddBuffers(b, hopName(name, i+1))
	}
}

// Step implements rt.Layer: layer t, its equation term by term,
//
//	x_{t+1} = x_t + Σ_{k=1..m_t} α_{t,k}·MLP_{k,t}(x_s + A_k·x_s),  s = Source(ν, t, k)
//
// with A_k·x_s the sum over N_k(u) (RelAgg over N_k; gine's first hop
// EdgeMsg's Σ_{v∈N(u)} ReLU(x_s[v] + e_uv)), or with conv gcn the terms
// Dense_{k,t}(Â_k·x_s) (nbop.GCN over N_k). The official code's
// x_t + ReLU(Σ …) is this sum: every term ends in a ReLU and α ≥ 0.
func (l *layer) Step(s *rt.Step, h *G.Node) *G.Node {
	md := l.md
	if l.t == 0 {
		*md.states = (*md.states)[:0]
	}
	*md.states = append(*md.states, h) // x_t
	m := md.Cfg.Model
	var alpha *G.Node
	if l.logits != nil {
		alpha = s.Op(rt.NewSoftmax(s.Name+".alpha", l.hops()), s.Param(l.logits))
	}
	var bond *G.Node
	if l.bond != nil {
		bond = s.Param(l.bond)
	}
	terms := make([]*G.Node, 0, l.hops()+1)
	if alpha != nil {
		terms = append(terms, alpha)
	}
	for i := range l.hops() {
		k := i + 1
		name := hopName(s.Name, k)
		x := (*md.states)[Source(m.Delay, l.t, k)]
		if l.dense != nil {
			agg := s.Op(nbop.GCN{ID: name + ".gcn", Be: s.Be.Backend, D: md.gcn[i], N: s.N, W: s.D}, x)
			terms = append(terms, l.dense[i].Apply(s, name, agg))
			continue
		}
		var agg *G.Node
		if k == 1 && bond != nil {
			agg = s.Op(nbop.EdgeMsg{ID: name + ".edge", Be: s.Be, D: md.td, Rows: l.bond.Shape[0], N: s.N, W: s.D,
				Kept: new(nbop.EdgeEmbeddings)}, x, bond)
		} else {
			agg = s.Op(nbop.RelAgg{ID: name + ".sum", Be: s.Be, D: md.hop[i], R: 1, N: s.N, W: s.D}, x)
		}
		in := s.Add(x, agg, name+".input")
		terms = append(terms, l.mlps[i].Apply(s, name, in, l.mlps[i].Bind(s.Param)))
	}
	out := s.Op(mix{id: s.Name + ".mix", be: s.Be, bd: s.BD, m: l.hops(), equal: alpha == nil, N: s.N, d: s.D}, terms...)
	return s.Add(h, out, s.Name+".residual")
}

// Hops implements models.Model: the kind reads N_1..N_K.
func (md *Model) Hops() int { return MaxHop(md.Cfg.Model) }

// CheckBatch implements rt.Arch: the hop sets N_1..N_K, the edge
// features (gine) and the categorical node features.
func (md *Model) CheckBatch(b *data.Batch, o rt.Opts) error {
	if err := rt.CheckBatch(md.Cfg, rt.Need{K: md.Hops()}, b, o); err != nil {
		return err
	}
	if c := md.Cfg; c.Model.Conv == modelspec.ConvGINE {
		if !slices.Equal(b.EdgeFeatVocab, c.EdgeFeatVocab) || len(b.EdgeFeat) != len(b.Adj.Idx)*len(c.EdgeFeatVocab) {
			return fmt.Errorf("batch has %d edge feature values with vocabularies %v, drew (gine) was built for %v over %d edge entries", len(b.EdgeFeat), b.EdgeFeatVocab, c.EdgeFeatVocab, len(b.Adj.Idx))
		}
		if err := rt.CheckCategories(b.EdgeFeat, c.EdgeFeatVocab); err != nil {
			return fmt.Errorf("edge features: %w", err)
		}
	}
	return md.atom.CheckBatch(b)
}

// Prepare implements rt.Arch: the node and edge features, and each hop
// set N_k with its transpose as the one relation of hop k's data (conv
// gcn: Â_k of each hop set, which must be symmetric).
func (md *Model) Prepare(b *data.Batch) ([]data.CSR, error) {
	if err := md.td.Set(b, nbop.Need{K: 1, Edges: md.Cfg.Model.Conv == modelspec.ConvGINE}); err != nil {
		return nil, err
	}
	for i, gd := range md.gcn {
		if err := gd.Set(b.Hop[i], b.N); err != nil {
			return nil, fmt.Errorf("drew (gcn): hop set N_%d: %w", i+1, err)
		}
	}
	for i, d := range md.hop {
		h := b.Hop[i]
		ht := h
		if i >= len(b.HopSymmetric) || !b.HopSymmetric[i] {
			ht = kernels.Transpose(h)
		}
		*d = nbop.Data{N: b.N, G: b.NumGraphs, Ptr: b.GraphPtr, Rel: []data.CSR{h}, RelT: []data.CSR{ht}}
	}
	return rt.Need{K: md.Hops()}.Sets(b), nil
}

// PackDevice implements rt.DevicePreparer: the node and edge features
// (nbop.Data.PackTyped) and every hop set with its transpose (conv gcn:
// every Â_k), in the run's pack.
func (md *Model) PackDevice(pk *cuda.Pack) (func(), error) {
	release, err := md.td.PackTyped(pk)
	if err != nil {
		return nil, err
	}
	var drops []func()
	for i, gd := range md.gcn {
		drop, err := gd.Pack(pk)
		if err != nil {
			release()
			for _, d := range drops {
				d()
			}
			return nil, fmt.Errorf("hop set N_%d: %w", i+1, err)
		}
		drops = append(drops, drop)
	}
	for i, d := range md.hop {
		if d.DevRel, err = nbop.PackSets(pk, d.Rel, d.RelT, d.N); err != nil {
			release()
			return nil, fmt.Errorf("hop set N_%d: %w", i+1, err)
		}
	}
	return func() {
		release()
		for _, d := range md.hop {
			d.DevRel = nil
		}
		for _, d := range drops {
			d()
		}
	}, nil
}
