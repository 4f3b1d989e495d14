package rt

import (
	"github.com/spn-project/spn/models"
	"github.com/spn-project/spn/models/param"
	"github.com/spn-project/spn/schema/modelspec"
)

// The parameter sizes of this package's parts (param.Prod's saturating
// arithmetic), for the kinds' models.Kind.ParamCount: each next to its
// constructor's shapes, and each checked against the constructor by test.

// LayerSumReadout is NetSize's output for a Net without Parts.Output:
// the layer-sum readout of NewReadout.
const LayerSumReadout = -1

// NetSize is the size of the Net that Init builds for cfg from parts
// whose input term holds input values (0: none), whose every layer holds
// layer values, and whose Output holds output values (LayerSumReadout:
// no Output).
func NetSize(cfg models.Config, input, layer, output int64) int64 {
	d := cfg.Model.Hidden
	if output == LayerSumReadout {
		output = ReadoutSize(cfg)
	}
	return param.Sum(param.EncoderSize(cfg.NumLabels, cfg.AttrDim, d), input, param.Times(cfg.Model.Layers, layer), output)
}

// ReadoutSize is the size of NewReadout's maps and NewReadoutNorms' layer
// norms.
func ReadoutSize(cfg models.Config) int64 {
	maps := param.Times(cfg.Model.Layers+1, param.LinearSize(cfg.Model.Hidden, cfg.Out))
	if !cfg.Model.LayerNorm {
		return maps
	}
	return param.Sum(maps, param.Times(cfg.Model.Layers, param.LayerNormSize(cfg.Model.Hidden)))
}

// MLPSize is the size of NewMLPs(name, d, m, init) (m = 1: NewMLP).
func MLPSize(d, m int) int64 {
	return param.Times(m, param.Sum(param.Times(2, param.LinearSize(d, d)), param.Times(2, param.BatchNormReLUSize(d))))
}

// DenseSize is the size of m Dense layers of width d (NewDense).
func DenseSize(d, m int) int64 {
	return param.Times(m, param.Sum(param.LinearSize(d, d), param.BatchNormReLUSize(d)))
}

// HopsSize is the size of NewHops for model section m.
func HopsSize(m modelspec.Model) int64 {
	var read int64
	if m.GlobalReadout {
		read = param.Prod(m.Hidden, m.Hidden)
	}
	return param.Sum(param.HopAggregationSize(m.HopTerms()), read)
}

// EmbedTablesSize is the size of EmbedTables(name, vocab, d, init).
func EmbedTablesSize(vocab []int, d int) int64 {
	var rows int64
	for _, v := range vocab {
		rows = param.Sum(rows, param.Prod(v))
	}
	return param.Prod(int(rows), d)
}

// AtomSize is the size of NewAtom(cfg, d, init) (0 without categorical
// node features).
func AtomSize(cfg models.Config, d int) int64 { return EmbedTablesSize(cfg.NodeCatVocab, d) }

// GatedSize is the size of NewGated(cfg, init).
func GatedSize(cfg models.Config) int64 {
	// The gate's input is 2·d wide: LinearSize(2·d, out), without the
	// product's overflow.
	d, out := cfg.Model.Hidden, cfg.Out
	return param.Sum(param.Times(2, param.Prod(d, out)), param.Prod(out), param.LinearSize(d, out))
}
