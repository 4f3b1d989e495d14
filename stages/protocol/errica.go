package protocol

import (
	"fmt"

	"github.com/spn-project/spn/schema"
	"github.com/spn-project/spn/stages"
	"github.com/spn-project/spn/stages/selection"
)

// Errica is the "errica" protocol (Errica et al., ICLR 2020): per outer
// fold, every grid point is trained once on the inner train/validation
// split (role select, run 0), a select stage picks the fold's winner, and
// the winner is retrained Runs times (role final) and scored at its best
// validation epoch; a fold's score is the mean of its runs.
//
// Layout: one Select per fold (its Points select trains in grid order);
// Evaluated holds Splits×Runs final trains, split-major.
type Errica struct{}

// Kind returns "errica".
func (Errica) Kind() string { return KindErrica }

// Layout implements Protocol.
func (Errica) Layout(p schema.Protocol, points int) (Layout, error) {
	if err := check(p, points); err != nil {
		return Layout{}, err
	}
	var l Layout
	for s := range p.Splits {
		sel := Select{Split: s, Runs: 1}
		for pt := range points {
			sel.Trains = append(sel.Trains, Train{Role: stages.RoleSelect, Point: pt, Split: s, Run: 0, Select: -1})
		}
		l.Selects = append(l.Selects, sel)
		for r := range p.Runs {
			l.Evaluated = append(l.Evaluated, Train{Role: stages.RoleFinal, Point: -1, Split: s, Run: r, Select: s})
		}
	}
	return l, nil
}

// Evaluate implements Protocol: Winner is -1 and Point nil, since every
// fold selected its own point.
func (Errica) Evaluate(p schema.Protocol, points int, runs []selection.TrainRun) (*stages.EvalResult, error) {
	if err := check(p, max(points, 1)); err != nil {
		return nil, err
	}
	if per := p.Splits * p.Runs; len(runs) != per {
		return nil, fmt.Errorf("got %d train results, want splits×runs = %d×%d = %d", len(runs), p.Splits, p.Runs, per)
	}
	if err := commonMetric(p, runs); err != nil {
		return nil, err
	}
	res := &stages.EvalResult{Metric: p.Metric, Winner: -1}
	if err := aggregate(p, res, runs, true); err != nil {
		return nil, err
	}
	// The folds' model selections excluded diverged points: their final
	// runs carry the notes (once per fold, so once per run 0).
	for s := range p.Splits {
		res.Notes = append(res.Notes, runs[s*p.Runs].Result.Notes...)
	}
	return res, nil
}

// Model implements Protocol: the final run of split and run; the point is
// the fold's winner, so point must be < 0.
func (Errica) Model(p schema.Protocol, points, point, split, run int, _ func() (int, error)) (int, error) {
	if point >= 0 {
		return 0, fmt.Errorf("the errica protocol chooses the point per split: --point does not apply")
	}
	if err := checkRef(p, split, run); err != nil {
		return 0, err
	}
	return split*p.Runs + run, nil
}
