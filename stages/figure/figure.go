// Package figure implements the "figure" stage kind: it renders a spec's
// figure (schema.Figure) from cached stages into PNG and SVG (through
// gonum.org/v1/plot), the plotted numbers as CSV, and a pgfplots picture
// of the same numbers as .tex.
//
// Kinds: "diameters" reads the generate stage of the experiment's dataset
// and plots the percentage of graphs per diameter; "hop_weights" reads the
// experiment's evaluated train stages and plots, per chosen layer, the
// mean ± std over the runs of the learned hop weights α_1..α_k at each
// run's selected epoch.
//
// The outputs are byte-identical from run to run: the numbers come from
// the cache, the text is formatted with fixed precision, and the PNG and
// SVG encoders of gonum/plot are deterministic for the same input and the
// same embedded fonts (Liberation, compiled into the binary).
package figure

import (
	"context"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/data/sp"
	"github.com/spn-project/spn/schema"
	"github.com/spn-project/spn/stages"
	"github.com/spn-project/spn/stages/selection"
)

// Kind is the figure stage kind.
type Kind struct{}

// Name returns "figure".
func (Kind) Name() string { return stages.KindFigure }

// Version returns the kind's version.
func (Kind) Version() string { return "2" }

// Run implements stages.Kind.
func (Kind) Run(ctx context.Context, job *stages.Job) error {
	var p stages.FigureParams
	if err := job.Decode(&p); err != nil {
		return err
	}
	var fig *Data
	var err error
	switch p.Figure.Kind {
	case schema.FigureDiameters:
		gen := job.InputsOf(stages.KindGenerate)
		if len(gen) != 1 {
			return fmt.Errorf("figure %s: need one generate input, have %d", p.Figure.Name, len(gen))
		}
		ds, rerr := data.ReadDatasetFile(filepath.Join(gen[0].Dir, stages.FileDataset))
		if rerr != nil {
			return fmt.Errorf("figure %s: %w", p.Figure.Name, rerr)
		}
		fig, err = Diameters(ctx, ds, p.Figure)
	case schema.FigureHopWeights:
		runs, rerr := selection.ReadTrainRuns(job.InputsOf(stages.KindTrain))
		if rerr != nil {
			return fmt.Errorf("figure %s: %w", p.Figure.Name, rerr)
		}
		fig, err = HopWeights(runs, p.Layers, p.Figure)
	default:
		return fmt.Errorf("figure %s: unknown kind %q (want %q or %q)", p.Figure.Name, p.Figure.Kind, schema.FigureDiameters, schema.FigureHopWeights)
	}
	if err != nil {
		return fmt.Errorf("figure %s: %w", p.Figure.Name, err)
	}
	files, err := Render(fig, p.Figure)
	if err != nil {
		return fmt.Errorf("figure %s: %w", p.Figure.Name, err)
	}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		if err := os.WriteFile(filepath.Join(job.Dir, name), files[name], 0o644); err != nil {
			return fmt.Errorf("figure %s: writing %s: %w", p.Figure.Name, name, err)
		}
	}
	return nil
}

// Series is one plotted series: Y[i] ± Err[i] at X[i].
type Series struct {
	Name string
	X    []float64
	Y    []float64
	// Err is the standard deviation per point, or nil.
	Err []float64
}

// Data is what a figure plots: bar groups of series over common x
// positions, with axis labels, and the CSV columns.
type Data struct {
	XLabel, YLabel string
	// Panels are the sub-plots side by side (one per layer for
	// hop_weights, one for diameters); each holds its series.
	Panels []Panel
	// CSV is the table of numbers written as NAME.csv (first row: header).
	CSV [][]string
}

// Panel is one sub-plot.
type Panel struct {
	Title  string
	Series []Series
}

// Diameters computes the percentage of the graphs of ds per diameter
// (the largest distance within a component), with the paper's values of
// f.Paper beside them when given.
func Diameters(ctx context.Context, ds *data.Dataset, f schema.Figure) (*Data, error) {
	if len(ds.Graphs) == 0 {
		return nil, fmt.Errorf("dataset %q has no graphs", ds.Name)
	}
	var counts []int
	for i := range ds.Graphs {
		if i%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		st, err := sp.Stats(ctx, &ds.Graphs[i])
		if err != nil {
			return nil, fmt.Errorf("graph %d: %w", i, err)
		}
		for len(counts) <= st.Diameter {
			counts = append(counts, 0)
		}
		counts[st.Diameter]++
	}
	paper := map[int]float64{}
	for _, k := range slices.Sorted(maps.Keys(f.Paper)) { // the first bad key, the same every time
		v := f.Paper[k]
		d, err := strconv.Atoi(k)
		if err != nil {
			return nil, fmt.Errorf("paper key %q is not a diameter", k)
		}
		x, ok := v.(float64)
		if !ok {
			return nil, fmt.Errorf("paper value of diameter %d is not a number", d)
		}
		paper[d] = x
	}
	hi := len(counts) - 1
	for d := range paper {
		hi = max(hi, d)
	}
	lo := 0
	for lo < len(counts) && counts[lo] == 0 && paper[lo] == 0 {
		lo++
	}
	ours := Series{Name: "ours"}
	ref := Series{Name: "paper"}
	out := &Data{XLabel: "diameter", YLabel: "graphs (%)"}
	header := []string{"diameter", "graphs", "percent"}
	if len(paper) > 0 {
		header = append(header, "paper_percent")
	}
	out.CSV = append(out.CSV, header)
	n := float64(len(ds.Graphs))
	for d := lo; d <= hi; d++ {
		c := 0
		if d < len(counts) {
			c = counts[d]
		}
		pct := 100 * float64(c) / n
		ours.X, ours.Y = append(ours.X, float64(d)), append(ours.Y, pct)
		row := []string{strconv.Itoa(d), strconv.Itoa(c), num(pct)}
		if len(paper) > 0 {
			ref.X, ref.Y = append(ref.X, float64(d)), append(ref.Y, paper[d])
			row = append(row, num(paper[d]))
		}
		out.CSV = append(out.CSV, row)
	}
	p := Panel{Title: fmt.Sprintf("%d graphs", len(ds.Graphs)), Series: []Series{ours}}
	if len(paper) > 0 {
		p.Series = append(p.Series, ref)
	}
	out.Panels = []Panel{p}
	return out, nil
}

// hopAxisUnreachable is the x-axis label of a hop-weights figure of a
// model that reads N_∞.
const hopAxisUnreachable = "hop i (the last: N_∞)"

// HopWeights averages, over runs, the hop weights α_1..α_k of each of
// layers (1-based) at each run's selected epoch (TrainResult.BestEpoch),
// with the paper's values of f.Paper (per layer) beside them. A model
// that reads N_∞ (model.unreachable) has α_∞ last: its hop is "∞" in
// the CSV, and k+1 on the plot's axis.
func HopWeights(runs []selection.TrainRun, layers []int, f schema.Figure) (*Data, error) {
	if len(runs) == 0 {
		return nil, fmt.Errorf("no train runs")
	}
	if err := selection.SamePoint(runs); err != nil {
		return nil, err
	}
	unreachable := runs[0].Result.Point.Model.Unreachable
	out := &Data{XLabel: "hop i", YLabel: "hop weight α_i"}
	if unreachable {
		out.XLabel = hopAxisUnreachable
	}
	header := []string{"layer", "hop", "mean", "std", "runs"}
	if len(f.Paper) > 0 {
		header = append(header, "paper")
	}
	out.CSV = append(out.CSV, header)
	for _, layer := range layers {
		var per [][]float64
		for _, r := range runs {
			alpha, err := selectedAlpha(r, layer)
			if err != nil {
				return nil, err
			}
			if len(per) > 0 && len(alpha) != len(per[0]) {
				return nil, fmt.Errorf("%s: layer %d has %d hop weights, another run %d", r.Source, layer, len(alpha), len(per[0]))
			}
			per = append(per, alpha)
		}
		k := len(per[0])
		ours := Series{Name: "ours"}
		var ref Series
		var paper []float64
		if v, ok := f.Paper[strconv.Itoa(layer)]; ok {
			list, ok := v.([]any)
			if !ok || len(list) != k {
				return nil, fmt.Errorf("paper values of layer %d: want a list of %d hop weights", layer, k)
			}
			for i, x := range list {
				fx, ok := x.(float64)
				if !ok {
					return nil, fmt.Errorf("paper value %d of layer %d is not a number", i, layer)
				}
				paper = append(paper, fx)
			}
			ref.Name = "paper"
		}
		for i := range k {
			var mean, sq float64
			for _, a := range per {
				mean += a[i]
			}
			mean /= float64(len(per))
			for _, a := range per {
				sq += (a[i] - mean) * (a[i] - mean)
			}
			std := math.Sqrt(sq / float64(len(per)))
			ours.X = append(ours.X, float64(i+1))
			ours.Y = append(ours.Y, mean)
			ours.Err = append(ours.Err, std)
			hop := strconv.Itoa(i + 1)
			if unreachable && i == k-1 {
				hop = "∞"
			}
			row := []string{strconv.Itoa(layer), hop, num(mean), num(std), strconv.Itoa(len(per))}
			switch {
			case paper != nil:
				ref.X = append(ref.X, float64(i+1))
				ref.Y = append(ref.Y, paper[i])
				row = append(row, num(paper[i]))
			case len(f.Paper) > 0:
				row = append(row, "")
			}
			out.CSV = append(out.CSV, row)
		}
		p := Panel{Title: fmt.Sprintf("layer %d", layer), Series: []Series{ours}}
		if paper != nil {
			p.Series = append(p.Series, ref)
		}
		out.Panels = append(out.Panels, p)
	}
	return out, nil
}

// selectedAlpha returns the hop weights of layer (1-based) at the run's
// selected epoch.
func selectedAlpha(r selection.TrainRun, layer int) ([]float64, error) {
	res := r.Result
	i := slices.IndexFunc(res.Epochs, func(e stages.EpochRecord) bool { return e.Epoch == res.BestEpoch })
	if i < 0 {
		return nil, fmt.Errorf("%s: no record of the selected epoch %d", r.Source, res.BestEpoch)
	}
	a := res.Epochs[i].Alpha
	if layer < 1 || layer > len(a) {
		return nil, fmt.Errorf("%s: epoch %d records hop weights of %d layers, asked for layer %d", r.Source, res.BestEpoch, len(a), layer)
	}
	for j, x := range a[layer-1] {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, fmt.Errorf("%s: α_%d of layer %d is %v", r.Source, j+1, layer, x)
		}
	}
	return a[layer-1], nil
}

// num formats a value with 6 significant digits, the precision of every
// number the figure files hold.
func num(x float64) string { return strconv.FormatFloat(x, 'g', 6, 64) }
