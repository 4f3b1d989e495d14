// Package selectstage implements the "select" stage kind: it picks the best
// grid point of one split from the validation scores of its train stages,
// with the selection rule of stages/results (shared with evaluate).
package selectstage

import (
	"context"
	"fmt"
	"strings"

	"github.com/spn-project/spn/stages"
	"github.com/spn-project/spn/stages/selection"
)

// Kind is the select stage kind. Inputs: Points×Runs train stages,
// point-major (all runs of point 0, then all runs of point 1, ...).
// Artifact: stages.FileResult holding a stages.SelectResult.
//
// Each point is scored by the mean of its runs' validation scores
// (SelectOn "val_metric": the metric's direction, metric.HigherIsBetter;
// "val_loss": lower wins). Tie rule: among points with exactly equal
// mean scores, the earliest in grid order wins.
type Kind struct{}

// Name returns "select".
func (Kind) Name() string { return stages.KindSelect }

// Version returns the kind's version.
func (Kind) Version() string { return "1" }

// Run reads the train results, picks the winner and writes result.json.
func (Kind) Run(ctx context.Context, job *stages.Job) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	var p stages.SelectParams
	if err := job.Decode(&p); err != nil {
		return err
	}
	runs, err := selection.ReadTrainRuns(job.InputsOf(stages.KindTrain))
	if err != nil {
		return err
	}
	res, err := Select(p, runs)
	if err != nil {
		return err
	}
	return selection.WriteResult(job.Dir, res)
}

// Select picks the best of p.Points grid points from runs, which hold
// p.Runs results per point, point-major. Scores and tie rule are those
// documented on Kind.
func Select(p stages.SelectParams, runs []selection.TrainRun) (*stages.SelectResult, error) {
	if p.Points < 1 || p.Runs < 1 {
		return nil, fmt.Errorf("points (%d) and runs (%d) must be at least 1", p.Points, p.Runs)
	}
	if len(runs) != p.Points*p.Runs {
		return nil, fmt.Errorf("got %d train results, want points×runs = %d×%d = %d", len(runs), p.Points, p.Runs, p.Points*p.Runs)
	}
	metric, err := selection.CommonMetric(runs, "")
	if err != nil {
		return nil, err
	}
	lower, err := selection.LowerIsBetter(p.SelectOn, metric)
	if err != nil {
		return nil, err
	}
	groups := make([][]selection.TrainRun, p.Points)
	for i := range groups {
		groups[i] = runs[i*p.Runs : (i+1)*p.Runs]
		if err := selection.SamePoint(groups[i]); err != nil {
			return nil, fmt.Errorf("point %d: %w", i, err)
		}
	}
	res := &stages.SelectResult{Split: p.Split, Scores: make([]float64, p.Points)}
	var usable []int
	for i, g := range groups {
		if note := selection.DivergedNote(g); note != "" {
			res.Excluded = append(res.Excluded, i)
			res.Notes = append(res.Notes, fmt.Sprintf("split %d: grid point %d %s excluded from selection: %s", p.Split, i, selection.PointLabel(g[0].Result.Point), note))
			continue
		}
		if res.Scores[i], err = selection.MeanScore(g, p.SelectOn); err != nil {
			return nil, fmt.Errorf("point %d: %w", i, err)
		}
		usable = append(usable, i)
	}
	if len(usable) == 0 {
		return nil, fmt.Errorf("every grid point diverged, nothing to select: %s", strings.Join(res.Notes, "; "))
	}
	sub := make([]float64, len(usable))
	for j, i := range usable {
		sub[j] = res.Scores[i]
	}
	res.Winner = usable[selection.Best(sub, lower)]
	res.Point = groups[res.Winner][0].Result.Point
	return res, nil
}
