// Package refkind registers the hand-written reference models of
// models/internal/testkit/ref (spn, gin) as model kinds, for tests that
// run them through models.Registry (training, prediction, checkpoints).
// It is apart from ref because models.Kind's constructor names
// kernels.Backend, and ref imports no kernel.
package refkind

import (
	"github.com/spn-project/spn/models"
	"github.com/spn-project/spn/models/internal/testkit/ref"
	"github.com/spn-project/spn/models/kernels"
	"github.com/spn-project/spn/models/param"
	"github.com/spn-project/spn/schema/modelspec"
)

// HandWritten returns the registry of the hand-written reference models
// (spn, gin) the model kinds are tested against.
func HandWritten() models.Registry {
	return models.NewRegistry(refKind{"spn", ref.NewSPN}, refKind{"gin", ref.NewGIN})
}

// refKind is a hand-written reference model kind.
type refKind struct {
	name string
	new  func(cfg models.Config, seed uint64) (models.Model, error)
}

// Name implements models.Kind.
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

// New implements models.Kind; the reference computes in plain Go loops
// and leaves be unused.
func (k refKind) New(cfg models.Config, seed uint64, _ kernels.Backend) (models.Model, error) {
	return k.new(cfg, seed)
}
