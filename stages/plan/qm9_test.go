package plan

import (
	"reflect"
	"testing"

	"github.com/spn-project/spn/schema"
	"github.com/spn-project/spn/stages"
)

// TestQM9Targets: one model per property shares the generated dataset and
// its hop sets; each train stage carries its property's index and, for
// film_error, its chemical-accuracy factor.
func TestQM9Targets(t *testing.T) {
	ds := func(target string) schema.Dataset {
		return schema.Dataset{Kind: "qm9", Targets: []string{target}, Source: "valid-as-train", TrainSize: 90, Limit: 100, KMax: 5}
	}
	pr := schema.Protocol{Kind: "fixed", Splits: 1, Runs: 2, SelectOn: "val_loss", Metric: "film_error"}
	s := &schema.Spec{Name: "q", Device: "cpu", Mode: "smoke", Experiments: []schema.Experiment{
		{Name: "u0", Dataset: ds("U0"), Protocol: pr, Seeds: []int64{0}, Points: []schema.Point{point(3, 0.001)}},
		{Name: "mu", Dataset: ds("mu"), Protocol: pr, Seeds: []int64{0}, Points: []schema.Point{point(3, 0.001)}},
	}}
	p := mustBuild(t, s, testRegistry(nil))
	if g, pre := countKind(p, stages.KindGenerate), countKind(p, stages.KindPrecompute); g != 1 || pre != 1 {
		t.Fatalf("%d generate and %d precompute stages, want 1 and 1", g, pre)
	}
	for name, want := range map[string]struct {
		idx    []int
		factor []float64
	}{"u0": {[]int{7}, []float64{0.004165489}}, "mu": {[]int{0}, []float64{0.066513725}}} {
		for _, d := range p.Evaluate[name].Deps {
			tp := d.Params.(stages.TrainParams)
			if !reflect.DeepEqual(tp.Targets, want.idx) || !reflect.DeepEqual(tp.Factors, want.factor) {
				t.Errorf("%s: targets %v factors %v, want %v %v", name, tp.Targets, tp.Factors, want.idx, want.factor)
			}
		}
	}
	gen := p.Nodes[0].Params.(stages.GenerateParams)
	if gen.Dataset.Targets != nil || gen.Dataset.Source != "valid-as-train" || gen.Dataset.Limit != 100 {
		t.Errorf("generate parameters %+v", gen.Dataset)
	}
	s.Experiments[0].Dataset = schema.Dataset{Kind: "tu", Name: "DD", KMax: 5}
	if _, err := Build(s, testRegistry(nil)); err == nil {
		t.Error("film_error on a TU dataset: no error")
	}
}
