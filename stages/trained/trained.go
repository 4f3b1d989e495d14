// Package trained finds the trained model of a run in the stage cache:
// the train stage that an experiment's protocol names for a split, run
// and grid point (spn predict).
package trained

import (
	"fmt"
	"slices"
	"sort"

	"github.com/spn-project/spn/schema"
	"github.com/spn-project/spn/stages"
	"github.com/spn-project/spn/stages/cache"
	"github.com/spn-project/spn/stages/plan"
	"github.com/spn-project/spn/stages/protocol"
	"github.com/spn-project/spn/stages/selection"
)

// Query names a trained model: the experiment, split (fold) and run, and
// the grid point (−1: the evaluated winner, or the only point).
type Query struct {
	Experiment        string
	Split, Run, Point int
}

// ModelDir finds the cached train stage of experiment q.Experiment for
// split q.Split and run q.Run, at the position its protocol gives (holdout and fixed: of grid point
// q.Point, or the evaluated winner, or the only point; errica: the fold's
// final run), and returns its directory with the experiment.
func ModelDir(spec *schema.Spec, p *plan.Plan, c *cache.Cache, q Query) (string, schema.Experiment, error) {
	name, split, run, point := q.Experiment, q.Split, q.Run, q.Point
	i := slices.IndexFunc(spec.Experiments, func(e schema.Experiment) bool { return e.Name == name })
	ev := p.Evaluate[name]
	if i < 0 || ev == nil {
		names := make([]string, 0, len(p.Evaluate))
		for n := range p.Evaluate {
			names = append(names, n)
		}
		sort.Strings(names)
		return "", schema.Experiment{}, FlagError{fmt.Errorf("--experiment: no experiment %q in the spec (have %v)", name, names)}
	}
	e := spec.Experiments[i]
	proto, err := protocol.Get(e.Protocol.Kind)
	if err != nil {
		return "", schema.Experiment{}, fmt.Errorf("experiment %s: %w", name, err)
	}
	var winnerErr error
	idx, err := proto.Model(e.Protocol, len(e.Points), point, split, run, func() (int, error) {
		w, err := selection.Winner(c, selection.Stage{Kind: ev.Kind, Key: ev.Key, Name: ev.Name}, len(e.Points))
		winnerErr = err
		return w, err
	})
	if err != nil {
		err = fmt.Errorf("experiment %s (protocol %s): %w", name, e.Protocol.Kind, err)
		if winnerErr == nil {
			err = FlagError{err} // --split, --run or --point out of range
		}
		return "", schema.Experiment{}, err
	}
	if idx >= len(ev.Deps) || ev.Deps[idx].Kind != stages.KindTrain {
		return "", schema.Experiment{}, fmt.Errorf("experiment %s: the plan has no train stage at position %d", name, idx)
	}
	t := ev.Deps[idx]
	tp, ok := t.Params.(stages.TrainParams)
	if !ok || tp.Split != split || tp.Run != run {
		return "", schema.Experiment{}, fmt.Errorf("experiment %s: plan order changed: stage %q is not split %d run %d", name, t.Name, split, run)
	}
	done, err := c.Has(t.Kind, t.Key)
	if err != nil {
		return "", schema.Experiment{}, err
	}
	if d := c.Damaged(t.Kind, t.Key); d != nil {
		return "", schema.Experiment{}, fmt.Errorf("the cached model of %s is damaged, so it is not used: %v; run the spec again to retrain it", t.Name, d)
	}
	if !done {
		return "", schema.Experiment{}, fmt.Errorf("%s is not trained yet (key %s): run the spec first", t.Name, t.ShortKey())
	}
	return c.StageDir(t.Kind, t.Key), e, nil
}

// FlagError is an error caused by a query's value (a flag of spn
// predict): the experiment is not in the spec, or the split, run or point
// is out of range.
type FlagError struct{ error }

// Unwrap returns the error.
func (e FlagError) Unwrap() error { return e.error }
