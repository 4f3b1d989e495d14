package rt

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
	"github.com/spn-project/spn/models/param"
	"github.com/spn-project/spn/schema/modelspec"
)

// EmbedTables returns the stacked embedding tables of categorical columns
// of vocabularies vocab (Σ vocab × d), each initialised Xavier-uniform as
// OGB's encoders (torch.nn.init.xavier_uniform_ per table).
func EmbedTables(name string, vocab []int, d int, init *rand.Rand) *param.Param {
	_, rows := kernels.EmbedOffsets(vocab)
	p := param.NewParam(name, rows, d)
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

// CheckCategories verifies every value of x (rows × len(vocab)) against
// its column's vocabulary.
func CheckCategories(x []int32, vocab []int) error {
	w := len(vocab)
	for i, v := range x {
		if v < 0 || int(v) >= vocab[i%w] {
			return fmt.Errorf("row %d column %d is %d outside [0,%d)", i/w, i%w, v, vocab[i%w])
		}
	}
	return nil
}

// OfKind names d's dataset kind in a message (` (kind "tu")`), or nothing.
func OfKind(d modelspec.DatasetInfo) string {
	if d.Kind == "" {
		return ""
	}
	return fmt.Sprintf(" (kind %q)", d.Kind)
}

// Atom is OGB's AtomEncoder over a dataset's categorical node features:
// one learnable embedding per column, summed and added to h⁰. A nil *Atom
// (no categorical node features) adds nothing.
type Atom struct {
	// P are the stacked tables (Σ vocab × d).
	P     *param.Param
	vocab []int
}

// NewAtom returns the AtomEncoder "enc.atom" of cfg's categorical node
// features, drawn from init, or nil when the dataset has none.
func NewAtom(cfg models.Config, d int, init *rand.Rand) *Atom {
	if len(cfg.NodeCatVocab) == 0 {
		return nil
	}
	return &Atom{P: EmbedTables("enc.atom", cfg.NodeCatVocab, d, init), vocab: cfg.NodeCatVocab}
}

// CheckBatch verifies b's categorical node features against the model's.
func (a *Atom) CheckBatch(b *data.Batch) error {
	if a == nil {
		return nil
	}
	if !slices.Equal(b.NodeCatVocab, a.vocab) || len(b.NodeCat) != b.N*len(a.vocab) {
		return fmt.Errorf("batch has %d categorical node feature values with vocabularies %v, model built for %v over %d nodes", len(b.NodeCat), b.NodeCatVocab, a.vocab, b.N)
	}
	if err := CheckCategories(b.NodeCat, a.vocab); err != nil {
		return fmt.Errorf("categorical node features: %w", err)
	}
	return nil
}

// Input returns a as the input term of a Net (nil when a is nil: the
// dataset has no categorical node features), reading the node features
// of td.
func (a *Atom) Input(td *nbop.Data) Input {
	if a == nil {
		return nil
	}
	return atomInput{a, td}
}

// atomInput is an Atom as a Net's input term.
type atomInput struct {
	a  *Atom
	td *nbop.Data
}

// Params implements Input: the stacked tables.
func (in atomInput) Params() []*param.Param { return []*param.Param{in.a.P} }

// Add implements Input: h + AtomEncoder(node features), one op whose
// output is the sum (nbop.CatEmbed's Onto).
func (in atomInput) Add(s *Step, h *G.Node) *G.Node {
	return s.Op(nbop.CatEmbed{ID: "enc.atom", Be: s.Be, D: in.td, Rows: in.a.P.Shape[0], N: s.N, W: s.D, Onto: true}, h, s.Param(in.a.P))
}
