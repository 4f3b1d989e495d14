package tabulate

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/spn-project/spn/schema"
	"github.com/spn-project/spn/stages"

	"github.com/spn-project/spn/internal/testkit/golden"
)

func f(v float64) *float64 { return &v }

func exp(name string) schema.Cell { return schema.Cell{Experiment: name} }

func cited(mean, std float64, src string) schema.Cell {
	return schema.Cell{Mean: f(mean), Std: f(std), Source: src}
}

// results are the evaluate results the fixtures reference.
func results() map[string]*stages.EvalResult {
	r := func(xs ...float64) *stages.EvalResult {
		return &stages.EvalResult{Metric: "accuracy", Winner: 0, SplitScores: xs}
	}
	return map[string]*stages.EvalResult{
		// mean 76.62 -> 76.6, ties with DGCNN's cited 76.6.
		"spn5_dd":   r(0.76, 0.77, 0.7686),
		"spn5_nci1": r(0.80, 0.82, 0.78, 0.84),
		// mean 76.58 -> 76.6: a third way tie in D&D.
		"spn10_dd":       r(0.7658),
		"spn10_nci1":     r(0.79, 0.81),
		"spn10_proteins": r(0.70, 0.74),
		"prox_k1_h1":     r(1, 1, 1),
		"prox_k1_h3":     r(0.5, 0.52, 0.48),
		"prox_k5_h3":     r(0.99, 0.97, 0.98),
	}
}

// resultsTable has cited rows from two sources, a three-way bold tie, a
// missing cell, a column with a single value, a rule, and labels that need
// LaTeX escaping (or are verbatim because they contain $).
func resultsTable() schema.Table {
	return schema.Table{
		Name: "tu_results", Title: "Graph classification accuracy (%)", Caption: "Mean ± std over folds; 50% of runs & more.",
		Label: "tab:tu", Style: StyleResults, Formats: []string{"latex", "markdown", "csv"},
		Scale: 100, Digits: 1, DDof: 0, HigherIsBetter: true,
		Columns: []schema.Column{{Key: "dd", Header: "D&D"}, {Key: "nci1", Header: "NCI1"}, {Key: "proteins", Header: "PROTEINS_full"}, {Key: "qm", Header: "$\\#$ QM"}},
		Rows: []schema.Row{
			{Label: "GIN", Cells: map[string]schema.Cell{"dd": cited(75.3, 2.9, "Errica et al. (2020)"), "nci1": cited(80.0, 1.4, "Errica et al. (2020)"), "proteins": cited(73.3, 4.0, "Errica et al. (2020)")}},
			{Label: "DGCNN", Cells: map[string]schema.Cell{"dd": cited(76.6, 4.3, "Errica et al. (2020)"), "proteins": {Mean: f(72.9)}}},
			{Label: "Baseline", Cells: map[string]schema.Cell{"nci1": cited(69.8, 2.2, "Xu et al. (2019)")}},
			{Label: "SPN ($k=5$)", Line: true, Cells: map[string]schema.Cell{"dd": exp("spn5_dd"), "nci1": exp("spn5_nci1")}},
			{Label: "SPN_10 #1", Cells: map[string]schema.Cell{"dd": exp("spn10_dd"), "nci1": exp("spn10_nci1"), "proteins": exp("spn10_proteins"), "qm": cited(1.5, 0.5, "")}},
		},
	}
}

// compareTable is a paper-vs-reproduced table.
func compareTable() schema.Table {
	return schema.Table{
		Name: "prox_compare", Title: "h-Proximity: paper vs reproduced", Style: StyleCompare,
		Formats: []string{"latex", "markdown", "csv"}, Scale: 100, Digits: 1, DDof: 1, HigherIsBetter: true,
		Columns: []schema.Column{{Key: "h1", Header: "$h=1$"}, {Key: "h3", Header: "h_3"}},
		Rows: []schema.Row{
			{Label: "SPN ($k=1$)", Cells: map[string]schema.Cell{
				"h1": {Experiment: "prox_k1_h1", PaperMean: f(100), PaperStd: f(0)},
				"h3": {Experiment: "prox_k1_h3", PaperMean: f(51.7), PaperStd: f(1.3)},
			}},
			{Label: "SPN ($k=5$)", Line: true, Cells: map[string]schema.Cell{
				// ours 98.0 ± 1.0, paper 96.8 ± 1.2: diff +1.2, exactly within.
				"h3": {Experiment: "prox_k5_h3", PaperMean: f(96.8), PaperStd: f(1.2)},
			}},
			{Label: "GIN", Cells: map[string]schema.Cell{
				"h1": {PaperMean: f(99.8)},
				"h3": {Mean: f(52.0), Std: f(0.9), Source: "Abboud et al. (2022)", PaperMean: f(50.4), PaperStd: f(0.9)},
			}},
		},
	}
}

func TestRenderGolden(t *testing.T) {
	for _, tab := range []schema.Table{resultsTable(), compareTable()} {
		t.Run(tab.Name, func(t *testing.T) {
			files, err := Render(tab, results())
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for n := range files {
				names = append(names, n)
			}
			sort.Strings(names)
			want := []string{tab.Name + ".csv", tab.Name + ".json", tab.Name + ".md", tab.Name + ".tex"}
			if strings.Join(names, " ") != strings.Join(want, " ") {
				t.Fatalf("files %v, want %v", names, want)
			}
			for _, n := range names {
				golden.Check(t, filepath.Join("testdata", n+".golden"), files[n])
			}
			// Same input, same bytes (cells are maps; nothing may leak their order).
			for range 5 {
				again, err := Render(tab, results())
				if err != nil {
					t.Fatal(err)
				}
				for _, n := range names {
					if !bytes.Equal(again[n], files[n]) {
						t.Fatalf("%s differs between two renders", n)
					}
				}
			}
		})
	}
}

func TestFormatsSubset(t *testing.T) {
	tab := resultsTable()
	tab.Formats = []string{"markdown"}
	files, err := Render(tab, results())
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 2 || files["tu_results.md"] == nil || files["tu_results.json"] == nil {
		t.Errorf("got %d files, want only tu_results.md and tu_results.json", len(files))
	}
}

func TestStdDDof(t *testing.T) {
	// Scores 0.70, 0.80, 0.90 at scale 100: mean 80; squared deviations sum
	// to 200, so std is sqrt(200/3) = 8.16497 (ddof 0) and sqrt(200/2) = 10
	// (ddof 1). A single score has std 0 with ddof 0 and none with ddof 1.
	tests := []struct {
		ddof   int
		scores []float64
		want   string
	}{
		{0, []float64{0.70, 0.80, 0.90}, "80.00 ± 8.16"},
		{1, []float64{0.70, 0.80, 0.90}, "80.00 ± 10.00"},
		{0, []float64{0.5}, "50.00 ± 0.00"},
		{1, []float64{0.5}, "50.00"},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprint("ddof", tc.ddof, "n", len(tc.scores)), func(t *testing.T) {
			tab := schema.Table{Name: "t", Style: StyleResults, Scale: 100, Digits: 2, DDof: tc.ddof,
				Columns: []schema.Column{{Key: "c", Header: "C"}},
				Rows:    []schema.Row{{Label: "r", Cells: map[string]schema.Cell{"c": exp("e")}}}}
			g, err := build(tab, map[string]*stages.EvalResult{"e": {SplitScores: tc.scores}})
			if err != nil {
				t.Fatal(err)
			}
			if got := g.matrix(func(s string) string { return s }).Rows[0].Cells[1].Text; got != tc.want {
				t.Errorf("cell %q, want %q", got, tc.want)
			}
		})
	}
	g, err := build(schema.Table{Name: "t", Style: StyleResults, Scale: 100, Digits: 1, DDof: 0,
		Columns: []schema.Column{{Key: "c"}}, Rows: []schema.Row{{Cells: map[string]schema.Cell{"c": exp("e")}}}},
		map[string]*stages.EvalResult{"e": {SplitScores: []float64{0.70, 0.80, 0.90}}})
	if err != nil {
		t.Fatal(err)
	}
	if e := g.cells[0][0]; math.Abs(e.ours.std-math.Sqrt(200.0/3)) > 1e-9 || math.Abs(e.ours.mean-80) > 1e-9 || len(e.scores) != 3 {
		t.Errorf("mean %v std %v n %d, want 80, %v, 3", e.ours.mean, e.ours.std, len(e.scores), math.Sqrt(200.0/3))
	}
}

func TestStdOverRuns(t *testing.T) {
	// One split of two runs: over splits the std is 0 (one score), over
	// runs it is the population std of 0.70 and 0.90, i.e. 10.
	res := map[string]*stages.EvalResult{"e": {SplitScores: []float64{0.80}, RunScores: []float64{0.70, 0.90}}}
	for _, tc := range []struct{ over, want string }{{"splits", "80.0 ± 0.0"}, {"runs", "80.0 ± 10.0"}} {
		tab := schema.Table{Name: "t", Style: StyleResults, Scale: 100, Digits: 1, StdOver: tc.over,
			Columns: []schema.Column{{Key: "c", Header: "C"}},
			Rows:    []schema.Row{{Label: "r", Cells: map[string]schema.Cell{"c": exp("e")}}}}
		g, err := build(tab, res)
		if err != nil {
			t.Fatal(err)
		}
		if got := g.matrix(func(s string) string { return s }).Rows[0].Cells[1].Text; got != tc.want {
			t.Errorf("std_over %s: cell %q, want %q", tc.over, got, tc.want)
		}
	}
}

func TestBestLowerAndTies(t *testing.T) {
	tab := schema.Table{Name: "t", Style: StyleResults, Scale: 1, Digits: 2, HigherIsBetter: false,
		Columns: []schema.Column{{Key: "mae"}},
		Rows: []schema.Row{
			{Label: "a", Cells: map[string]schema.Cell{"mae": {Mean: f(0.124)}}},
			{Label: "b", Cells: map[string]schema.Cell{"mae": {Mean: f(0.119)}}},   // 0.12: tie
			{Label: "c", Cells: map[string]schema.Cell{"mae": {Mean: f(0.1249)}}},  // 0.12: tie
			{Label: "d", Cells: map[string]schema.Cell{"mae": {Mean: f(0.126)}}},   // 0.13
			{Label: "e", Cells: map[string]schema.Cell{"mae": {Mean: f(-0.0001)}}}, // prints 0.00 ... and wins
		},
	}
	g, err := build(tab, nil)
	if err != nil {
		t.Fatal(err)
	}
	var best []string
	for i, r := range tab.Rows {
		if g.cells[i][0].best {
			best = append(best, r.Label)
		}
	}
	if strings.Join(best, ",") != "e" {
		t.Errorf("best %v, want [e]", best)
	}
	if got := g.num(-0.0001); got != "0.00" {
		t.Errorf("num(-0.0001) = %q, want 0.00", got)
	}
	tab.Rows = tab.Rows[:4]
	if g, err = build(tab, nil); err != nil {
		t.Fatal(err)
	}
	best = best[:0]
	for i, r := range tab.Rows {
		if g.cells[i][0].best {
			best = append(best, r.Label)
		}
	}
	if strings.Join(best, ",") != "a,b,c" {
		t.Errorf("best %v, want the displayed tie [a b c]", best)
	}
}

func TestRenderErrors(t *testing.T) {
	mod := func(fn func(*schema.Table)) schema.Table {
		tab := resultsTable()
		fn(&tab)
		return tab
	}
	tests := []struct {
		name string
		tab  schema.Table
		res  map[string]*stages.EvalResult
	}{
		{"missing result", resultsTable(), func() map[string]*stages.EvalResult {
			r := results()
			delete(r, "spn10_nci1")
			return r
		}()},
		{"unknown column", mod(func(t *schema.Table) { t.Rows[1].Cells["zinc"] = exp("spn5_dd") }), results()},
		{"experiment and cited", mod(func(t *schema.Table) { t.Rows[0].Cells["qm"] = schema.Cell{Experiment: "spn5_dd", Mean: f(1)} }), results()},
		{"std without mean", mod(func(t *schema.Table) { t.Rows[0].Cells["qm"] = schema.Cell{Std: f(1)} }), results()},
		{"NaN cited", mod(func(t *schema.Table) { t.Rows[0].Cells["qm"] = schema.Cell{Mean: f(math.NaN())} }), results()},
		{"NaN split score", resultsTable(), func() map[string]*stages.EvalResult {
			r := results()
			r["spn5_dd"] = &stages.EvalResult{SplitScores: []float64{0.5, math.NaN()}}
			return r
		}()},
		{"bad style", mod(func(t *schema.Table) { t.Style = "fancy" }), results()},
		{"bad format", mod(func(t *schema.Table) { t.Formats = []string{"latex", "html"} }), results()},
		{"zero scale", mod(func(t *schema.Table) { t.Scale = 0 }), results()},
		{"bad digits", mod(func(t *schema.Table) { t.Digits = -1 }), results()},
		{"duplicate column", mod(func(t *schema.Table) { t.Columns[1].Key = "dd" }), results()},
		{"name with slash", mod(func(t *schema.Table) { t.Name = "../x" }), results()},
		{"name clashes", mod(func(t *schema.Table) { t.Name = "record" }), results()},
	}
	var b bytes.Buffer
	for _, tc := range tests {
		_, err := Render(tc.tab, tc.res)
		if err == nil {
			t.Errorf("%s: no error", tc.name)
			continue
		}
		fmt.Fprintf(&b, "%s: %v\n", tc.name, err)
	}
	golden.Check(t, "testdata/errors.golden", b.Bytes())
}

// stageDir writes the evaluate results of names into dirs and returns the
// inputs in that order.
func evalInputs(t *testing.T, names []string, res map[string]*stages.EvalResult) []stages.Input {
	t.Helper()
	var in []stages.Input
	for _, n := range names {
		dir := filepath.Join(t.TempDir(), n)
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(res[n])
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, stages.FileResult), b, 0o644); err != nil {
			t.Fatal(err)
		}
		in = append(in, stages.Input{Kind: stages.KindEvaluate, Key: n, Dir: dir})
	}
	return in
}

func tabulateJob(t *testing.T, tab schema.Table, names []string, in []stages.Input) *stages.Job {
	t.Helper()
	raw, err := json.Marshal(stages.TabulateParams{Table: tab, ExperimentNames: names})
	if err != nil {
		t.Fatal(err)
	}
	return &stages.Job{Name: "tabulate-test", Params: raw, Inputs: in, Dir: t.TempDir()}
}

func TestRunAndPrintTerminal(t *testing.T) {
	var out bytes.Buffer
	for _, tab := range []schema.Table{resultsTable(), compareTable()} {
		res := results()
		names := make([]string, 0, len(res))
		for n := range res {
			names = append(names, n)
		}
		sort.Strings(names)
		j := tabulateJob(t, tab, names, evalInputs(t, names, res))
		if err := (Kind{}).Run(context.Background(), j); err != nil {
			t.Fatal(err)
		}
		want, err := Render(tab, res)
		if err != nil {
			t.Fatal(err)
		}
		for n, b := range want {
			got, err := os.ReadFile(filepath.Join(j.Dir, n))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, b) {
				t.Errorf("%s written by Run differs from Render's", n)
			}
		}
		// The executor's record.json must be skipped.
		if err := os.WriteFile(filepath.Join(j.Dir, stages.FileRecord), []byte(`{"key": "x"}`), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := PrintTerminal(&out, j.Dir); err != nil {
			t.Fatal(err)
		}
		out.WriteString("\n")
	}
	golden.Check(t, "testdata/terminal.golden", out.Bytes())
}

func TestRunErrors(t *testing.T) {
	res := results()
	names := []string{"spn10_dd", "spn10_nci1", "spn10_proteins", "spn5_dd", "spn5_nci1"}
	in := evalInputs(t, names, res)
	tests := []struct {
		name  string
		names []string
		in    []stages.Input
		want  string
	}{
		{"fewer inputs than names", names, in[:4], "got 4 evaluate inputs for 5 experiments"},
		{"experiment not provided", names[:4], in[:4], `row 3 ("SPN ($k=5$)"), column "nci1": experiment "spn5_nci1" has no result`},
		{"duplicate name", []string{"spn10_dd", "spn10_dd"}, in[:2], `experiment "spn10_dd" listed twice`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := (Kind{}).Run(context.Background(), tabulateJob(t, resultsTable(), tc.names, tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
	// A corrupted result.json is an error naming the file and position.
	bad := evalInputs(t, names, res)
	if err := os.WriteFile(filepath.Join(bad[2].Dir, stages.FileResult), []byte("{\"split_scores\": [0.5, 0.6"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := (Kind{}).Run(context.Background(), tabulateJob(t, resultsTable(), names, bad))
	if err == nil || !strings.Contains(err.Error(), `experiment "spn10_proteins"`) || !strings.Contains(err.Error(), "unexpected end of JSON input") {
		t.Errorf("corrupted result: error %v", err)
	}
}

func TestPrintTerminalErrors(t *testing.T) {
	dir := t.TempDir()
	if err := PrintTerminal(&bytes.Buffer{}, dir); err == nil || !strings.Contains(err.Error(), "no rendered table") {
		t.Errorf("empty dir: error %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "t.json"), []byte(`{"spn_table": 1, "name": "t", "header": ["a"], "rows": [{"cells": [`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := PrintTerminal(&bytes.Buffer{}, dir); err == nil || !strings.Contains(err.Error(), "t.json:1:67: corrupted JSON: unexpected end of JSON input") {
		t.Errorf("corrupted table: error %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "t.json"), []byte(`{"spn_table": 1, "name": "t", "header": ["a", "b"], "rows": [{"cells": [{"text": "x"}]}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := PrintTerminal(&bytes.Buffer{}, dir); err == nil || !strings.Contains(err.Error(), "row 0 has 1 cells, header has 2") {
		t.Errorf("ragged table: error %v", err)
	}
}

func TestRunWarnsOnDirection(t *testing.T) {
	res := map[string]*stages.EvalResult{"qm9": {Metric: "mae", SplitScores: []float64{0.1, 0.2}}}
	tab := schema.Table{Name: "qm9", Style: StyleResults, Scale: 1, Digits: 2, HigherIsBetter: true,
		Columns: []schema.Column{{Key: "mu", Header: "mu"}},
		Rows:    []schema.Row{{Label: "SPN", Cells: map[string]schema.Cell{"mu": exp("qm9")}}}}
	for _, higher := range []bool{true, false} {
		tab.HigherIsBetter = higher
		var logs bytes.Buffer
		j := tabulateJob(t, tab, []string{"qm9"}, evalInputs(t, []string{"qm9"}, res))
		j.Log = hclog.New(&hclog.LoggerOptions{Output: &logs})
		if err := (Kind{}).Run(context.Background(), j); err != nil {
			t.Fatal(err)
		}
		if warned := strings.Contains(logs.String(), "direction opposite"); warned != higher {
			t.Errorf("higher_is_better=%v with metric mae: warned=%v, logs %q", higher, warned, logs.String())
		}
	}
}
