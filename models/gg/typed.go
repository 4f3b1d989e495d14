package gg

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	G "gorgonia.org/gorgonia"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/models"
	"github.com/spn-project/spn/models/kernels"
	"github.com/spn-project/spn/models/nbop"
	"github.com/spn-project/spn/models/nn"
	"github.com/spn-project/spn/models/op"
	"github.com/spn-project/spn/schema"
)

// Model kinds over typed neighbourhoods.
const (
	// KindRSPN is R-SPN (paper §5.3): per-relation MLPs on the first hop.
	KindRSPN = "rspn"
	// KindESPN is E-SPN (paper appendix): edge features on the first hop.
	KindESPN = "espn"
)

// Typed is an SP-MPNN whose first hop reads typed neighbourhoods: R-SPN
// (relations) or E-SPN (edge features). Its input encoding, readout, loss
// and runtime are the engine's (as SPN's).
type Typed struct {
	engine
	kind string
	need hopNeed // the hop sets N_1..N_k (SPN's batch checks)
	// atom is OGB's AtomEncoder (one table per categorical node feature
	// column, stacked), nil without categorical node features.
	atom    *nn.Param
	atomOff []int32
	layers  []*typedLayer
	td      nbop.Data
}

// typedLayer holds one layer's parameters.
type typedLayer struct {
	agg *nn.HopAggregation // the k α logits and ε
	// read is the global readout map W (d×d), nil without global readout.
	read *nn.Param
	// R-SPN: MLP_s (self), MLP_h (hops ≥ 2) and MLP_1..MLP_R (relations).
	self, higher *mlp
	rel          []*mlp
	names        []string // buffer names of self, higher, rel...
	// E-SPN: the layer's BondEncoder tables and SPN's MLP.
	bond *nn.Param
	out  *mlp
}

// typedKind is R-SPN or E-SPN.
type typedKind struct{ name string }

func (k typedKind) Name() string { return k.name }

// Check implements models.Kind: SPN's fields, and the dataset must carry
// what the first hop reads (relations for rspn, categorical edge features
// for espn).
func (k typedKind) Check(m schema.Model, d schema.DatasetInfo) []schema.FieldError {
	errs := checkHops(checkCommon(m), m, d)
	switch {
	case !d.Known:
	case k.name == KindRSPN && d.Relations < 1:
		errs = append(errs, errf("kind", "rspn aggregates per relation (edge type), but the dataset%s has untyped edges (e.g. dataset kind qm9 has 4 bond types)", ofKind(d)))
	case k.name == KindESPN && !d.EdgeFeatures:
		errs = append(errs, errf("kind", "espn reads categorical edge features, but the dataset%s has none (e.g. dataset kind ogb has 3 bond features)", ofKind(d)))
	}
	return errs
}

// ofKind names d's dataset kind in a message (` (kind "tu")`), or nothing.
func ofKind(d schema.DatasetInfo) string {
	if d.Kind == "" {
		return ""
	}
	return fmt.Sprintf(" (kind %q)", d.Kind)
}

func (typedKind) New(cfg models.Config, seed uint64, be kernels.Backend) (models.Model, error) {
	return NewTyped(cfg, seed, be)
}

// NewTyped builds the model of kind cfg.Model.Kind ("rspn" or "espn") from
// seed.
func NewTyped(cfg models.Config, seed uint64, be kernels.Backend) (*Typed, error) {
	m := cfg.Model
	if m.Kind != KindRSPN && m.Kind != KindESPN {
		return nil, fmt.Errorf("model.kind %q: NewTyped builds rspn and espn only", m.Kind)
	}
	if err := checkConfig(cfg); err != nil {
		return nil, err
	}
	if be == nil {
		return nil, fmt.Errorf("gg.NewTyped: nil kernel backend")
	}
	init := rand.New(rand.NewPCG(seed, 0x5eed1))
	md := &Typed{engine: newEngine(cfg, seed, be, MaxCachedFloats), kind: m.Kind}
	md.arch = md
	md.need = hopNeed{k: cfg.Model.K}
	d := m.Hidden
	md.enc = nn.NewEncoder("enc", cfg.NumLabels, cfg.AttrDim, d, init)
	if len(cfg.NodeCatVocab) > 0 {
		md.atom = embedTables("enc.atom", cfg.NodeCatVocab, d, init)
		md.atomOff, _ = kernels.EmbedOffsets(cfg.NodeCatVocab)
	}
	readInit := globalReadInit(seed)
	for t := 1; t <= m.Layers; t++ {
		name := fmt.Sprintf("layer%d", t)
		l := &typedLayer{agg: nn.NewHopAggregation(name+".agg", m.K, d, m.Eps, m.LearnEps)}
		l.read = newGlobalRead(name, m, readInit)
		switch m.Kind {
		case KindRSPN:
			l.self = mlpP(newMLP(name+".mlp_s", d, init))
			l.higher = mlpP(newMLP(name+".mlp_h", d, init))
			l.names = []string{name + ".mlp_s", name + ".mlp_h"}
			for j := 1; j <= cfg.NumEdgeTypes; j++ {
				l.rel = append(l.rel, mlpP(newMLP(fmt.Sprintf("%s.mlp_r%d", name, j), d, init)))
				l.names = append(l.names, fmt.Sprintf("%s.mlp_r%d", name, j))
			}
		case KindESPN:
			l.bond = embedTables(name+".bond", cfg.EdgeFeatVocab, d, init)
			l.out = mlpP(newMLP(name, d, init))
		}
		md.layers = append(md.layers, l)
	}
	for t := 0; t <= m.Layers; t++ {
		md.readout = append(md.readout, nn.NewLinear(fmt.Sprintf("readout%d", t), d, cfg.Out, init))
	}
	return md, nil
}

func mlpP(l mlp) *mlp { return &l }

// embedTables returns the stacked embedding tables of categorical columns
// of vocabularies vocab (Σ vocab × d), each initialised Xavier-uniform as
// OGB's encoders (torch.nn.init.xavier_uniform_ per table).
func embedTables(name string, vocab []int, d int, init *rand.Rand) *nn.Param {
	_, rows := kernels.EmbedOffsets(vocab)
	p := nn.NewParam(name, rows, d)
	r := 0
	for _, v := range vocab {
		bound := math.Sqrt(6 / float64(v+d))
		for i := r * d; i < (r+v)*d; i++ {
			p.W[i] = float32((2*init.Float64() - 1) * bound)
		}
		r += v
	}
	return p
}

// Hops implements models.Model: the model reads N_1..N_k.
func (m *Typed) Hops() int { return m.cfg.Model.K }

// Params implements models.Model, in the order buildGraph binds them.
func (m *Typed) Params() []*nn.Param {
	ps := m.enc.Params()
	if m.atom != nil {
		ps = append(ps, m.atom)
	}
	for _, l := range m.layers {
		ps = append(ps, l.agg.Params()...)
		if l.read != nil {
			ps = append(ps, l.read)
		}
		if l.self != nil {
			ps = append(ps, l.self.params()...)
			ps = append(ps, l.higher.params()...)
			for _, r := range l.rel {
				ps = append(ps, r.params()...)
			}
		}
		if l.bond != nil {
			ps = append(ps, l.bond)
			ps = append(ps, l.out.params()...)
		}
	}
	for _, r := range m.readout {
		ps = append(ps, r.Params()...)
	}
	return ps
}

// Buffers implements models.Model: the batch-norm running statistics of
// every MLP, by the MLP's name.
func (m *Typed) Buffers() map[string][]float64 {
	b := map[string][]float64{}
	add := func(name string, l *mlp) {
		b[name+".bn1.running_mean"], b[name+".bn1.running_var"] = l.st1.RunMean, l.st1.RunVar
		b[name+".bn2.running_mean"], b[name+".bn2.running_var"] = l.st2.RunMean, l.st2.RunVar
	}
	for t, l := range m.layers {
		if l.out != nil {
			add(fmt.Sprintf("layer%d", t+1), l.out)
			continue
		}
		for i, x := range append([]*mlp{l.self, l.higher}, l.rel...) {
			add(l.names[i], x)
		}
	}
	return b
}

// HopWeights implements models.HopWeights: α and ε per layer.
func (m *Typed) HopWeights() (alpha [][]float64, eps []float64) {
	for _, l := range m.layers {
		var row []float64
		for _, v := range l.agg.Alpha() {
			row = append(row, float64(v))
		}
		alpha = append(alpha, row)
		eps = append(eps, float64(l.agg.Eps.W[0]))
	}
	return alpha, eps
}

// gradParams implements arch: the parameters bound in p.
func (m *Typed) gradParams(p *program) []*nn.Param { return p.boundParams() }

// checkBatch implements arch: SPN's checks, then the relations (R-SPN) or
// the edge features (E-SPN) and the categorical node features.
func (m *Typed) checkBatch(b *data.Batch, o buildOpts) error {
	if err := checkBatch(m.cfg, m.need, b, o); err != nil {
		return err
	}
	c := m.cfg
	if m.kind == KindRSPN {
		if len(b.Rel) != c.NumEdgeTypes {
			return fmt.Errorf("batch carries %d relations, rspn was built for %d", len(b.Rel), c.NumEdgeTypes)
		}
		for j, r := range b.Rel {
			if err := checkCSR(r, b.N); err != nil {
				return fmt.Errorf("relation r_%d: %w", j+1, err)
			}
		}
	}
	if m.kind == KindESPN {
		if !slices.Equal(b.EdgeFeatVocab, c.EdgeFeatVocab) || len(b.EdgeFeat) != len(b.Adj.Idx)*len(c.EdgeFeatVocab) {
			return fmt.Errorf("batch has %d edge feature values with vocabularies %v, espn was built for %v over %d edge entries", len(b.EdgeFeat), b.EdgeFeatVocab, c.EdgeFeatVocab, len(b.Adj.Idx))
		}
		if err := checkCategories(b.EdgeFeat, c.EdgeFeatVocab); err != nil {
			return fmt.Errorf("edge features: %w", err)
		}
	}
	if m.atom != nil {
		if !slices.Equal(b.NodeCatVocab, c.NodeCatVocab) || len(b.NodeCat) != b.N*len(c.NodeCatVocab) {
			return fmt.Errorf("batch has %d categorical node feature values with vocabularies %v, model built for %v over %d nodes", len(b.NodeCat), b.NodeCatVocab, c.NodeCatVocab, b.N)
		}
		if err := checkCategories(b.NodeCat, c.NodeCatVocab); err != nil {
			return fmt.Errorf("categorical node features: %w", err)
		}
	}
	return nil
}

// checkCategories verifies every value of x (rows × len(vocab)) against
// its column's vocabulary.
func checkCategories(x []int32, vocab []int) error {
	w := len(vocab)
	for i, v := range x {
		if v < 0 || int(v) >= vocab[i%w] {
			return fmt.Errorf("row %d column %d is %d outside [0,%d)", i/w, i%w, v, vocab[i%w])
		}
	}
	return nil
}

// prepare implements arch: the hop sets, and the typed data of the batch.
func (m *Typed) prepare(b *data.Batch) ([]data.CSR, error) {
	hops, err := m.need.sets(b)
	if err != nil {
		return nil, err
	}
	if err := m.td.Set(b, nbop.Need{K: m.cfg.Model.K, Relations: m.kind == KindRSPN, Edges: m.kind == KindESPN}); err != nil {
		return nil, err
	}
	return hops, nil
}

// buildGraph constructs the expression graph for the padded sizes of key:
//
//	h⁰ = Enc(labels, attrs) + AtomEncoder(categorical node features)
//
// R-SPN (paper §5.3; α = softmax of k logits, A_i = N_i, r_j(u,v) the
// edges of relation j):
//
//	hᵗ_u = (1+ε)·MLP_s(hᵗ⁻¹)_u + α_1·Σ_j Σ_{v: r_j(u,v)} MLP_j(hᵗ⁻¹)_v + Σ_{i=2..k} α_i·Σ_{v∈N_i(u)} MLP_h(hᵗ⁻¹)_v
//
// E-SPN (appendix; e_uv = BondEncoderᵗ(edge features), one per layer):
//
//	hᵗ_u = MLP((1+ε)·hᵗ⁻¹_u + α_1·Σ_{v∈N(u)} ReLU(hᵗ⁻¹_v + e_uv) + Σ_{i=2..k} α_i·Σ_{v∈N_i(u)} hᵗ⁻¹_v)
//
// With model.global_readout, READ = (Σ_{v∈G(u)} hᵗ⁻¹_v)·Wᵗ is added to R-SPN's
// sum and to E-SPN's MLP input (SP-MPNN with global readout, paper §3).
// Then SPN's readout out = Σ_t Dropout(Wᵗ·pool(hᵗ) + bᵗ) and the loss.
func (m *Typed) buildGraph(key progKey, bd *batchData) (*program, error) {
	cfg := m.cfg
	N, d, k := key.N, cfg.Model.Hidden, cfg.Model.K
	bdr, p, be := m.newProgram(key, bd)
	param := func(prm *nn.Param) *G.Node { return p.param(bdr, prm) }
	td := &m.td
	apply := func(o op.Op, in ...*G.Node) *G.Node { return bdr.op(be, o, in...) }

	h := m.encode(bdr, p, be, bd)
	if m.atom != nil {
		atom := apply(nbop.CatEmbed{ID: "enc.atom", Be: be, D: td, Rows: m.atom.Shape[0], N: N, W: d}, param(m.atom))
		if bdr.err == nil {
			var err error
			if h, err = G.Add(h, atom); err != nil {
				return nil, fmt.Errorf("building the input encoding: %w", err)
			}
		}
	}
	hs := []*G.Node{h}
	for t, l := range m.layers {
		name := fmt.Sprintf("layer%d", t+1)
		logits, eps := param(l.agg.Logits), param(l.agg.Eps)
		alpha := bdr.op(be, newSoftmax(name+".alpha", k), logits)
		var w *G.Node // the global readout map
		if l.read != nil {
			w = param(l.read)
		}
		hPrev := h
		plus := func(x *G.Node) *G.Node { return globalRead(bdr, be, td, name, w, x, hPrev, N, d) }
		switch m.kind {
		case KindRSPN:
			s := l.self.apply(bdr, be, bd, key, l.names[0], h, l.self.bind(param))
			hh := l.higher.apply(bdr, be, bd, key, l.names[1], h, l.higher.bind(param))
			xs := make(G.Nodes, len(l.rel))
			for j, r := range l.rel {
				xs[j] = r.apply(bdr, be, bd, key, l.names[2+j], h, r.bind(param))
			}
			rel := apply(nbop.RelAgg{ID: name + ".rel", Be: be, D: td, R: len(l.rel), N: N, W: d}, xs...)
			h = plus(apply(nbop.Combine{ID: name + ".combine", Be: be, D: td, K: k, N: N, W: d}, s, rel, hh, alpha, eps))
		case KindESPN:
			msg := apply(nbop.EdgeMsg{ID: name + ".edge", Be: be, D: td, Rows: l.bond.Shape[0], N: N, W: d}, h, param(l.bond))
			agg := apply(nbop.Combine{ID: name + ".combine", Be: be, D: td, K: k, N: N, W: d}, h, msg, h, alpha, eps)
			h = l.out.apply(bdr, be, bd, key, name, plus(agg), l.out.bind(param))
		}
		hs = append(hs, h)
	}
	return m.finish(bdr, p, be, bd, hs, m.kind)
}
