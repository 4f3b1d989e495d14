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

// TestFigures: a diameters figure reads the experiment's generate stage, a
// hop_weights figure its evaluated train stages, with the first and last
// layer by default.
func TestFigures(t *testing.T) {
	pr := schema.Protocol{Kind: "fixed", Splits: 1, Runs: 3, SelectOn: "val_loss", Metric: "film_error"}
	ds := schema.Dataset{Kind: "qm9", Targets: []string{"U0"}, Source: "valid-as-train", TrainSize: 90, Limit: 100, KMax: 5}
	pt := point(3, 0.001)
	pt.Model.Layers = 8
	s := &schema.Spec{Name: "q", Device: "cpu", Mode: "smoke",
		Experiments: []schema.Experiment{{Name: "u0", Dataset: ds, Protocol: pr, Points: []schema.Point{pt}}},
		Figures: []schema.Figure{
			{Name: "d", Kind: schema.FigureDiameters, Experiment: "u0", Formats: []string{"png"}, Width: 12, Height: 7},
			{Name: "a", Kind: schema.FigureHopWeights, Experiment: "u0", Formats: []string{"png"}, Width: 12, Height: 7},
		}}
	reg := testRegistry(nil)
	reg = stages.NewRegistry(append(kindsOf(reg), testKind{"figure", "1"})...)
	p := mustBuild(t, s, reg)
	d, a := p.Figure["d"], p.Figure["a"]
	if len(d.Deps) != 1 || d.Deps[0].Kind != stages.KindGenerate {
		t.Errorf("diameters figure inputs %v", d.Deps)
	}
	if len(a.Deps) != 3 || a.Deps[0] != p.Evaluate["u0"].Deps[0] {
		t.Errorf("hop_weights figure has %d inputs, want the 3 train stages", len(a.Deps))
	}
	if got := a.Params.(stages.FigureParams).Layers; !reflect.DeepEqual(got, []int{1, 8}) {
		t.Errorf("layers %v, want [1 8]", got)
	}
}

func kindsOf(r *stages.Registry) []stages.Kind {
	var out []stages.Kind
	for _, n := range []string{stages.KindGenerate, stages.KindPrecompute, stages.KindTrain,
		stages.KindSelect, stages.KindEvaluate, stages.KindTabulate} {
		k, _ := r.Get(n)
		out = append(out, k)
	}
	return out
}

// TestResolveLayers: a hop_weights figure shows the spec's layers, else
// the first and the last.
func TestResolveLayers(t *testing.T) {
	for _, c := range []struct {
		f      schema.Figure
		layers int
		want   []int
	}{
		{schema.Figure{}, 8, []int{1, 8}},
		{schema.Figure{}, 1, []int{1}},
		{schema.Figure{Layers: []int{2, 3}}, 8, []int{2, 3}},
	} {
		if got := resolveLayers(c.f, c.layers); !reflect.DeepEqual(got, c.want) {
			t.Errorf("resolveLayers(%v, %d) = %v, want %v", c.f.Layers, c.layers, got, c.want)
		}
	}
}
