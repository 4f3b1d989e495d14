package plan

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/spn-project/spn/schema"
	"github.com/spn-project/spn/stages"
	"github.com/spn-project/spn/stages/cache"
)

// TestTableNeeds: the experiments without a cached evaluation (of the
// tables) or a cached figure input (of the figures) are listed sorted and
// once each; the tables and figures still to render are counted.
func TestTableNeeds(t *testing.T) {
	node := func(key string, st Status, deps ...*Node) *Node { return &Node{Key: key, Status: st, Deps: deps} }
	spec := &schema.Spec{
		Tables:  []schema.Table{{Name: "t1"}, {Name: "t2"}},
		Figures: []schema.Figure{{Name: "f1", Experiment: "a"}, {Name: "f2", Experiment: "d"}, {Name: "f3", Experiment: "e"}},
	}
	for _, tc := range []struct {
		name        string
		evals       map[string]Status
		tabulate    [2]Status
		figures     [3]*Node
		wantMissing []string
		wantPending int
	}{
		{"all done", map[string]Status{"a": Cached, "b": Cached, "c": Cached}, [2]Status{Cached, Cached},
			[3]*Node{node("f1", Cached), node("f2", Cached), node("f3", Cached)}, nil, 0},
		{"results there, renders pending", map[string]Status{"a": Cached, "b": Cached, "c": Cached}, [2]Status{ToRun, Cached},
			[3]*Node{node("f1", ToRun, node("x", Cached)), node("f2", Cached), node("f3", Cached)}, nil, 2},
		{"evaluations missing, each once, sorted", map[string]Status{"a": Cached, "b": ToRun, "c": ToRun}, [2]Status{ToRun, ToRun},
			[3]*Node{node("f1", Cached), node("f2", Cached), node("f3", Cached)}, []string{"b", "c"}, 2},
		{"figure inputs missing", map[string]Status{"a": Cached, "b": Cached, "c": ToRun}, [2]Status{Cached, Cached},
			[3]*Node{node("f1", ToRun, node("x", Cached), node("y", ToRun)), node("f2", ToRun, node("z", ToRun)), node("f3", ToRun, node("w", Cached))},
			[]string{"a", "c", "d"}, 3},
	} {
		p := &Plan{
			Evaluate:         map[string]*Node{},
			Tabulate:         map[string]*Node{"t1": node("t1", tc.tabulate[0]), "t2": node("t2", tc.tabulate[1])},
			TableExperiments: map[string][]string{"t1": {"c", "a"}, "t2": {"b", "c"}},
			Figure:           map[string]*Node{"f1": tc.figures[0], "f2": tc.figures[1], "f3": tc.figures[2]},
		}
		for e, st := range tc.evals {
			p.Evaluate[e] = node("eval-"+e, st)
		}
		missing, pending := p.TableNeeds(spec)
		if !slices.Equal(missing, tc.wantMissing) || pending != tc.wantPending {
			t.Errorf("%s: missing %v, pending %d; want %v, %d", tc.name, missing, pending, tc.wantMissing, tc.wantPending)
		}
	}
}

// TestTableResults: an experiment's result is read from its evaluate
// stage in the cache; one whose stage is absent or whose result does not
// read is missing.
func TestTableResults(t *testing.T) {
	c, err := cache.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	put := func(key, result string) {
		tmp, err := c.NewTemp(key)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(tmp, stages.FileResult), []byte(result), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := c.Commit(tmp, &cache.Record{Key: key, Kind: stages.KindEvaluate, Name: "evaluate " + key}); err != nil {
			t.Fatal(err)
		}
	}
	put("ka", `{"metric": "accuracy", "winner": 0, "split_scores": [0.5, 0.75]}`)
	put("kc", `{"metric": "accuracy", "winner": 0, "split_scores": []}`)
	p := &Plan{
		Evaluate: map[string]*Node{
			"a": {Key: "ka", Kind: stages.KindEvaluate},
			"b": {Key: "kb", Kind: stages.KindEvaluate},
			"c": {Key: "kc", Kind: stages.KindEvaluate},
		},
		TableExperiments: map[string][]string{"t": {"c", "b", "a"}, "none": nil},
	}
	for _, tc := range []struct {
		table       string
		wantResults []string
		wantMissing []string
	}{
		{"t", []string{"a"}, []string{"b", "c"}},
		{"none", nil, nil},
	} {
		results, missing := p.TableResults(tc.table, c)
		var got []string
		for e := range results {
			got = append(got, e)
		}
		slices.Sort(got)
		if !slices.Equal(got, tc.wantResults) || !slices.Equal(missing, tc.wantMissing) {
			t.Errorf("%s: results of %v, missing %v; want %v, %v", tc.table, got, missing, tc.wantResults, tc.wantMissing)
		}
	}
	if r, _ := p.TableResults("t", c); r["a"] == nil || r["a"].Metric != "accuracy" || !slices.Equal(r["a"].SplitScores, []float64{0.5, 0.75}) {
		t.Errorf("result of a: %+v", r["a"])
	}
}
