package metric

import (
	"fmt"
	"math"
)

// FiLMError is GNN-FiLM's reported QM9 error (Brockschmidt, ICML 2020;
// tf-gnn-samples tasks/qm9_task.py, and the SP-MPNN code's test() in
// src/experiments/run_gr.py): for each target j, the mean absolute error
// of the predictions of the z-scored target divided by its
// chemical-accuracy normalising factor factors[j] (data/qm9.ChemAccFactors),
// i.e. the MAE in units of chemical accuracy; with several targets, the
// mean of those ratios. pred and target are graphs×len(factors), row-major.
// With one target this is exactly the number in GNN-FiLM's tables and the
// paper's Table 4 (one model per property).
func FiLMError(pred []float32, target []float64, factors []float64) (float64, error) {
	t := len(factors)
	if t == 0 {
		return 0, fmt.Errorf("film_error: no normalising factors (the metric needs one per target)")
	}
	if len(pred) != len(target) || len(pred) == 0 || len(pred)%t != 0 {
		return 0, fmt.Errorf("film_error: %d predictions for %d targets of %d properties", len(pred), len(target), t)
	}
	for j, f := range factors {
		if !(f > 0) || math.IsInf(f, 0) {
			return 0, fmt.Errorf("film_error: factor %d is %v, want a positive number", j, f)
		}
	}
	n := len(pred) / t
	var sum float64
	for j := range t {
		var abs float64
		for i := range n {
			abs += math.Abs(float64(pred[i*t+j]) - target[i*t+j])
		}
		sum += abs / float64(n) / factors[j]
	}
	return sum / float64(t), nil
}
