package kinds

import (
	"fmt"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/models"
	"github.com/spn-project/spn/models/kernels"
)

// gorgonia is what the tests drive of a model built on models/rt.
type gorgonia interface {
	models.Model
	Step(b *data.Batch) (float64, []float32, error)
	Predict(b *data.Batch) ([]float32, error)
}

// newModel builds cfg with its kind's own constructor (Kind.New, which
// checks the configuration itself; the registry's Check is not run first).
func newModel(cfg models.Config, seed uint64, be kernels.Backend) (gorgonia, error) {
	k, err := All().Lookup(cfg.Model.Kind)
	if err != nil {
		return nil, err
	}
	m, err := k.New(cfg, seed, be)
	if err != nil {
		return nil, err
	}
	g, ok := m.(gorgonia)
	if !ok {
		return nil, fmt.Errorf("model kind %s: %T has no Step and Predict", cfg.Model.Kind, m)
	}
	return g, nil
}
