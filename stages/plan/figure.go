package plan

import (
	"fmt"
	"slices"

	"github.com/spn-project/spn/schema"
	"github.com/spn-project/spn/stages"
)

// figure adds the figure stage of f: it reads the experiment's generate
// stage (diameters) or its evaluated train stages (hop_weights).
func (b *builder) figure(spec *schema.Spec, f *schema.Figure) error {
	if _, dup := b.plan.Figure[f.Name]; dup {
		return fmt.Errorf("duplicate figure name %q", f.Name)
	}
	ev, ok := b.plan.Evaluate[f.Experiment]
	if !ok {
		return fmt.Errorf("experiment: unknown experiment %q", f.Experiment)
	}
	p := stages.FigureParams{Figure: *f}
	var deps []*Node
	switch f.Kind {
	case schema.FigureDiameters:
		deps = []*Node{b.gen[f.Experiment]}
	case schema.FigureHopWeights:
		i := slices.IndexFunc(spec.Experiments, func(e schema.Experiment) bool { return e.Name == f.Experiment })
		e := spec.Experiments[i]
		if len(e.Points) != 1 {
			return fmt.Errorf("experiment: a hop_weights figure needs an experiment with one grid point; %s has %d", e.Name, len(e.Points))
		}
		p.Layers = resolveLayers(*f, e.Points[0].Model.Layers)
		for _, d := range ev.Deps {
			if d.Kind == stages.KindTrain {
				deps = append(deps, d)
			}
		}
	default:
		return fmt.Errorf("kind: unknown figure kind %q", f.Kind)
	}
	n, err := b.add(stages.KindFigure, "figure "+f.Name, p, deps)
	if err != nil {
		return err
	}
	b.plan.Figure[f.Name] = n
	return nil
}

// resolveLayers returns the layers a hop_weights figure shows: f.Layers,
// or the first and the last of a model with layers layers.
func resolveLayers(f schema.Figure, layers int) []int {
	if len(f.Layers) > 0 {
		return slices.Clone(f.Layers)
	}
	if layers <= 1 {
		return []int{1}
	}
	return []int{1, layers}
}
