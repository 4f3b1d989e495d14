package protocol

import (
	"fmt"
	"strings"

	"github.com/spn-project/spn/schema"
	"github.com/spn-project/spn/stages"
	"github.com/spn-project/spn/stages/selection"
)

// Holdout is the "holdout" protocol: every grid point is trained on each
// of the dataset's first Splits fixed splits, Runs times (seeds per run);
// the reported point is the one with the best mean validation score over
// all its splits and runs (select_on, ties to the earlier grid point), and
// its test scores are reported per split (mean over runs).
//
// Layout: Points×Splits×Runs train stages of role holdout, point-major,
// then split, then run.
type Holdout struct{}

// Kind returns "holdout".
func (Holdout) Kind() string { return KindHoldout }

// Layout implements Protocol.
func (Holdout) Layout(p schema.Protocol, points int) (Layout, error) {
	if err := check(p, points); err != nil {
		return Layout{}, err
	}
	var l Layout
	for pt := range points {
		for s := range p.Splits {
			for r := range p.Runs {
				l.Evaluated = append(l.Evaluated, Train{Role: stages.RoleHoldout, Point: pt, Split: s, Run: r, Select: -1})
			}
		}
	}
	return l, nil
}

// Evaluate implements Protocol.
func (Holdout) Evaluate(p schema.Protocol, points int, runs []selection.TrainRun) (*stages.EvalResult, error) {
	if err := check(p, points); err != nil {
		return nil, err
	}
	per := p.Splits * p.Runs
	if len(runs) != points*per {
		return nil, fmt.Errorf("got %d train results, want points×splits×runs = %d×%d×%d = %d", len(runs), points, p.Splits, p.Runs, points*per)
	}
	if err := commonMetric(p, runs); err != nil {
		return nil, err
	}
	lower, err := selection.LowerIsBetter(p.SelectOn, p.Metric)
	if err != nil {
		return nil, err
	}
	res := &stages.EvalResult{Metric: p.Metric}
	var scores []float64
	var usable []int
	for i := range points {
		g := runs[i*per : (i+1)*per]
		if err := selection.SamePoint(g); err != nil {
			return nil, fmt.Errorf("point %d: %w", i, err)
		}
		if note := selection.DivergedNote(g); note != "" {
			res.Notes = append(res.Notes, fmt.Sprintf("grid point %d %s excluded from selection: %s", i, selection.PointLabel(g[0].Result.Point), note))
			continue
		}
		s, err := selection.MeanScore(g, p.SelectOn)
		if err != nil {
			return nil, fmt.Errorf("point %d: %w", i, err)
		}
		scores, usable = append(scores, s), append(usable, i)
	}
	if len(usable) == 0 {
		return nil, fmt.Errorf("every grid point diverged: %s", strings.Join(res.Notes, "; "))
	}
	res.Winner = usable[selection.Best(scores, lower)]
	group := runs[res.Winner*per : (res.Winner+1)*per]
	pt := group[0].Result.Point
	res.Point = &pt
	if err := aggregate(p, res, group, false); err != nil {
		return nil, err
	}
	return res, nil
}

// Model implements Protocol: point < 0 is the evaluated winner (or the only
// point).
func (Holdout) Model(p schema.Protocol, points, point, split, run int, winner func() (int, error)) (int, error) {
	if err := checkRef(p, split, run); err != nil {
		return 0, err
	}
	if point < 0 {
		if points == 1 {
			point = 0
		} else {
			w, err := winner()
			if err != nil {
				return 0, err
			}
			point = w
		}
	}
	if point >= points {
		return 0, fmt.Errorf("grid points 0..%d; asked for %d", points-1, point)
	}
	return (point*p.Splits+split)*p.Runs + run, nil
}
