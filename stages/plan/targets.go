package plan

import (
	"fmt"

	"github.com/spn-project/spn/models/metric"
	"github.com/spn-project/spn/schema"
)

// targets returns the indices of the dataset targets d selects, in order
// (nil: the dataset's own targets, all of them), and for metric
// "film_error" their chemical-accuracy normalising factors, which the
// dataset kind declares (schema.TargetsOf).
func targets(d schema.Dataset, metricName string) ([]int, []float64, error) {
	t, err := schema.TargetsOf(d)
	if err != nil {
		return nil, nil, err
	}
	if metricName != metric.FiLM {
		return t.Index, nil, nil
	}
	if !t.HasChemAcc {
		return nil, nil, fmt.Errorf("protocol.metric %s needs chemical-accuracy factors; dataset kind %q has none", metricName, d.Kind)
	}
	return t.Index, t.ChemAcc, nil
}
