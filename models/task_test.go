package models

import (
	"math"
	"strings"
	"testing"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/schema"
)

func TestMeanROCAUC(t *testing.T) {
	nan := math.NaN()
	tests := []struct {
		name   string
		out    []float32
		target []float64
		want   float64
		err    string
	}{
		// Task 0: perfect; task 1: reversed → mean 0.5.
		{"two tasks", []float32{0.9, 0.1, 0.2, 0.8, 0.7, 0.3}, []float64{1, 1, 0, 0, 1, 1}, 0.5, ""},
		// Task 1 has one class among its labels: skipped, as OGB does.
		{"one-class task skipped", []float32{0.9, 5, 0.2, 6, 0.7, 7}, []float64{1, 1, 0, 1, 1, nan}, 1, ""},
		// Missing labels do not count, whatever the score.
		{"missing ignored", []float32{0.9, 0, 0.2, 0, 0.7, 0, 99, 0}, []float64{1, 0, 0, 1, 1, 0, nan, 1}, 0.75, ""},
		{"no task has both classes", []float32{1, 2}, []float64{1, nan}, 0, "no task has both"},
		{"length mismatch", []float32{1, 2, 3}, []float64{1, 0}, 0, "3 outputs for 2 targets"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := MeanROCAUC(tc.out, 2, tc.target)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want containing %q", err, tc.err)
				}
				return
			}
			if err != nil || math.Abs(got-tc.want) > 1e-12 {
				t.Fatalf("MeanROCAUC = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

func TestBinaryTask(t *testing.T) {
	ds := &data.Dataset{Name: "mol", NumTargets: 3, Task: data.TaskBinary, EdgeFeatVocab: []int{5, 6, 2}, NodeCatVocab: []int{3}, NumEdgeTypes: 2}
	cfg, err := ConfigFor(schema.Model{Kind: "espn"}, ds)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Task != TaskBinary || cfg.Out != 3 || len(cfg.EdgeFeatVocab) != 3 || len(cfg.NodeCatVocab) != 1 || cfg.NumEdgeTypes != 2 {
		t.Fatalf("ConfigFor = %+v", cfg)
	}
	if err := CheckMetric(MetricROCAUC, cfg); err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{MetricAccuracy, MetricMAE} {
		if err := CheckMetric(m, cfg); err == nil || !strings.Contains(err.Error(), "want rocauc") {
			t.Errorf("CheckMetric(%s) = %v", m, err)
		}
	}
	// Score dispatches a multi-task rocauc on the targets.
	s, err := Score(MetricROCAUC, []float32{1, 0, 0, 0, 1, 0}, 3, nil, []float64{1, math.NaN(), 0, 0, math.NaN(), 1})
	if err != nil || s != 0.75 {
		t.Fatalf("Score = %v, %v; want 0.75 (task 0: 1, task 1: no labels, task 2: a tie)", s, err)
	}
}
