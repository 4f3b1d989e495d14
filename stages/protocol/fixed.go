package protocol

import (
	"fmt"

	"github.com/spn-project/spn/schema"
	"github.com/spn-project/spn/stages"
	"github.com/spn-project/spn/stages/selection"
)

// Fixed is the "fixed" protocol: the dataset's own train/validation/test
// split (its only split, e.g. QM9's GNN-FiLM files or OGB's scaffold
// split), Runs reruns per grid point with different seeds, each model
// taken at its best validation epoch (training.selection) and scored on
// the test set. As GNN-FiLM (Brockschmidt 2020) and the SP-MPNN paper's
// QM9 experiments: 5 reruns, mean ± std over the runs (tables set
// std_over: "runs").
//
// It is Holdout restricted to one split: the layout is Points×Runs train
// stages of role holdout on split 0, the reported point is the one with
// the best mean validation score, and the result holds one split score
// (the mean over runs) and every run's test score. Splits must be 1 (the
// schema fixes it).
type Fixed struct{}

// Kind returns "fixed".
func (Fixed) Kind() string { return KindFixed }

func (Fixed) check(p schema.Protocol) error {
	if p.Splits != 1 {
		return fmt.Errorf("protocol.splits: the fixed protocol uses the dataset's own split, splits must be 1, got %d", p.Splits)
	}
	return nil
}

// Layout implements Protocol.
func (f Fixed) Layout(p schema.Protocol, points int) (Layout, error) {
	if err := f.check(p); err != nil {
		return Layout{}, err
	}
	return Holdout{}.Layout(p, points)
}

// Evaluate implements Protocol.
func (f Fixed) Evaluate(p schema.Protocol, points int, runs []selection.TrainRun) (*stages.EvalResult, error) {
	if err := f.check(p); err != nil {
		return nil, err
	}
	return Holdout{}.Evaluate(p, points, runs)
}

// Model implements Protocol.
func (f Fixed) Model(p schema.Protocol, points, point, split, run int, winner func() (int, error)) (int, error) {
	if err := f.check(p); err != nil {
		return 0, err
	}
	return Holdout{}.Model(p, points, point, split, run, winner)
}
