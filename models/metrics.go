package models

import (
	"fmt"
	"math"
	"sort"

	metrics "github.com/spn-project/spn/models/metric"
)

// Metric names (schema.Protocol.Metric).
const (
	MetricAccuracy = "accuracy"
	MetricMAE      = "mae"
	MetricROCAUC   = "rocauc"
	// MetricFiLM is GNN-FiLM's QM9 error: per target, MAE divided by the
	// target's chemical-accuracy factor (models/metric.FiLMError). Scoring
	// it needs the factors: see ScoreWith.
	MetricFiLM = "film_error"
)

// HigherIsBetter reports whether larger values of metric are better.
func HigherIsBetter(metric string) bool { return metric != MetricMAE && metric != MetricFiLM }

// IsMetric reports whether metric is a metric name spn knows.
func IsMetric(metric string) bool {
	switch metric {
	case MetricAccuracy, MetricMAE, MetricROCAUC, MetricFiLM:
		return true
	}
	return false
}

// CheckMetric reports whether metric suits a model of configuration cfg:
// accuracy and rocauc (binary only) for classification, mae for regression.
func CheckMetric(metric string, cfg Config) error {
	switch metric {
	case MetricAccuracy, MetricROCAUC:
		if cfg.Task != TaskClassification {
			return fmt.Errorf("metric %s needs a classification task, dataset is %s", metric, cfg.Task)
		}
		if metric == MetricROCAUC && cfg.Out != 2 {
			return fmt.Errorf("metric rocauc needs a binary task, dataset has %d classes", cfg.Out)
		}
		return nil
	case MetricMAE, MetricFiLM:
		if cfg.Task != TaskRegression {
			return fmt.Errorf("metric %s needs a regression task, dataset is %s", metric, cfg.Task)
		}
		return nil
	}
	return fmt.Errorf("unknown metric %q (want accuracy, mae or rocauc)", metric)
}

// Score computes metric from model outputs out (g×c: logits for
// classification, predictions for regression) against classes y or
// regression targets.
func Score(metric string, out []float32, c int, y []int32, target []float64) (float64, error) {
	return ScoreWith(metric, out, c, y, target, nil)
}

// ScoreWith is Score with the per-target normalising factors of
// MetricFiLM (ignored by the other metrics).
func ScoreWith(metric string, out []float32, c int, y []int32, target []float64, factors []float64) (float64, error) {
	switch metric {
	case MetricFiLM:
		if len(factors) != c {
			return 0, fmt.Errorf("%s: %d normalising factors for %d outputs", metric, len(factors), c)
		}
		return metrics.FiLMError(out, target, factors)
	case MetricAccuracy:
		return Accuracy(out, c, y)
	case MetricMAE:
		return MAE(out, target)
	case MetricROCAUC:
		if c != 2 {
			return 0, fmt.Errorf("rocauc needs a binary task, got %d classes", c)
		}
		s := make([]float64, len(y))
		for i := range y {
			s[i] = float64(out[i*2+1]) - float64(out[i*2])
		}
		return ROCAUC(s, y)
	}
	return 0, fmt.Errorf("unknown metric %q (want accuracy, mae or rocauc)", metric)
}

// Accuracy returns the fraction of rows of logits (g×c) whose arg-max (first
// on ties) equals y.
func Accuracy(logits []float32, c int, y []int32) (float64, error) {
	if len(logits) != len(y)*c {
		return 0, fmt.Errorf("accuracy: %d outputs for %d graphs × %d classes", len(logits), len(y), c)
	}
	if len(y) == 0 {
		return 0, fmt.Errorf("accuracy of an empty set")
	}
	right := 0
	for i, yi := range y {
		best := 0
		for j := 1; j < c; j++ {
			if logits[i*c+j] > logits[i*c+best] {
				best = j
			}
		}
		if int32(best) == yi {
			right++
		}
	}
	return float64(right) / float64(len(y)), nil
}

// MAE returns the mean absolute error of pred against target.
func MAE(pred []float32, target []float64) (float64, error) {
	if len(pred) != len(target) || len(pred) == 0 {
		return 0, fmt.Errorf("mae: %d predictions for %d targets", len(pred), len(target))
	}
	var s float64
	for i, p := range pred {
		s += math.Abs(float64(p) - target[i])
	}
	return s / float64(len(pred)), nil
}

// ROCAUC returns the area under the ROC curve of scores for labels y ∈ {0,1}
// (the Mann–Whitney statistic; tied scores count one half).
func ROCAUC(scores []float64, y []int32) (float64, error) {
	if len(scores) != len(y) {
		return 0, fmt.Errorf("rocauc: %d scores for %d labels", len(scores), len(y))
	}
	idx := make([]int, len(y))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return scores[idx[a]] < scores[idx[b]] })
	var pos, neg, rankSum float64
	for i := 0; i < len(idx); {
		j := i
		for j < len(idx) && scores[idx[j]] == scores[idx[i]] {
			j++
		}
		mid := float64(i+j+1) / 2 // mean 1-based rank of the tie group
		for _, k := range idx[i:j] {
			switch y[k] {
			case 1:
				pos++
				rankSum += mid
			case 0:
				neg++
			default:
				return 0, fmt.Errorf("rocauc: label %d is not 0 or 1", y[k])
			}
		}
		i = j
	}
	if pos == 0 || neg == 0 {
		return 0, fmt.Errorf("rocauc: need both classes, have %v positives and %v negatives", pos, neg)
	}
	return (rankSum - pos*(pos+1)/2) / (pos * neg), nil
}
