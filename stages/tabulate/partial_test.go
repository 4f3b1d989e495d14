package tabulate

import (
	"strings"
	"testing"

	"github.com/spn-project/spn/schema"
	"github.com/spn-project/spn/stages"
)

func TestPartial(t *testing.T) {
	mean := 50.0
	tb := schema.Table{Name: "t", Style: StyleResults, Scale: 100, Digits: 1, Formats: []string{"markdown", "csv"},
		Columns: []schema.Column{{Key: "a", Header: "A"}, {Key: "b", Header: "B"}},
		Rows: []schema.Row{
			{Label: "X", Cells: map[string]schema.Cell{"a": {Experiment: "ok"}, "b": {Experiment: "failed"}}},
			{Label: "Y", Cells: map[string]schema.Cell{"a": {Mean: &mean, Source: "paper"}, "b": {Experiment: "failed"}}},
		}}
	res := map[string]*stages.EvalResult{"ok": {Metric: "accuracy", SplitScores: []float64{0.5, 0.7}, RunScores: []float64{0.5, 0.7}}}
	files, err := Render(Partial(tb, []string{"failed"}, Failed), res)
	if err != nil {
		t.Fatal(err)
	}
	md := string(files["t.md"])
	for _, want := range []string{"60.0 ± 10.0", "--", "Incomplete: cells shown as -- are experiments that did not finish (failed)"} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
	if len(tb.Rows[0].Cells) != 2 {
		t.Errorf("Partial changed its argument")
	}
}
