// Package protocol defines the evaluation protocols of spn as one type
// each: which train stages an experiment runs (its layout), how the
// evaluate stage aggregates them into the scores a table reports, and which
// train stage holds the model of a given point, split and run. The planner
// (stages/plan), the evaluate stage (stages/evaluate) and spn predict ask a
// Protocol instead of repeating its arithmetic.
//
// Adding a protocol is one file here (a type implementing Protocol, listed
// in All) and one value in the #Protocol kind of schema/schema.cue.
package protocol

import (
	"fmt"
	"strings"

	"github.com/spn-project/spn/schema"
	"github.com/spn-project/spn/stages"
	"github.com/spn-project/spn/stages/selection"
)

// Protocol kinds (schema.Protocol.Kind).
const (
	KindHoldout = "holdout"
	KindErrica  = "errica"
	KindFixed   = "fixed"
)

// Protocol is one evaluation protocol. Its methods take the experiment's
// protocol settings and its number of grid points.
type Protocol interface {
	// Kind is the protocol's schema name.
	Kind() string
	// Layout returns the stages the experiment trains, in plan order.
	Layout(p schema.Protocol, points int) (Layout, error)
	// Evaluate aggregates the results of Layout's Evaluated stages, given
	// in that order, into the experiment's result.
	Evaluate(p schema.Protocol, points int, runs []selection.TrainRun) (*stages.EvalResult, error)
	// Model returns the index into Layout's Evaluated stages of the model
	// of grid point point, split split and run run. point < 0 asks for the
	// reported point: winner is called when the protocol needs the
	// evaluated winner to find it (and may fail when it is not known yet).
	Model(p schema.Protocol, points, point, split, run int, winner func() (int, error)) (int, error)
}

// Train is one train stage of a layout.
type Train struct {
	// Role is stages.RoleHoldout, RoleSelect or RoleFinal.
	Role string
	// Point indexes the experiment's grid points; -1 when the point is the
	// winner of Select.
	Point int
	// Split indexes the dataset's splits; Run numbers the reruns.
	Split, Run int
	// Select indexes Layout.Selects whose winner this stage trains; -1
	// when none.
	Select int
}

// Select is one model-selection stage: it compares Trains (grouped by
// point, Runs per point) on the validation data of Split.
type Select struct {
	Split  int
	Runs   int
	Trains []Train
}

// Layout is the train and select stages of an experiment.
type Layout struct {
	// Selects are the selection stages, each with its own train stages.
	Selects []Select
	// Evaluated are the train stages the evaluate stage reads, in order.
	Evaluated []Train
}

// All lists the protocols, one per kind.
var All = []Protocol{Holdout{}, Errica{}, Fixed{}}

// Get returns the protocol of kind.
func Get(kind string) (Protocol, error) {
	names := make([]string, len(All))
	for i, p := range All {
		if p.Kind() == kind {
			return p, nil
		}
		names[i] = p.Kind()
	}
	return nil, fmt.Errorf("unknown protocol kind %q (want %s)", kind, strings.Join(names, ", "))
}

// check validates the settings every protocol needs.
func check(p schema.Protocol, points int) error {
	if p.Splits < 1 {
		return fmt.Errorf("protocol.splits: need at least 1, got %d", p.Splits)
	}
	if p.Runs < 1 {
		return fmt.Errorf("protocol.runs: need at least 1, got %d", p.Runs)
	}
	if points < 1 {
		return fmt.Errorf("points (%d) must be at least 1", points)
	}
	return nil
}

// checkRef validates split and run of a model reference.
func checkRef(p schema.Protocol, split, run int) error {
	if split < 0 || split >= p.Splits || run < 0 || run >= p.Runs {
		return fmt.Errorf("splits 0..%d and runs 0..%d; asked for split %d run %d", p.Splits-1, p.Runs-1, split, run)
	}
	return nil
}

// aggregate fills the per-split scores of res from group, which holds
// Splits×Runs results, split-major. samePoint checks each split's runs
// trained one configuration (errica's per-fold winners).
func aggregate(p schema.Protocol, res *stages.EvalResult, group []selection.TrainRun, samePoint bool) error {
	res.SplitScores = make([]float64, p.Splits)
	res.ValScores = make([]float64, p.Splits)
	res.RunScores = make([]float64, 0, p.Splits*p.Runs)
	for s := range p.Splits {
		sr := group[s*p.Runs : (s+1)*p.Runs]
		if samePoint {
			if err := selection.SamePoint(sr); err != nil {
				return fmt.Errorf("split %d: %w", s, err)
			}
		}
		var err error
		if res.SplitScores[s], err = selection.Mean(sr, "test_score", func(r *stages.TrainResult) float64 { return r.TestScore }); err != nil {
			return fmt.Errorf("split %d: %w", s, err)
		}
		if res.ValScores[s], err = selection.Mean(sr, "val_score", func(r *stages.TrainResult) float64 { return r.ValScore }); err != nil {
			return fmt.Errorf("split %d: %w", s, err)
		}
		for _, r := range sr {
			res.RunScores = append(res.RunScores, r.Result.TestScore)
		}
	}
	return nil
}

// commonMetric checks the protocol metric and that every run carries it.
func commonMetric(p schema.Protocol, runs []selection.TrainRun) error {
	if p.Metric == "" {
		return fmt.Errorf("protocol metric is empty")
	}
	_, err := selection.CommonMetric(runs, p.Metric)
	return err
}
