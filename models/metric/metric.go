// Package metric scores model outputs against a dataset's targets. It is
// the one place that knows the metrics spn reports (accuracy, MAE, RMSE,
// ROC-AUC, average precision), which task each suits, and which direction
// is better.
//
// ROC-AUC, AP and RMSE follow OGB's Evaluator
// (ogb/graphproppred/evaluate.py, which LRGB's Peptides-func uses for AP)
// for multi-task sets: per task over the labelled examples only (a NaN
// target is a missing label), tasks lacking a positive or a negative
// label skipped (ROC-AUC, AP), the mean over tasks. MAE skips the missing
// labels too: the mean over every labelled entry.
package metric

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/spn-project/spn/data"
)

// Metric names (schema.Protocol.Metric).
const (
	Accuracy = "accuracy"
	MAE      = "mae"
	RMSE     = "rmse"
	ROCAUC   = "rocauc"
	// AP is the average precision of multi-task binary sets (scikit-learn's
	// average_precision_score per task, as OGB's and LRGB's evaluators).
	AP = "ap"
	// FiLM is GNN-FiLM's QM9 error: per target, the MAE divided by the
	// target's chemical-accuracy factor (FiLMError); scoring it needs the
	// factors (Outputs.Factors).
	FiLM = "film_error"
)

// metrics lists every metric with its direction and the tasks it suits;
// nothing else in spn decides these.
var metrics = []struct {
	name   string
	higher bool
	tasks  []data.Task
}{
	{Accuracy, true, []data.Task{data.TaskClassification}},
	{MAE, false, []data.Task{data.TaskRegression}},
	{RMSE, false, []data.Task{data.TaskRegression}},
	{ROCAUC, true, []data.Task{data.TaskClassification, data.TaskBinary}},
	{AP, true, []data.Task{data.TaskBinary}},
	{FiLM, false, []data.Task{data.TaskRegression}},
}

// Names returns the metric names in a fixed order.
func Names() []string {
	out := make([]string, len(metrics))
	for i, m := range metrics {
		out[i] = m.name
	}
	return out
}

// Known returns an error naming the known metrics when name is not one.
func Known(name string) error {
	if slices.Contains(Names(), name) {
		return nil
	}
	return fmt.Errorf("unknown metric %q (want %s)", name, strings.Join(Names(), ", "))
}

// HigherIsBetter reports whether larger values of metric name are better
// (accuracy, rocauc, ap); false for mae, rmse and unknown names.
func HigherIsBetter(name string) bool {
	for _, m := range metrics {
		if m.name == name {
			return m.higher
		}
	}
	return false
}

// Check reports whether metric name suits a task with out outputs (classes
// for classification, targets or binary tasks otherwise): accuracy and
// rocauc (two classes only) for classification, mae and rmse for
// regression, rocauc and ap for binary tasks.
func Check(name string, task data.Task, out int) error {
	if err := Known(name); err != nil {
		return err
	}
	for _, m := range metrics {
		if m.name == name && !slices.Contains(m.tasks, task) {
			return fmt.Errorf("metric %s does not suit a %s task (it suits %v)", name, task, m.tasks)
		}
	}
	if name == ROCAUC && task == data.TaskClassification && out != 2 {
		return fmt.Errorf("metric rocauc needs a binary task, dataset has %d classes", out)
	}
	return nil
}

// Outputs are a model's outputs on g graphs and what they are scored
// against.
type Outputs struct {
	// Out is g×C: logits of C classes (classification), predictions of C
	// targets (regression) or one logit per binary task (binary, C tasks).
	Out []float32
	C   int
	// Y are the classes of a classification (rocauc scores logit 1 minus
	// logit 0); Target the g×C targets of a regression (NaN: missing) or
	// the 0/1/NaN labels of binary tasks.
	Y      []int32
	Target []float64
	// Factors are FiLM's per-target normalising factors, one per output
	// (metric film_error; ignored by the others).
	Factors []float64
}

// Score computes metric name of o for a task: accuracy or ROC-AUC of a
// classification, MAE, RMSE or FiLM's error of a regression, OGB's mean
// ROC-AUC or AP of binary tasks.
func Score(name string, task data.Task, o Outputs) (float64, error) {
	out, c, y, target, factors := o.Out, o.C, o.Y, o.Target, o.Factors
	if err := Check(name, task, c); err != nil {
		return 0, err
	}
	switch {
	case name == FiLM:
		if len(factors) != c {
			return 0, fmt.Errorf("%s: %d normalising factors for %d outputs", name, len(factors), c)
		}
		return FiLMError(out, target, factors)
	case name == Accuracy:
		return AccuracyOf(out, c, y)
	case name == MAE:
		return MAEOf(out, target)
	case name == RMSE:
		return RMSEOf(out, target, c)
	case name == ROCAUC && task == data.TaskBinary:
		return MeanROCAUC(out, target, c)
	case name == AP:
		return MeanAP(out, target, c)
	case name == ROCAUC:
		if len(out) != 2*len(y) {
			return 0, fmt.Errorf("rocauc: %d outputs for %d graphs × 2 classes", len(out), len(y))
		}
		s := make([]float64, len(y))
		for i := range y {
			s[i] = float64(out[i*2+1]) - float64(out[i*2])
		}
		return AUC(s, y)
	}
	return 0, Known(name)
}

// AccuracyOf returns the fraction of rows of logits (g×c) whose arg-max
// (first on ties) equals y.
func AccuracyOf(logits []float32, c int, y []int32) (float64, error) {
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

// MAEOf returns the mean absolute error of pred against target over the
// labelled entries: a NaN target is a missing label, skipped (an error
// when every target is missing). Without a missing target it is the mean
// over every entry.
func MAEOf(pred []float32, target []float64) (float64, error) {
	if len(pred) != len(target) || len(pred) == 0 {
		return 0, fmt.Errorf("mae: %d predictions for %d targets", len(pred), len(target))
	}
	var s float64
	n := 0
	for i, p := range pred {
		if math.IsNaN(target[i]) {
			continue
		}
		s += math.Abs(float64(p) - target[i])
		n++
	}
	if n == 0 {
		return 0, fmt.Errorf("mae: no labelled target")
	}
	return s / float64(n), nil
}

// RMSEOf returns OGB's RMSE of pred against target, both g×tasks: per
// task the root mean squared error over the labelled (non-NaN) targets,
// then the mean over tasks that have any.
func RMSEOf(pred []float32, target []float64, tasks int) (float64, error) {
	if tasks < 1 || len(pred) != len(target) || len(pred)%tasks != 0 || len(pred) == 0 {
		return 0, fmt.Errorf("rmse: %d predictions for %d targets in %d tasks", len(pred), len(target), tasks)
	}
	var sum float64
	n := 0
	for t := 0; t < tasks; t++ {
		var se float64
		m := 0
		for i := t; i < len(pred); i += tasks {
			if math.IsNaN(target[i]) {
				continue
			}
			d := float64(pred[i]) - target[i]
			se += d * d
			m++
		}
		if m > 0 {
			sum += math.Sqrt(se / float64(m))
			n++
		}
	}
	if n == 0 {
		return 0, fmt.Errorf("rmse: no labelled target")
	}
	return sum / float64(n), nil
}

// MeanROCAUC returns OGB's ROC-AUC of scores against binary targets, both
// g×tasks (targets 0, 1 or NaN for missing): per task the AUC over the
// labelled graphs, tasks without both a positive and a negative label
// skipped, the mean over the remaining tasks. It fails when no task
// remains (OGB raises an error there too).
func MeanROCAUC(scores []float32, target []float64, tasks int) (float64, error) {
	return perTask(ROCAUC, AUC, scores, target, tasks)
}

// MeanAP returns OGB's (and LRGB's) average precision of scores against
// binary targets, both g×tasks (targets 0, 1 or NaN for missing): per
// task AveragePrecision over the labelled graphs, tasks without both a
// positive and a negative label skipped, the mean over the remaining
// tasks. It fails when no task remains.
func MeanAP(scores []float32, target []float64, tasks int) (float64, error) {
	return perTask(AP, AveragePrecision, scores, target, tasks)
}

// perTask is OGB's per-task mean of the binary metric name (computed by
// of over one task's labelled scores and 0/1 labels).
func perTask(name string, of func([]float64, []int32) (float64, error), scores []float32, target []float64, tasks int) (float64, error) {
	if tasks < 1 || len(scores) != len(target) || len(scores)%tasks != 0 {
		return 0, fmt.Errorf("%s: %d scores for %d targets in %d tasks", name, len(scores), len(target), tasks)
	}
	var sum float64
	n := 0
	s := make([]float64, 0, len(scores)/tasks)
	y := make([]int32, 0, len(scores)/tasks)
	for t := 0; t < tasks; t++ {
		s, y = s[:0], y[:0]
		pos, neg := 0, 0
		for i := t; i < len(scores); i += tasks {
			switch v := target[i]; {
			case math.IsNaN(v):
				continue
			case v == 1:
				pos++
				y = append(y, 1)
			case v == 0:
				neg++
				y = append(y, 0)
			default:
				return 0, fmt.Errorf("%s: task %d has label %v, want 0, 1 or NaN", name, t, v)
			}
			s = append(s, float64(scores[i]))
		}
		if pos == 0 || neg == 0 {
			continue
		}
		v, err := of(s, y)
		if err != nil {
			return 0, fmt.Errorf("task %d: %w", t, err)
		}
		sum += v
		n++
	}
	if n == 0 {
		return 0, fmt.Errorf("%s: no task has both a positive and a negative label", name)
	}
	return sum / float64(n), nil
}

// AveragePrecision returns the average precision of scores for labels
// y ∈ {0,1}, as scikit-learn's average_precision_score computes it: the
// distinct scores, from the highest, are the thresholds (tied scores
// enter together); at threshold n, P_n is the fraction of positives among
// the graphs scored at least that high and R_n the fraction of all
// positives among them; AP = Σ_n (R_n − R_{n−1})·P_n, R_0 = 0.
func AveragePrecision(scores []float64, y []int32) (float64, error) {
	if len(scores) != len(y) {
		return 0, fmt.Errorf("ap: %d scores for %d labels", len(scores), len(y))
	}
	var pos float64
	for i, s := range scores {
		if math.IsNaN(s) {
			return 0, fmt.Errorf("ap: NaN score")
		}
		switch y[i] {
		case 1:
			pos++
		case 0:
		default:
			return 0, fmt.Errorf("ap: label %d is not 0 or 1", y[i])
		}
	}
	if pos == 0 {
		return 0, fmt.Errorf("ap: no positive label")
	}
	idx := make([]int, len(y))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return scores[idx[a]] > scores[idx[b]] })
	var tp, seen, ap, prevR float64
	for i := 0; i < len(idx); {
		j := i
		for j < len(idx) && scores[idx[j]] == scores[idx[i]] {
			tp += float64(y[idx[j]])
			j++
		}
		seen += float64(j - i)
		r := tp / pos
		ap += (r - prevR) * (tp / seen)
		prevR = r
		i = j
	}
	return ap, nil
}

// AUC returns the area under the ROC curve of scores for labels y ∈ {0,1}
// (the Mann–Whitney statistic; tied scores count one half, which equals
// the trapezoidal area scikit-learn's roc_auc_score computes).
func AUC(scores []float64, y []int32) (float64, error) {
	if len(scores) != len(y) {
		return 0, fmt.Errorf("rocauc: %d scores for %d labels", len(scores), len(y))
	}
	for _, s := range scores {
		if math.IsNaN(s) {
			return 0, fmt.Errorf("rocauc: NaN score")
		}
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
