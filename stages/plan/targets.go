package plan

import (
	"fmt"

	"github.com/spn-project/spn/data/qm9"
	"github.com/spn-project/spn/models/metric"
	"github.com/spn-project/spn/schema"
)

// targets returns the indices of the dataset targets d selects, in order
// (nil: the dataset's own targets, all of them), and for metric
// "film_error" their chemical-accuracy normalising factors. Only QM9
// selects targets and has the factors.
func targets(d schema.Dataset, metricName string) ([]int, []float64, error) {
	if d.Kind != "qm9" {
		if len(d.Targets) > 0 {
			return nil, nil, fmt.Errorf("dataset.targets: dataset kind %q does not select targets", d.Kind)
		}
		if metricName == metric.FiLM {
			return nil, nil, fmt.Errorf("protocol.metric %s needs QM9's chemical-accuracy factors; dataset kind %q has none", metricName, d.Kind)
		}
		return nil, nil, nil
	}
	idx := make([]int, len(d.Targets))
	var factors []float64
	for i, name := range d.Targets {
		j, err := qm9.TargetIndex(name)
		if err != nil {
			return nil, nil, fmt.Errorf("dataset.targets[%d]: %w", i, err)
		}
		idx[i] = j
		if metricName == metric.FiLM {
			factors = append(factors, qm9.ChemAccFactors[j])
		}
	}
	return idx, factors, nil
}
