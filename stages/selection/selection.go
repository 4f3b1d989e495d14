// Package selection reads and writes the stages' result files
// (stages.FileResult) and holds the selection rule over train runs (which
// scores win, how ties break) that the select, evaluate, tabulate and
// figure kinds and the evaluation protocols share, so that every one of
// them picks points identically without importing a sibling stage kind.
package selection

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	"github.com/spn-project/spn/internal/jsonpos"
	"github.com/spn-project/spn/models/metric"
	"github.com/spn-project/spn/schema"
	"github.com/spn-project/spn/stages"
)

// Selection criteria (schema.Protocol.SelectOn).
const (
	SelectOnValMetric = "val_metric"
	SelectOnValLoss   = "val_loss"
)

// TrainRun is one train stage's result together with where it was read
// from (used in error messages).
type TrainRun struct {
	Source string
	Result stages.TrainResult
}

// DivergedNote returns, when a run of group diverged, which run and how;
// "" when none did.
func DivergedNote(group []TrainRun) string {
	for r, run := range group {
		if run.Result.Diverged != "" {
			return fmt.Sprintf("run %d diverged (%s)", r, run.Result.Diverged)
		}
	}
	return ""
}

// PointLabel writes a point's grid values as (path=value, ...).
func PointLabel(pt schema.Point) string {
	parts := make([]string, len(pt.Values))
	for i, v := range pt.Values {
		parts[i] = fmt.Sprintf("%s=%v", v.Path, v.Value)
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// LowerIsBetter reports whether smaller scores win when comparing by
// selectOn ("val_metric" or "val_loss") for the given metric.
func LowerIsBetter(selectOn, name string) (bool, error) {
	if err := metric.Known(name); err != nil {
		return false, err
	}
	switch selectOn {
	case SelectOnValLoss:
		return true, nil
	case SelectOnValMetric:
		return !metric.HigherIsBetter(name), nil
	}
	return false, fmt.Errorf("unknown select_on %q (want %q or %q)", selectOn, SelectOnValMetric, SelectOnValLoss)
}

// Best returns the index of the best score: the smallest if lower, else
// the largest; among equal scores the earliest index wins. scores must be
// non-empty and free of NaN.
func Best(scores []float64, lower bool) int {
	w := 0
	for i := 1; i < len(scores); i++ {
		if (lower && scores[i] < scores[w]) || (!lower && scores[i] > scores[w]) {
			w = i
		}
	}
	return w
}

// CommonMetric checks that every run carries the same known metric and
// returns it; if want is not empty the metric must equal want.
func CommonMetric(runs []TrainRun, want string) (string, error) {
	if len(runs) == 0 {
		return "", errors.New("no train results")
	}
	m := want
	if m == "" {
		m = runs[0].Result.Metric
	}
	if _, err := LowerIsBetter(SelectOnValLoss, m); err != nil {
		return "", fmt.Errorf("%s: %w", runs[0].Source, err)
	}
	for _, r := range runs {
		if r.Result.Metric != m {
			return "", fmt.Errorf("%s: metric %q, want %q", r.Source, r.Result.Metric, m)
		}
	}
	return m, nil
}

// SamePoint checks that all runs of a group trained the same configuration;
// a mismatch means the inputs were not grouped as the contract says.
func SamePoint(runs []TrainRun) error {
	for _, r := range runs[1:] {
		if !reflect.DeepEqual(r.Result.Point, runs[0].Result.Point) {
			return fmt.Errorf("%s and %s trained different configurations: inputs are not grouped by point", runs[0].Source, r.Source)
		}
	}
	return nil
}

// MeanScore returns the mean over runs of the validation score selectOn
// compares ("val_metric": ValScore, "val_loss": ValLoss).
func MeanScore(runs []TrainRun, selectOn string) (float64, error) {
	field := "val_score"
	get := func(r *stages.TrainResult) float64 { return r.ValScore }
	if selectOn == SelectOnValLoss {
		field = "val_loss"
		get = func(r *stages.TrainResult) float64 { return r.ValLoss }
	}
	return Mean(runs, field, get)
}

// Mean returns the mean of get over runs, in order; a NaN or infinite value
// is an error naming the run's source and field.
func Mean(runs []TrainRun, field string, get func(*stages.TrainResult) float64) (float64, error) {
	if len(runs) == 0 {
		return 0, fmt.Errorf("no runs to average %s over", field)
	}
	var sum float64
	for i := range runs {
		if d := runs[i].Result.Diverged; d != "" {
			return 0, fmt.Errorf("%s: the run diverged, it has no %s: %s", runs[i].Source, field, d)
		}
		v := get(&runs[i].Result)
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return 0, fmt.Errorf("%s: %s is missing or not finite (%v)", runs[i].Source, field, v)
		}
		sum += v
	}
	return sum / float64(len(runs)), nil
}

// ReadTrainRuns reads the train results of inputs, in order. Score fields
// (val_loss, val_score, test_loss, test_score) absent or null in a file
// are set to NaN so that using them is an error rather than a silent 0.
func ReadTrainRuns(inputs []stages.Input) ([]TrainRun, error) {
	runs := make([]TrainRun, len(inputs))
	for i, in := range inputs {
		r, err := ReadTrainResult(in.Dir)
		if err != nil {
			return nil, fmt.Errorf("input %d (%s): %w", i, in.Key, err)
		}
		runs[i] = TrainRun{Source: filepath.Join(in.Dir, stages.FileResult), Result: *r}
	}
	return runs, nil
}

// ReadTrainResult reads dir/result.json as a stages.TrainResult, marking
// absent or null score fields as NaN (see ReadTrainRuns).
func ReadTrainResult(dir string) (*stages.TrainResult, error) {
	path := filepath.Join(dir, stages.FileResult)
	var probe struct {
		ValLoss   *float64 `json:"val_loss"`
		ValScore  *float64 `json:"val_score"`
		TestLoss  *float64 `json:"test_loss"`
		TestScore *float64 `json:"test_score"`
	}
	var r stages.TrainResult
	if err := DecodeFile(path, &r, &probe); err != nil {
		return nil, err
	}
	for _, f := range []struct {
		p   *float64
		dst *float64
	}{{probe.ValLoss, &r.ValLoss}, {probe.ValScore, &r.ValScore}, {probe.TestLoss, &r.TestLoss}, {probe.TestScore, &r.TestScore}} {
		if f.p == nil {
			*f.dst = math.NaN()
		}
	}
	return &r, nil
}

// DecodeFile reads the JSON file at path into each of vs (unknown fields
// are ignored). Errors name the file and, for syntax and type errors, the
// line and column.
func DecodeFile(path string, vs ...any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("reading result: %w", err)
	}
	for _, v := range vs {
		if err := json.Unmarshal(b, v); err != nil {
			return jsonpos.Wrap(path, b, err)
		}
	}
	return nil
}

// WriteResult writes v as indented JSON to dir/result.json.
func WriteResult(dir string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding result: %w", err)
	}
	path := filepath.Join(dir, stages.FileResult)
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("writing result: %w", err)
	}
	return nil
}

// ReadEvalResult reads the EvalResult an evaluate stage wrote into dir. It
// checks that split_scores is present, non-empty and finite.
func ReadEvalResult(dir string) (*stages.EvalResult, error) {
	path := filepath.Join(dir, stages.FileResult)
	var probe struct {
		SplitScores []*float64 `json:"split_scores"`
	}
	var r stages.EvalResult
	if err := DecodeFile(path, &r, &probe); err != nil {
		return nil, err
	}
	if len(probe.SplitScores) == 0 {
		return nil, fmt.Errorf("%s: split_scores is missing or empty", path)
	}
	for i, v := range probe.SplitScores {
		if v == nil || math.IsNaN(*v) || math.IsInf(*v, 0) {
			return nil, fmt.Errorf("%s: split_scores[%d] is missing or not finite", path, i)
		}
	}
	return &r, nil
}
