package schema

import (
	"fmt"

	"github.com/spn-project/spn/data/qm9"
)

// Targets are the regression targets a dataset section selects of its
// kind's.
type Targets struct {
	// Index are the indices of the selected targets among the dataset's,
	// in the section's order; nil: all of the dataset's own targets.
	Index []int
	// ChemAcc are the chemical-accuracy normalising factors of the
	// selected targets (metric film_error), one per entry of Index; nil
	// when the kind has none (HasChemAcc false).
	ChemAcc []float64
	// HasChemAcc says whether the dataset kind has chemical-accuracy
	// factors (QM9's, GNN-FiLM's), which metric film_error needs.
	HasChemAcc bool
}

// TargetsOf returns the regression targets dataset section d selects.
// Only QM9 selects targets by name (dataset.targets) and has
// chemical-accuracy factors; another kind that names targets is an error.
func TargetsOf(d Dataset) (Targets, error) {
	if d.Kind != "qm9" {
		if len(d.Targets) > 0 {
			return Targets{}, fmt.Errorf("dataset.targets: dataset kind %q does not select targets", d.Kind)
		}
		return Targets{}, nil
	}
	t := Targets{Index: make([]int, len(d.Targets)), HasChemAcc: true}
	for i, name := range d.Targets {
		j, err := qm9.TargetIndex(name)
		if err != nil {
			return Targets{}, fmt.Errorf("dataset.targets[%d]: %w", i, err)
		}
		t.Index[i] = j
		t.ChemAcc = append(t.ChemAcc, qm9.ChemAccFactors[j])
	}
	return t, nil
}
