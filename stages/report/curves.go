package report

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/spn-project/spn/schema"
	"github.com/spn-project/spn/stages"
	"github.com/spn-project/spn/stages/plan"
	"github.com/spn-project/spn/stages/selection"
)

// palette colours the series; its first colours are the figure stage's.
var palette = []color.RGBA{
	{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
	{R: 0xd6, G: 0x27, B: 0x28, A: 0xff},
	{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff},
	{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff},
	{R: 0x94, G: 0x67, B: 0xbd, A: 0xff},
	{R: 0x8c, G: 0x56, B: 0x4b, A: 0xff},
	{R: 0x7f, G: 0x7f, B: 0x7f, A: 0xff},
	{R: 0x17, G: 0xbe, B: 0xcf, A: 0xff},
}

func colour(i int) color.RGBA { return palette[i%len(palette)] }

// run is one cached train stage's result.
type run struct {
	node *plan.Node
	res  *stages.TrainResult
}

// group is the runs of one grid point.
type group struct {
	label string
	runs  []run
	nodes []*plan.Node // every train stage of the point, cached or not
}

func (r *renderer) experiments() error {
	r.printf("<section id=\"experiments\">\n<h2>Experiments</h2>\n")
	for i := range r.o.Spec.Experiments {
		if err := r.experiment(&r.o.Spec.Experiments[i]); err != nil {
			return fmt.Errorf("report: experiment %s: %w", r.o.Spec.Experiments[i].Name, err)
		}
	}
	r.printf("</section>\n")
	return nil
}

// groups returns the runs of the selected configuration (the winning grid
// point's runs under holdout, every fold's final runs under errica) and
// every grid point's runs (nil for a single point), from the cache.
func (r *renderer) groups(e *schema.Experiment, ev *plan.Node) (sel group, grid []group, note string, err error) {
	winner := -1
	if cached(ev) {
		res, err := selection.ReadEvalResult(r.o.Cache.StageDir(ev.Kind, ev.Key))
		if err != nil {
			return sel, nil, "", err
		}
		winner = res.Winner
	}
	np := len(e.Points)
	label := func(i int) string { return plan.PointLabel(e.Points[i]) }
	if e.Protocol.Kind == "errica" {
		sel = group{label: "final runs of every fold (each fold's selected point)", nodes: ev.Deps}
		if np > 1 {
			grid = make([]group, np)
			for i := range grid {
				grid[i].label = label(i)
			}
			for _, d := range ev.Deps {
				for _, s := range d.Deps {
					if s.Kind != stages.KindSelect {
						continue
					}
					sp, _ := s.Params.(stages.SelectParams)
					for j, t := range s.Deps {
						if p := j / max(sp.Runs, 1); p < np && !containsNode(grid[p].nodes, t) {
							grid[p].nodes = append(grid[p].nodes, t)
						}
					}
				}
			}
		}
		note = "Model selection per fold on the inner validation set; the curves are the final runs'."
	} else {
		block := len(ev.Deps) / max(np, 1)
		switch {
		case np == 1:
			winner = 0
		case winner < 0:
			note = "The selected grid point is not known yet (the evaluate stage has not run)."
		}
		if np > 1 {
			for i := range np {
				grid = append(grid, group{label: label(i), nodes: ev.Deps[i*block : (i+1)*block]})
			}
		}
		if winner >= 0 && winner < np {
			sel = group{label: label(winner), nodes: ev.Deps[winner*block : (winner+1)*block]}
			note = "Selected point: " + label(winner) + "."
		}
	}
	if err := r.fill(&sel); err != nil {
		return sel, nil, "", err
	}
	for i := range grid {
		if err := r.fill(&grid[i]); err != nil {
			return sel, nil, "", err
		}
	}
	return sel, grid, note, nil
}

func containsNode(ns []*plan.Node, n *plan.Node) bool {
	for _, m := range ns {
		if m == n {
			return true
		}
	}
	return false
}

// fill reads the cached, not diverged runs of g.nodes.
func (r *renderer) fill(g *group) error {
	for _, n := range g.nodes {
		if !cached(n) {
			continue
		}
		res, err := r.train(n)
		if err != nil {
			return err
		}
		if res.Diverged == "" && len(res.Epochs) > 0 {
			g.runs = append(g.runs, run{node: n, res: res})
		}
	}
	return nil
}

func (r *renderer) experiment(e *schema.Experiment) error {
	ev := r.o.Plan.Evaluate[e.Name]
	if ev == nil {
		return fmt.Errorf("not in the plan")
	}
	id := esc(e.Name)
	r.printf("<section class=\"experiment\" id=\"exp-%s\">\n<h3>%s</h3>\n", id, esc(e.Name))
	r.printf("<p>Dataset %s; protocol %s (%d splits, %d runs, metric %s); %d grid point(s).</p>\n",
		esc(plan.DatasetLabel(e.Dataset)), esc(e.Protocol.Kind), e.Protocol.Splits, e.Protocol.Runs, esc(e.Protocol.Metric), len(e.Points))
	sel, grid, note, err := r.groups(e, ev)
	if err != nil {
		return err
	}
	if note != "" {
		r.printf("<p class=\"note\">%s</p>\n", esc(note))
	}
	// Missing and failed train stages of the experiment.
	var missing, total int
	seen := map[*plan.Node]bool{}
	all := append(append([]*plan.Node(nil), sel.nodes...), ev.Deps...)
	for _, g := range grid {
		all = append(all, g.nodes...)
	}
	for _, n := range all {
		if seen[n] {
			continue
		}
		seen[n] = true
		total++
		if msg, ok := r.failure(n); ok {
			r.printf("<p class=\"failed\">stage <code>%s</code> failed: %s</p>\n", esc(n.Name), esc(msg))
		} else if !cached(n) {
			missing++
		}
	}
	if missing > 0 {
		r.printf("<p class=\"missing\">%d of %d train stages are missing (not run yet); the curves show the cached ones.</p>\n", missing, total)
	}
	if len(sel.runs) == 0 {
		r.printf("<p class=\"missing\" id=\"curves-%s\">No learning curves: no train stage of the selected configuration is cached.</p>\n", id)
	} else {
		svg, err := curvesSVG(sel.runs)
		if err != nil {
			return err
		}
		r.printf("<div class=\"curves\" id=\"curves-%s\">\n<h4>Learning curves: %s</h4>\n%s", id, esc(sel.label), svg)
		var epochs []string
		for _, ru := range sel.runs {
			epochs = append(epochs, strconv.Itoa(ru.res.BestEpoch))
		}
		r.printf("<p class=\"note\">Mean ± std (band) over %d runs (splits, folds and reruns). Selected epoch of each run (dots on the validation score): %s.</p>\n</div>\n",
			len(sel.runs), strings.Join(epochs, ", "))
		if svg, ok, err := hopsSVG(sel.runs); err != nil {
			return err
		} else if ok {
			r.printf("<div class=\"hop-weights\" id=\"hops-%s\">\n<h4>Learned hop weights α</h4>\n%s<p class=\"note\">Left: each layer's α_1..α_k at the selected epoch (the model kept), mean ± std over the runs. Then, per layer, the path of every α_i over the epochs (mean over the runs), and ε where it is learned.</p>\n</div>\n", id, svg)
		}
	}
	if len(grid) > 1 {
		r.gridDetails(id, grid, e)
	}
	r.printf("</section>\n")
	return nil
}

func (r *renderer) gridDetails(id string, grid []group, e *schema.Experiment) {
	r.printf("<details class=\"grid\" id=\"grid-%s\">\n<summary>All %d grid points</summary>\n", id, len(grid))
	r.printf("<table class=\"grid-points\">\n<thead><tr><th>point</th><th>cached runs</th><th>mean validation score at the selected epoch</th></tr></thead>\n<tbody>\n")
	var series []series
	for i, g := range grid {
		score := math.NaN()
		if len(g.runs) > 0 {
			score = 0
			for _, ru := range g.runs {
				score += ru.res.ValScore
			}
			score /= float64(len(g.runs))
			m, _ := meanStd(g.runs, func(ep stages.EpochRecord) float64 { return ep.ValScore })
			series = append(series, seriesOf(fmt.Sprintf("point %d", i), m, nil, colour(i)))
		}
		r.printf("<tr><th>%d: %s</th><td>%d of %d</td><td>%s</td></tr>\n", i, esc(g.label), len(g.runs), len(g.nodes), fmtNum(score))
	}
	r.printf("</tbody>\n</table>\n")
	if len(series) > 0 {
		p := newPlot("validation "+e.Protocol.Metric+" per grid point", "epoch", e.Protocol.Metric)
		addSeries(p, series)
		if svg, err := svgOf([]*plot.Plot{p}, 1, 16*vg.Centimeter, 9*vg.Centimeter); err == nil {
			r.b.WriteString(svg)
		}
	}
	r.printf("</details>\n")
}

// meanStd returns, per epoch, the mean and std of get over the runs that
// reached that epoch.
func meanStd(runs []run, get func(stages.EpochRecord) float64) (mean, std plotter.XYs) {
	n := 0
	for _, ru := range runs {
		n = max(n, len(ru.res.Epochs))
	}
	for i := range n {
		var xs []float64
		epoch := 0
		for _, ru := range runs {
			if i < len(ru.res.Epochs) {
				xs = append(xs, get(ru.res.Epochs[i]))
				epoch = ru.res.Epochs[i].Epoch
			}
		}
		var m, s float64
		for _, x := range xs {
			m += x
		}
		m /= float64(len(xs))
		for _, x := range xs {
			s += (x - m) * (x - m)
		}
		s = math.Sqrt(s / float64(len(xs)))
		if math.IsNaN(m) || math.IsInf(m, 0) {
			continue
		}
		mean = append(mean, plotter.XY{X: float64(epoch), Y: m})
		std = append(std, plotter.XY{X: float64(epoch), Y: s})
	}
	return mean, std
}

// series is one line with an optional band.
type series struct {
	name       string
	mean, band plotter.XYs
	colour     color.RGBA
}

func seriesOf(name string, mean, std plotter.XYs, c color.RGBA) series {
	return series{name: name, mean: mean, band: std, colour: c}
}

func newPlot(title, x, y string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = x
	p.Y.Label.Text = y
	p.Legend.Top = true
	return p
}

func addSeries(p *plot.Plot, ss []series) {
	for _, s := range ss {
		if len(s.mean) == 0 {
			continue
		}
		if len(s.band) == len(s.mean) && len(s.mean) > 1 {
			poly := make(plotter.XYs, 0, 2*len(s.mean))
			for i, m := range s.mean {
				poly = append(poly, plotter.XY{X: m.X, Y: m.Y + s.band[i].Y})
			}
			for i := len(s.mean) - 1; i >= 0; i-- {
				poly = append(poly, plotter.XY{X: s.mean[i].X, Y: s.mean[i].Y - s.band[i].Y})
			}
			if pg, err := plotter.NewPolygon(poly); err == nil {
				pg.Color = color.NRGBA{R: s.colour.R, G: s.colour.G, B: s.colour.B, A: 0x40}
				pg.LineStyle.Width = 0
				p.Add(pg)
			}
		}
		l, err := plotter.NewLine(s.mean)
		if err != nil {
			continue
		}
		l.Color = s.colour
		l.Width = vg.Points(1.2)
		p.Add(l)
		p.Legend.Add(s.name, l)
	}
}

// curvesSVG draws loss, score and learning rate per epoch.
func curvesSVG(runs []run) (string, error) {
	get := func(f func(stages.EpochRecord) float64) (plotter.XYs, plotter.XYs) { return meanStd(runs, f) }
	metric := runs[0].res.Metric
	loss := newPlot("loss", "epoch", "loss")
	tm, ts := get(func(e stages.EpochRecord) float64 { return e.TrainLoss })
	vm, vs := get(func(e stages.EpochRecord) float64 { return e.ValLoss })
	addSeries(loss, []series{seriesOf("train", tm, ts, colour(0)), seriesOf("validation", vm, vs, colour(1))})
	score := newPlot(metric, "epoch", metric)
	tm, ts = get(func(e stages.EpochRecord) float64 { return e.TrainScore })
	vm, vs = get(func(e stages.EpochRecord) float64 { return e.ValScore })
	addSeries(score, []series{seriesOf("train", tm, ts, colour(0)), seriesOf("validation", vm, vs, colour(1))})
	var best plotter.XYs
	for _, ru := range runs {
		for _, ep := range ru.res.Epochs {
			if ep.Epoch == ru.res.BestEpoch {
				best = append(best, plotter.XY{X: float64(ep.Epoch), Y: ep.ValScore})
			}
		}
	}
	if sc, err := plotter.NewScatter(best); err == nil && len(best) > 0 {
		sc.Color = color.RGBA{A: 0xff}
		sc.Radius = vg.Points(3)
		score.Add(sc)
		score.Legend.Add("selected epoch", sc)
	}
	lr := newPlot("learning rate", "epoch", "lr")
	lm, _ := get(func(e stages.EpochRecord) float64 { return e.LR })
	addSeries(lr, []series{seriesOf("lr", lm, nil, colour(2))})
	lr.Legend.Top = false
	lr.Y.Min = 0
	return svgOf([]*plot.Plot{loss, score, lr}, 3, 26*vg.Centimeter, 8*vg.Centimeter)
}

// hopsSVG draws the hop weights when a layer learns more than one; false
// when none does.
func hopsSVG(runs []run) (string, bool, error) {
	last := runs[0].res.Epochs[len(runs[0].res.Epochs)-1]
	layers, k := len(last.Alpha), 0
	for _, a := range last.Alpha {
		k = max(k, len(a))
	}
	if layers == 0 || k < 2 {
		return "", false, nil
	}
	// α at the selected epoch, per layer: mean ± std over the runs.
	end := newPlot("α at the selected epoch", "hop i", "α_i")
	for l := range layers {
		var per [][]float64
		for _, ru := range runs {
			for _, ep := range ru.res.Epochs {
				if ep.Epoch == ru.res.BestEpoch && l < len(ep.Alpha) {
					per = append(per, ep.Alpha[l])
				}
			}
		}
		if len(per) == 0 {
			continue
		}
		var mean, std plotter.XYs
		for i := range per[0] {
			var m, s float64
			for _, a := range per {
				m += a[i]
			}
			m /= float64(len(per))
			for _, a := range per {
				s += (a[i] - m) * (a[i] - m)
			}
			mean = append(mean, plotter.XY{X: float64(i + 1), Y: m})
			std = append(std, plotter.XY{X: float64(i + 1), Y: math.Sqrt(s / float64(len(per)))})
		}
		addSeries(end, []series{seriesOf(fmt.Sprintf("layer %d", l+1), mean, std, colour(l))})
		if pts, err := plotter.NewScatter(mean); err == nil {
			pts.Color = colour(l)
			end.Add(pts)
		}
	}
	end.X.Tick.Marker = intTicks(k)
	ps := []*plot.Plot{end}
	for l := range layers {
		p := newPlot(fmt.Sprintf("layer %d: α_i over the epochs", l+1), "epoch", "α_i")
		var ss []series
		for i := range k {
			m, _ := meanStd(runs, func(ep stages.EpochRecord) float64 {
				if l < len(ep.Alpha) && i < len(ep.Alpha[l]) {
					return ep.Alpha[l][i]
				}
				return math.NaN()
			})
			ss = append(ss, seriesOf(fmt.Sprintf("α_%d", i+1), m, nil, colour(i)))
		}
		addSeries(p, ss)
		ps = append(ps, p)
	}
	if epsLearned(runs) {
		p := newPlot("ε over the epochs", "epoch", "ε")
		var ss []series
		for l := range layers {
			m, s := meanStd(runs, func(ep stages.EpochRecord) float64 {
				if l < len(ep.Eps) {
					return ep.Eps[l]
				}
				return math.NaN()
			})
			ss = append(ss, seriesOf(fmt.Sprintf("layer %d", l+1), m, s, colour(l)))
		}
		addSeries(p, ss)
		ps = append(ps, p)
	}
	cols := min(len(ps), 3)
	rows := (len(ps) + cols - 1) / cols
	svg, err := svgOf(ps, cols, 26*vg.Centimeter, vg.Length(rows)*8*vg.Centimeter)
	return svg, true, err
}

// epsLearned reports whether some run's ε changes over the epochs.
func epsLearned(runs []run) bool {
	for _, ru := range runs {
		first := ru.res.Epochs[0].Eps
		for _, ep := range ru.res.Epochs[1:] {
			for l := range min(len(first), len(ep.Eps)) {
				if ep.Eps[l] != first[l] {
					return true
				}
			}
		}
	}
	return false
}

func intTicks(n int) plot.ConstantTicks {
	var t plot.ConstantTicks
	for i := 1; i <= n; i++ {
		t = append(t, plot.Tick{Value: float64(i), Label: strconv.Itoa(i)})
	}
	return t
}

// svgOf draws ps in a grid of cols columns on a w × h SVG canvas and
// returns it as an inline <svg> element.
func svgOf(ps []*plot.Plot, cols int, w, h vg.Length) (string, error) {
	rows := (len(ps) + cols - 1) / cols
	grid := make([][]*plot.Plot, rows)
	for i := range grid {
		grid[i] = make([]*plot.Plot, cols)
		for j := range cols {
			if k := i*cols + j; k < len(ps) {
				grid[i][j] = ps[k]
			}
		}
	}
	c := vgsvg.New(w, h)
	dc := draw.New(c)
	tiles := draw.Tiles{Rows: rows, Cols: cols, PadX: vg.Millimeter * 6, PadY: vg.Millimeter * 4, PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 2}
	canvases := plot.Align(grid, tiles, dc)
	for i := range grid {
		for j, p := range grid[i] {
			if p != nil {
				p.Draw(canvases[i][j])
			}
		}
	}
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		return "", fmt.Errorf("writing svg: %w", err)
	}
	return inlineSVG(buf.Bytes()), nil
}
