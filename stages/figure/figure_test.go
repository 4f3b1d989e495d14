package figure

import (
	"bytes"
	"context"
	"image/png"
	"strings"
	"testing"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/schema"
	"github.com/spn-project/spn/stages"
	"github.com/spn-project/spn/stages/selection"

	"github.com/spn-project/spn/internal/testkit/golden"
)

func path(t *testing.T, n int) data.Graph {
	t.Helper()
	var e [][2]int
	for i := 1; i < n; i++ {
		e = append(e, [2]int{i - 1, i})
	}
	g, err := data.FromEdges(n, e)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func fig(kind string) schema.Figure {
	return schema.Figure{Name: "f", Kind: kind, Experiment: "e", Caption: "A caption with α & 50%.", Label: "fig:f",
		Formats: []string{"png", "svg", "csv", "tex"}, Width: 12, Height: 7}
}

// TestDiameters: paths of 3, 3 and 5 nodes and a single node have
// diameters 2, 2, 4 and 0: 25 %, 0, 50 %, 0, 25 % for diameters 0..4.
func TestDiameters(t *testing.T) {
	ds := &data.Dataset{Name: "p", Graphs: []data.Graph{path(t, 3), path(t, 3), path(t, 5), path(t, 1)}}
	f := fig(schema.FigureDiameters)
	f.Paper = map[string]any{"2": 40.0, "6": 1.0}
	d, err := Diameters(context.Background(), ds, f)
	if err != nil {
		t.Fatal(err)
	}
	got := csvString(t, d)
	want := "diameter,graphs,percent,paper_percent\n0,1,25,0\n1,0,0,0\n2,2,50,40\n3,0,0,0\n4,1,25,0\n5,0,0,0\n6,0,0,1\n"
	if got != want {
		t.Errorf("csv\n%s\nwant\n%s", got, want)
	}
	f.Paper = map[string]any{"2": []any{1.0}}
	if _, err := Diameters(context.Background(), ds, f); err == nil || !strings.Contains(err.Error(), "not a number") {
		t.Errorf("list as a diameter percentage: %v", err)
	}
}

func run(src string, best int, alphas ...[][]float64) selection.TrainRun {
	r := selection.TrainRun{Source: src, Result: stages.TrainResult{Point: schema.Point{Model: schema.Model{Kind: "spn", K: 3}}, BestEpoch: best}}
	for i, a := range alphas {
		r.Result.Epochs = append(r.Result.Epochs, stages.EpochRecord{Epoch: i + 1, Alpha: a})
	}
	return r
}

// TestHopWeights: the α of each run's selected epoch, averaged over runs
// (population std), per layer.
func TestHopWeights(t *testing.T) {
	runs := []selection.TrainRun{
		run("r0", 2, [][]float64{{9, 9, 9}, {9, 9, 9}}, [][]float64{{0.2, 0.3, 0.5}, {0.1, 0.1, 0.8}}),
		run("r1", 1, [][]float64{{0.4, 0.3, 0.3}, {0.3, 0.3, 0.4}}, [][]float64{{9, 9, 9}, {9, 9, 9}}),
	}
	f := fig(schema.FigureHopWeights)
	f.Paper = map[string]any{"2": []any{0.25, 0.25, 0.5}}
	d, err := HopWeights(runs, []int{1, 2}, f)
	if err != nil {
		t.Fatal(err)
	}
	got := csvString(t, d)
	want := "layer,hop,mean,std,runs,paper\n1,1,0.3,0.1,2,\n1,2,0.3,0,2,\n1,3,0.4,0.1,2,\n2,1,0.2,0.1,2,0.25\n2,2,0.2,0.1,2,0.25\n2,3,0.6,0.2,2,0.5\n"
	if got != want {
		t.Errorf("csv\n%s\nwant\n%s", got, want)
	}
	if _, err := HopWeights(runs, []int{3}, f); err == nil || !strings.Contains(err.Error(), "records hop weights of 2 layers, asked for layer 3") {
		t.Errorf("layer 3: %v", err)
	}
	// With N_∞ its weight is the last, hop "∞".
	unr := []selection.TrainRun{run("r0", 1, [][]float64{{0.25, 0.75}})}
	unr[0].Result.Point.Model.Unreachable = true
	if d, err := HopWeights(unr, []int{1}, fig(schema.FigureHopWeights)); err != nil {
		t.Error(err)
	} else if got, want := csvString(t, d), "layer,hop,mean,std,runs\n1,1,0.25,0,1\n1,∞,0.75,0,1\n"; got != want || d.XLabel != "hop i (the last: N_∞)" {
		t.Errorf("with N_∞: csv\n%s\nwant\n%s (x label %q)", got, want, d.XLabel)
	}
	bad := []selection.TrainRun{run("r0", 5, [][]float64{{1}})}
	if _, err := HopWeights(bad, []int{1}, f); err == nil || !strings.Contains(err.Error(), "no record of the selected epoch 5") {
		t.Errorf("missing epoch: %v", err)
	}
}

// TestRender: every format, twice the same bytes; the PNG decodes at the
// figure's size; the .tex matches its golden file.
func TestRender(t *testing.T) {
	runs := []selection.TrainRun{
		run("r0", 1, [][]float64{{0.2, 0.3, 0.5}, {0.1, 0.1, 0.8}}),
		run("r1", 1, [][]float64{{0.4, 0.3, 0.3}, {0.3, 0.3, 0.4}}),
	}
	f := fig(schema.FigureHopWeights)
	d, err := HopWeights(runs, []int{1, 2}, f)
	if err != nil {
		t.Fatal(err)
	}
	a, err := Render(d, f)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Render(d, f)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"f.png", "f.svg", "f.csv", "f.tex"} {
		if len(a[name]) == 0 || !bytes.Equal(a[name], b[name]) {
			t.Errorf("%s: empty or not byte-identical (%d and %d bytes)", name, len(a[name]), len(b[name]))
		}
	}
	img, err := png.Decode(bytes.NewReader(a["f.png"]))
	if err != nil {
		t.Fatal(err)
	}
	if w := img.Bounds().Dx(); w < 708 || w > 709 {
		t.Errorf("png width %d px, want 12 cm at %d dpi", w, DPI)
	}
	if !bytes.Contains(a["f.svg"], []byte("<svg")) {
		t.Error("svg has no <svg element")
	}
	golden.Check(t, "testdata/hop_weights.tex.golden", a["f.tex"])
	f.Formats = []string{"pdf"}
	if _, err := Render(d, f); err == nil || !strings.Contains(err.Error(), `unknown figure format "pdf"`) {
		t.Errorf("pdf: %v", err)
	}
}

func csvString(t *testing.T, d *Data) string {
	t.Helper()
	b, err := csvOf(d)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
