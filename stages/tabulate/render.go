package tabulate

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"sort"
	"strconv"
	"strings"

	"github.com/spn-project/spn/schema"
	"github.com/spn-project/spn/stages"
)

// Table styles.
const (
	StyleResults = "results"
	StyleCompare = "compare"
)

// Output formats and their file extensions.
var formatExt = map[string]string{"latex": ".tex", "markdown": ".md", "csv": ".csv"}

// maxDigits bounds Table.Digits.
const maxDigits = 12

// value is one number with its optional spread, in table units.
type value struct {
	ok     bool // a mean is present
	mean   float64
	hasStd bool
	std    float64
}

// entry is one (row, column) cell after computation.
type entry struct {
	present bool // the row has a cell for the column
	ours    value
	scores  []float64 // a computed cell's split (or run) scores, in table units
	cited   bool      // ours is a cited constant
	source  string    // cited source
	paper   value
	best    bool
}

// grid is a table with every cell computed.
type grid struct {
	t       schema.Table
	cells   [][]entry // [row][column]
	sources []string  // distinct cited sources, in order of first appearance
	marks   [][]int   // per row: indices into sources, ascending
}

// Render renders t from results (experiment name → result) into its files:
// NAME.json always, and NAME.tex, NAME.md, NAME.csv for the formats t asks
// for. Errors name the table, row and column of the offending cell.
func Render(t schema.Table, results map[string]*stages.EvalResult) (map[string][]byte, error) {
	t = withNotes(t, results)
	g, err := build(t, results)
	if err != nil {
		return nil, fmt.Errorf("table %q: %w", t.Name, err)
	}
	files := map[string][]byte{t.Name + ".json": g.json()}
	for _, f := range t.Formats {
		switch f {
		case "latex":
			files[t.Name+formatExt[f]] = g.latex()
		case "markdown":
			files[t.Name+formatExt[f]] = g.markdown()
		case "csv":
			b, err := g.csv()
			if err != nil {
				return nil, fmt.Errorf("table %q: %w", t.Name, err)
			}
			files[t.Name+formatExt[f]] = b
		}
	}
	return files, nil
}

func validate(t schema.Table) error {
	switch {
	case t.Name == "" || t.Name == "." || t.Name == ".." || strings.ContainsAny(t.Name, `/\`):
		return fmt.Errorf("name %q is not a valid file name", t.Name)
	case t.Name == "record" || t.Name == "result":
		return fmt.Errorf("name %q clashes with a stage artifact", t.Name)
	case t.Style != StyleResults && t.Style != StyleCompare:
		return fmt.Errorf("style %q: want %q or %q", t.Style, StyleResults, StyleCompare)
	case t.Scale == 0 || math.IsNaN(t.Scale) || math.IsInf(t.Scale, 0):
		return fmt.Errorf("scale %v: want a finite non-zero number", t.Scale)
	case t.Digits < 0 || t.Digits > maxDigits:
		return fmt.Errorf("digits %d: want 0..%d", t.Digits, maxDigits)
	case t.DDof < 0:
		return fmt.Errorf("ddof %d: want 0 or more", t.DDof)
	case len(t.Columns) == 0:
		return errors.New("no columns")
	}
	for _, f := range t.Formats {
		if _, ok := formatExt[f]; !ok {
			return fmt.Errorf("format %q: want latex, markdown or csv", f)
		}
	}
	seen := map[string]bool{}
	for i, c := range t.Columns {
		if c.Key == "" {
			return fmt.Errorf("column %d: empty key", i)
		}
		if seen[c.Key] {
			return fmt.Errorf("column %d: key %q used twice", i, c.Key)
		}
		seen[c.Key] = true
	}
	for i, r := range t.Rows {
		keys := make([]string, 0, len(r.Cells))
		for k := range r.Cells {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if !seen[k] {
				return fmt.Errorf("row %d (%q): cell for unknown column %q", i, r.Label, k)
			}
		}
	}
	return nil
}

func build(t schema.Table, results map[string]*stages.EvalResult) (*grid, error) {
	if err := validate(t); err != nil {
		return nil, err
	}
	g := &grid{t: t, cells: make([][]entry, len(t.Rows)), marks: make([][]int, len(t.Rows))}
	srcIndex := map[string]int{}
	for i, r := range t.Rows {
		g.cells[i] = make([]entry, len(t.Columns))
		for j, col := range t.Columns {
			c, ok := r.Cells[col.Key]
			if !ok {
				continue
			}
			e, err := compute(t, c, results)
			if err != nil {
				return nil, fmt.Errorf("row %d (%q), column %q: %w", i, r.Label, col.Key, err)
			}
			g.cells[i][j] = e
			if !e.cited {
				continue
			}
			k, ok := srcIndex[e.source]
			if !ok {
				k = len(g.sources)
				srcIndex[e.source] = k
				g.sources = append(g.sources, e.source)
			}
			g.marks[i] = append(g.marks[i], k)
		}
		sort.Ints(g.marks[i])
		g.marks[i] = dedup(g.marks[i])
	}
	if err := g.derive(); err != nil {
		return nil, err
	}
	if t.Style == StyleResults {
		if t.Best == BestRow {
			g.markBestRows()
		} else {
			g.markBest()
		}
	}
	return g, nil
}

func dedup(xs []int) []int {
	out := xs[:0]
	for i, x := range xs {
		if i == 0 || x != xs[i-1] {
			out = append(out, x)
		}
	}
	return out
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

func compute(t schema.Table, c schema.Cell, results map[string]*stages.EvalResult) (entry, error) {
	e := entry{present: true}
	switch {
	case c.Experiment != "" && c.Mean != nil:
		return e, fmt.Errorf("cell has both experiment %q and a cited mean", c.Experiment)
	case c.Std != nil && c.Mean == nil:
		return e, errors.New("cell has a cited std but no cited mean")
	case c.PaperStd != nil && c.PaperMean == nil:
		return e, errors.New("cell has a paper std but no paper mean")
	}
	if c.Experiment != "" {
		r := results[c.Experiment]
		if r == nil {
			return e, fmt.Errorf("experiment %q has no result", c.Experiment)
		}
		scores, what := r.SplitScores, "split"
		if t.StdOver == "runs" {
			scores, what = r.RunScores, "run"
		}
		if len(scores) == 0 {
			return e, fmt.Errorf("experiment %q has no %s scores", c.Experiment, what)
		}
		xs := make([]float64, len(scores))
		for i, x := range scores {
			if !finite(x) {
				return e, fmt.Errorf("experiment %q: %s score %d is %v", c.Experiment, what, i, x)
			}
			xs[i] = x * t.Scale
		}
		e.scores = xs
		e.ours = meanStd(xs, t.DDof)
	}
	if c.Mean != nil {
		if !finite(*c.Mean) || (c.Std != nil && !finite(*c.Std)) {
			return e, errors.New("cited value is not finite")
		}
		e.ours = value{ok: true, mean: *c.Mean}
		if c.Std != nil {
			e.ours.hasStd, e.ours.std = true, *c.Std
		}
		e.cited, e.source = true, c.Source
	}
	if c.PaperMean != nil {
		if !finite(*c.PaperMean) || (c.PaperStd != nil && !finite(*c.PaperStd)) {
			return e, errors.New("paper value is not finite")
		}
		e.paper = value{ok: true, mean: *c.PaperMean}
		if c.PaperStd != nil {
			e.paper.hasStd, e.paper.std = true, *c.PaperStd
		}
	}
	return e, nil
}

// meanStd returns the mean of xs and, when len(xs) > ddof, the standard
// deviation sqrt(Σ(x−mean)²/(n−ddof)); sums run in index order.
func meanStd(xs []float64, ddof int) value {
	var sum float64
	for _, x := range xs {
		sum += x
	}
	m := sum / float64(len(xs))
	v := value{ok: true, mean: m}
	if len(xs) > ddof {
		var ss float64
		for _, x := range xs {
			ss += (x - m) * (x - m)
		}
		v.hasStd, v.std = true, math.Sqrt(ss/float64(len(xs)-ddof))
	}
	return v
}

// num formats v with the table's digits; negative zero prints as zero.
func (g *grid) num(v float64) string {
	s := strconv.FormatFloat(v, 'f', g.t.Digits, 64)
	if strings.HasPrefix(s, "-") && strings.Trim(s, "-0.") == "" {
		s = s[1:]
	}
	return s
}

// rat returns the displayed decimal of v as an exact rational.
func (g *grid) rat(v float64) *big.Rat {
	r, ok := new(big.Rat).SetString(g.num(v))
	if !ok { // FormatFloat of a finite number always parses.
		return new(big.Rat)
	}
	return r
}

// markBest bolds the best displayed mean of every column with at least two
// values; ties are all bold.
func (g *grid) markBest() {
	for j := range g.t.Columns {
		var best *big.Rat
		count := 0
		for i := range g.cells {
			e := &g.cells[i][j]
			if !e.ours.ok || g.t.Rows[i].Derived != nil {
				continue
			}
			count++
			r := g.rat(e.ours.mean)
			if best == nil || (g.t.HigherIsBetter && r.Cmp(best) > 0) || (!g.t.HigherIsBetter && r.Cmp(best) < 0) {
				best = r
			}
		}
		if count < 2 {
			continue
		}
		for i := range g.cells {
			e := &g.cells[i][j]
			e.best = e.ours.ok && g.t.Rows[i].Derived == nil && g.rat(e.ours.mean).Cmp(best) == 0
		}
	}
}

// comparison is the displayed difference and within-std verdict of a cell.
type comparison struct {
	ok     bool // both ours and the paper's mean are present
	diff   string
	within string // "yes", "no" or "--" when the paper gives no std
}

func (g *grid) compare(e entry) comparison {
	if !e.ours.ok || !e.paper.ok {
		return comparison{diff: "--", within: "--"}
	}
	d := new(big.Rat).Sub(g.rat(e.ours.mean), g.rat(e.paper.mean))
	c := comparison{ok: true, diff: d.FloatString(g.t.Digits), within: "--"}
	if d.Sign() >= 0 {
		c.diff = "+" + c.diff
	}
	if d.Sign() == 0 {
		c.diff = d.FloatString(g.t.Digits)
	}
	if e.paper.hasStd {
		c.within = "no"
		if new(big.Rat).Abs(d).Cmp(g.rat(e.paper.std)) <= 0 {
			c.within = "yes"
		}
	}
	return c
}

// marker returns the i-th footnote marker in text or LaTeX form.
func marker(i int, tex bool) string {
	syms := []string{"†", "‡", "§", "¶"}
	if tex {
		syms = []string{`\dagger`, `\ddagger`, `\S`, `\P`}
	}
	return strings.Repeat(syms[i%len(syms)], i/len(syms)+1)
}

// sourceText is the footnote text for a cited source.
func sourceText(s string) string {
	if s == "" {
		return "cited value"
	}
	return "cited from " + s
}
