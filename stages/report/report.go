// Package report renders a spec's run as one self-contained HTML page
// (report.html) from the stage cache alone: the spec, its tables and
// figures, every experiment's learning curves and learned hop weights,
// a summary of the stages and the data's provenance.
//
// The page holds no script, no font and no reference to the network: CSS
// is inline and the plots are inline SVG drawn with gonum/plot, like the
// figure stage's. It never trains: a stage that is not cached is shown as
// missing, one whose last run failed with its error. The same cache gives
// the same bytes: the page holds nothing of the clock, every list is in
// plan or sorted order, and numbers are formatted with fixed precision.
//
// Stable ids and classes, for tests and for readers' links: #spec,
// #tables (a table.spn-table#table-NAME each), #figures
// (figure.spn-figure#figure-NAME), #experiments (section.experiment#exp-NAME
// holding div.curves#curves-NAME, div.hop-weights#hops-NAME when the model
// learns hop weights, details.grid#grid-NAME when a grid was searched),
// #stages and #provenance; .missing and .failed mark what the cache lacks.
package report

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spn-project/spn/schema"
	"github.com/spn-project/spn/stages"
	"github.com/spn-project/spn/stages/cache"
	"github.com/spn-project/spn/stages/plan"
)

// FileName is the report's file name in the results directory.
const FileName = "report.html"

// Options is what Render reads.
type Options struct {
	Spec *schema.Spec
	// SpecPath and SpecSHA256 identify the spec's source.
	SpecPath, SpecSHA256 string
	// Version is spn's version.
	Version string
	// Plan is the spec's plan, resolved against Cache.
	Plan  *plan.Plan
	Cache *cache.Cache
	// Tables writes the HTML of a tabulate stage directory's tables
	// (tabulate.WriteHTML).
	Tables func(w io.Writer, stageDir string) error
	// Memory, if not nil, estimates a stage's peak memory in bytes from
	// its node and its (cached) inputs, as the executor does (0: none).
	Memory func(n *plan.Node, in []stages.Input) uint64
}

// Render returns the report's HTML.
func Render(o Options) ([]byte, error) {
	if o.Spec == nil || o.Plan == nil || o.Cache == nil || o.Tables == nil {
		return nil, errors.New("report: spec, plan, cache and table writer are required")
	}
	r := &renderer{o: o, results: map[string]*stages.TrainResult{}}
	r.head()
	if err := r.tables(); err != nil {
		return nil, err
	}
	if err := r.figures(); err != nil {
		return nil, err
	}
	if err := r.experiments(); err != nil {
		return nil, err
	}
	r.stageSummary()
	r.provenance()
	r.b.WriteString("</main>\n</body>\n</html>\n")
	return r.b.Bytes(), nil
}

type renderer struct {
	o       Options
	b       bytes.Buffer
	results map[string]*stages.TrainResult // by key, read once
}

var esc = html.EscapeString

func (r *renderer) printf(format string, args ...any) { fmt.Fprintf(&r.b, format, args...) }

// cached reports whether n is complete in the cache.
func cached(n *plan.Node) bool { return n.Status == plan.Cached }

// failure returns the recorded error of n's last failed run.
func (r *renderer) failure(n *plan.Node) (string, bool) {
	if cached(n) {
		return "", false
	}
	f, ok := r.o.Cache.LastFailure(n.Key)
	if !ok {
		return "", false
	}
	return f.Error, true
}

// absent writes why n has no output: failed with its error, or missing.
func (r *renderer) absent(what string, n *plan.Node) {
	if msg, ok := r.failure(n); ok {
		r.printf("<p class=\"failed\">%s: stage <code>%s</code> failed: %s</p>\n", esc(what), esc(n.Name), esc(msg))
		return
	}
	r.printf("<p class=\"missing\">%s: missing; stage <code>%s</code> has not run (%s).</p>\n", esc(what), esc(n.Name), esc(n.Reason))
}

const css = `body{font-family:sans-serif;margin:0;color:#222;background:#fff}
main{max-width:1100px;margin:0 auto;padding:1em 2em}
h1{margin-bottom:.2em}h2{border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:1.6em}
table{border-collapse:collapse;margin:.6em 0}th,td{border:1px solid #ccc;padding:.25em .6em;text-align:center}
tbody th{text-align:left;font-weight:normal}caption{font-weight:bold;text-align:left;padding:.3em 0}
tr.rule{border-top:2px solid #888}td.best,th.best{background:#e8f1fb}
dl.meta{display:grid;grid-template-columns:max-content auto;gap:.2em 1em}dl.meta dt{font-weight:bold}dl.meta dd{margin:0;word-break:break-all}
.missing{color:#8a6d00;background:#fff8e0;padding:.3em .6em}.failed{color:#9b1c1c;background:#fdecec;padding:.3em .6em}
.table-notes,.note{font-size:90%;color:#555}svg{max-width:100%;height:auto}
nav a{margin-right:1em}code{font-size:90%}details{margin:.6em 0}summary{cursor:pointer}
`

func (r *renderer) head() {
	s := r.o.Spec
	r.printf("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n")
	r.printf("<title>spn report: %s</title>\n<style>\n%s</style>\n</head>\n<body>\n<main>\n", esc(s.Name), css)
	r.printf("<header id=\"spec\">\n<h1>%s</h1>\n", esc(s.Name))
	if s.Description != "" {
		r.printf("<p class=\"description\">%s</p>\n", esc(s.Description))
	}
	r.printf("<dl class=\"meta\">\n")
	item := func(k, v string) { r.printf("<dt>%s</dt><dd>%s</dd>\n", esc(k), esc(v)) }
	item("mode", s.Mode)
	item("spec", r.o.SpecPath)
	item("spec SHA-256", r.o.SpecSHA256)
	item("spn version", r.o.Version)
	item("device(s)", strings.Join(r.devices(), "; "))
	r.printf("</dl>\n</header>\n")
	r.printf("<nav><a href=\"#tables\">tables</a><a href=\"#figures\">figures</a><a href=\"#experiments\">experiments</a><a href=\"#stages\">stages</a><a href=\"#provenance\">provenance</a></nav>\n")
}

// devices lists the compute of the cached train stages, sorted.
func (r *renderer) devices() []string {
	seen := map[string]bool{}
	for _, n := range r.o.Plan.Nodes {
		if n.Kind != stages.KindTrain || !cached(n) {
			continue
		}
		if res, err := r.train(n); err == nil {
			seen[res.Compute.String()] = true
		}
	}
	if len(seen) == 0 {
		return []string{"none recorded (no train stage is cached)"}
	}
	out := make([]string, 0, len(seen))
	for d := range seen {
		out = append(out, d)
	}
	sort.Strings(out)
	return out
}

// train reads (once) the result of a cached train stage.
func (r *renderer) train(n *plan.Node) (*stages.TrainResult, error) {
	if res, ok := r.results[n.Key]; ok {
		return res, nil
	}
	path := filepath.Join(r.o.Cache.StageDir(n.Kind, n.Key), stages.FileResult)
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	var res stages.TrainResult
	if err := json.Unmarshal(b, &res); err != nil {
		return nil, fmt.Errorf("report: reading %s: %w", path, err)
	}
	r.results[n.Key] = &res
	return &res, nil
}

func (r *renderer) tables() error {
	r.printf("<section id=\"tables\">\n<h2>Tables</h2>\n")
	if len(r.o.Spec.Tables) == 0 {
		r.printf("<p class=\"note\">The spec has no tables.</p>\n")
	}
	for _, t := range r.o.Spec.Tables {
		n := r.o.Plan.Tabulate[t.Name]
		if n == nil {
			return fmt.Errorf("report: table %s is not in the plan", t.Name)
		}
		if !cached(n) {
			r.absent("table "+t.Name, n)
			continue
		}
		var b bytes.Buffer
		if err := r.o.Tables(&b, r.o.Cache.StageDir(n.Kind, n.Key)); err != nil {
			return fmt.Errorf("report: table %s: %w", t.Name, err)
		}
		r.b.Write(b.Bytes())
	}
	r.printf("</section>\n")
	return nil
}

func (r *renderer) figures() error {
	r.printf("<section id=\"figures\">\n<h2>Figures</h2>\n")
	if len(r.o.Spec.Figures) == 0 {
		r.printf("<p class=\"note\">The spec has no figures.</p>\n")
	}
	for _, f := range r.o.Spec.Figures {
		n := r.o.Plan.Figure[f.Name]
		if n == nil {
			return fmt.Errorf("report: figure %s is not in the plan", f.Name)
		}
		if !cached(n) {
			r.absent("figure "+f.Name, n)
			continue
		}
		dir := r.o.Cache.StageDir(n.Kind, n.Key)
		r.printf("<figure class=\"spn-figure\" id=\"figure-%s\">\n", esc(f.Name))
		if b, err := os.ReadFile(filepath.Join(dir, f.Name+".svg")); err == nil {
			r.b.WriteString(inlineSVG(b))
		} else if b, err := os.ReadFile(filepath.Join(dir, f.Name+".png")); err == nil {
			r.printf("<img alt=\"%s\" src=\"data:image/png;base64,%s\">\n", esc(f.Name), base64.StdEncoding.EncodeToString(b))
		} else {
			r.printf("<p class=\"note\">Figure %s has neither an svg nor a png format (formats: %s).</p>\n", esc(f.Name), esc(strings.Join(f.Formats, ", ")))
		}
		caption := strings.TrimSpace(f.Title + " " + f.Caption)
		if caption == "" {
			caption = f.Name
		}
		r.printf("<figcaption>%s</figcaption>\n</figure>\n", esc(caption))
	}
	r.printf("</section>\n")
	return nil
}

// inlineSVG makes gonum/plot's SVG document an element of the page:
// without the XML declaration and comment, and without the namespace
// attributes, which HTML's parser implies for <svg>.
func inlineSVG(b []byte) string {
	s := string(b)
	if i := strings.Index(s, "<svg"); i >= 0 {
		s = s[i:]
	}
	s = strings.Replace(s, "\n\txmlns=\"http://www.w3.org/2000/svg\"", "", 1)
	s = strings.Replace(s, "\n\txmlns:xlink=\"http://www.w3.org/1999/xlink\"", "", 1)
	return s
}

// stat is one stage kind's line of the stage summary.
type stat struct {
	kind                  string
	cached, toRun, failed int
	cpuSeconds, gpuSecs   float64
	wall                  float64
	peak                  uint64
}

func (r *renderer) stageSummary() {
	var stats []*stat
	byKind := map[string]*stat{}
	var failed []*plan.Node
	var failMsg []string
	for _, n := range r.o.Plan.Nodes {
		s := byKind[n.Kind]
		if s == nil {
			s = &stat{kind: n.Kind}
			byKind[n.Kind] = s
			stats = append(stats, s)
		}
		if msg, ok := r.failure(n); ok {
			s.failed++
			failed, failMsg = append(failed, n), append(failMsg, msg)
			continue
		}
		if !cached(n) {
			s.toRun++
			continue
		}
		s.cached++
		rec, err := r.o.Cache.ReadRecord(n.Kind, n.Key)
		if err != nil {
			continue
		}
		s.wall += rec.Seconds
		if n.Device() != "" {
			s.gpuSecs += rec.Seconds
		} else {
			s.cpuSeconds += rec.Seconds * float64(max(rec.Threads, 1))
		}
		if r.o.Memory != nil {
			if in, ok := r.inputs(n); ok {
				s.peak = max(s.peak, r.o.Memory(n, in))
			}
		}
	}
	r.printf("<section id=\"stages\">\n<h2>Stages</h2>\n")
	r.printf("<table class=\"stage-summary\">\n<thead><tr><th>kind</th><th>cached</th><th>to run</th><th>failed</th><th>wall seconds</th><th>CPU-seconds</th><th>GPU-seconds</th><th>estimated peak memory</th></tr></thead>\n<tbody>\n")
	var tot stat
	for _, s := range stats {
		r.printf("<tr><th>%s</th><td>%d</td><td>%d</td><td>%d</td><td>%.1f</td><td>%.1f</td><td>%.1f</td><td>%s</td></tr>\n",
			esc(s.kind), s.cached, s.toRun, s.failed, s.wall, s.cpuSeconds, s.gpuSecs, mib(s.peak))
		tot.cached, tot.toRun, tot.failed = tot.cached+s.cached, tot.toRun+s.toRun, tot.failed+s.failed
		tot.wall, tot.cpuSeconds, tot.gpuSecs, tot.peak = tot.wall+s.wall, tot.cpuSeconds+s.cpuSeconds, tot.gpuSecs+s.gpuSecs, max(tot.peak, s.peak)
	}
	r.printf("<tr class=\"rule\"><th>total</th><td>%d</td><td>%d</td><td>%d</td><td>%.1f</td><td>%.1f</td><td>%.1f</td><td>%s</td></tr>\n",
		tot.cached, tot.toRun, tot.failed, tot.wall, tot.cpuSeconds, tot.gpuSecs, mib(tot.peak))
	r.printf("</tbody>\n</table>\n")
	r.printf("<p class=\"note\">Seconds are those of the cached stages' records: wall time, CPU-seconds as wall time × the threads a stage was given, GPU-seconds as the wall time of stages on a GPU. Peak memory is the executor's estimate for a train stage (the largest of its kind), not a measurement.</p>\n")
	for i, n := range failed {
		r.printf("<p class=\"failed\">failed: <code>%s</code>: %s</p>\n", esc(n.Name), esc(failMsg[i]))
	}
	r.printf("</section>\n")
}

func mib(b uint64) string {
	if b == 0 {
		return "—"
	}
	return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20))
}

// inputs returns n's inputs as a job would get them; false when one is
// not cached.
func (r *renderer) inputs(n *plan.Node) ([]stages.Input, bool) {
	in := make([]stages.Input, len(n.Deps))
	for i, d := range n.Deps {
		if !cached(d) {
			return nil, false
		}
		in[i] = stages.Input{Kind: d.Kind, Key: d.Key, Dir: r.o.Cache.StageDir(d.Kind, d.Key)}
	}
	return in, true
}

func (r *renderer) provenance() {
	r.printf("<section id=\"provenance\">\n<h2>Provenance</h2>\n")
	for _, n := range r.o.Plan.Nodes {
		if n.Kind != stages.KindGenerate {
			continue
		}
		gp, _ := n.Params.(stages.GenerateParams)
		r.printf("<h3>%s</h3>\n", esc(plan.DatasetLabel(gp.Dataset)))
		if !cached(n) {
			r.absent("dataset", n)
			continue
		}
		path := filepath.Join(r.o.Cache.StageDir(n.Kind, n.Key), stages.FileSources)
		b, err := os.ReadFile(path)
		var src stages.DataSources
		if err == nil {
			err = json.Unmarshal(b, &src)
		}
		if err != nil {
			r.printf("<p class=\"note\">No record of the dataset's sources (%s).</p>\n", esc(err.Error()))
			continue
		}
		if len(src.Files) == 0 {
			r.printf("<p>Generated by spn %s (no upstream files; seed %d).</p>\n", esc(src.SPNVersion), gp.Dataset.Seed)
			continue
		}
		r.printf("<p>Read by spn %s.", esc(src.SPNVersion))
		if src.AcceptMismatch {
			r.printf(" Override: <strong>--accept-data-mismatch</strong> (files whose content figures differ from spn's were accepted).")
		}
		r.printf("</p>\n<table class=\"sources\">\n<thead><tr><th>file</th><th>URL</th><th>SHA-256</th><th>bytes</th><th>origin</th><th>figure check</th></tr></thead>\n<tbody>\n")
		for _, f := range src.Files {
			origin := "rebuilt (not upstream's pinned SHA-256)"
			if f.Upstream {
				origin = "upstream"
			}
			check := f.Figures
			if check == "" {
				check = "none"
			}
			r.printf("<tr><th><code>%s</code></th><td><code>%s</code></td><td><code>%s</code></td><td>%d</td><td>%s</td><td>%s</td></tr>\n",
				esc(f.Path), esc(f.URL), esc(f.SHA256), f.Size, esc(origin), esc(check))
		}
		r.printf("</tbody>\n</table>\n")
	}
	r.printf("</section>\n")
}

// fmtNum formats a score or loss for the page.
func fmtNum(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "—"
	}
	return fmt.Sprintf("%.4g", v)
}
