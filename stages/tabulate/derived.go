package tabulate

import (
	"fmt"
	"math/big"
	"slices"

	"github.com/spn-project/spn/schema"
)

// Where bold values are sought (schema.Table.Best).
const (
	BestColumn = "column"
	BestRow    = "row"
)

// Derived row kinds (schema.Derived.Kind).
const (
	DerivedMeanRelativeChange = schema.DerivedMeanRelativeChange
	DerivedPairedDifference   = schema.DerivedPairedDifference
)

// derive computes the derived rows from the other rows' displayed values
// (cells computed by build): see schema.Derived.
func (g *grid) derive() error {
	col := map[string]int{}
	for j, c := range g.t.Columns {
		col[c.Key] = j
	}
	for i, r := range g.t.Rows {
		d := r.Derived
		if d == nil {
			continue
		}
		switch d.Kind {
		case DerivedMeanRelativeChange:
		case DerivedPairedDifference:
			if err := g.pairedDifference(i); err != nil {
				return fmt.Errorf("row %d (%q): %w", i, r.Label, err)
			}
			continue
		default:
			return fmt.Errorf("row %d (%q): derived kind %q: want %q or %q", i, r.Label, d.Kind, DerivedMeanRelativeChange, DerivedPairedDifference)
		}
		var base []int
		for _, k := range d.Baseline {
			j, ok := col[k]
			if !ok {
				return fmt.Errorf("row %d (%q): derived baseline: no column %q", i, r.Label, k)
			}
			base = append(base, j)
		}
		for _, k := range d.Columns {
			j, ok := col[k]
			if !ok {
				return fmt.Errorf("row %d (%q): derived columns: no column %q", i, r.Label, k)
			}
			var sum float64
			n := 0
			for o := range g.t.Rows {
				if g.t.Rows[o].Derived != nil || !g.cells[o][j].ours.ok {
					continue
				}
				b, ok := g.bestOf(o, base)
				if !ok || b == 0 {
					continue
				}
				sum += 100 * (g.cells[o][j].ours.mean - b) / b
				n++
			}
			if n == 0 {
				return fmt.Errorf("row %d (%q), column %q: no row has a value there and in every baseline column", i, r.Label, k)
			}
			g.cells[i][j] = entry{present: true, ours: value{ok: true, mean: sum / float64(n)}}
		}
	}
	return nil
}

// pairedDifference computes derived row i, a paired_difference: in each
// column where both of its rows hold an experiment's scores, the mean and
// std (the table's ddof) of the differences a_s − b_s over the splits s
// (the runs, with std_over "runs"), in table units. The two experiments
// must have as many scores; a column where a row has none or a cited
// value stays empty.
func (g *grid) pairedDifference(i int) error {
	labels := g.t.Rows[i].Derived.Rows
	if len(labels) != 2 {
		return fmt.Errorf("paired difference of %d rows, want 2", len(labels))
	}
	var ab [2]int
	for n, label := range labels {
		found := g.t.RowsLabelled(label)
		if len(found) != 1 || g.t.Rows[found[0]].Derived != nil {
			return fmt.Errorf("paired difference: %d rows are labelled %q, want one row of experiments", len(found), label)
		}
		ab[n] = found[0]
	}
	if ab[0] == ab[1] {
		return fmt.Errorf("paired difference of row %q with itself", labels[0])
	}
	n := 0
	for j, col := range g.t.Columns {
		a, b := g.cells[ab[0]][j].scores, g.cells[ab[1]][j].scores
		if a == nil || b == nil {
			continue
		}
		if len(a) != len(b) {
			return fmt.Errorf("column %q: %q has %d scores and %q %d: a paired difference needs the same splits", col.Key, labels[0], len(a), labels[1], len(b))
		}
		d := make([]float64, len(a))
		for s := range a {
			d[s] = a[s] - b[s]
		}
		g.cells[i][j] = entry{present: true, ours: meanStd(d, g.t.DDof), scores: d}
		n++
	}
	if n == 0 {
		return fmt.Errorf("paired difference: no column holds experiments in both %q and %q", labels[0], labels[1])
	}
	return nil
}

// bestOf returns the best value of row i over columns cols, when the row
// has a value in each of them.
func (g *grid) bestOf(i int, cols []int) (float64, bool) {
	var best float64
	for n, j := range cols {
		e := g.cells[i][j]
		if !e.ours.ok {
			return 0, false
		}
		if n == 0 || (g.t.HigherIsBetter && e.ours.mean > best) || (!g.t.HigherIsBetter && e.ours.mean < best) {
			best = e.ours.mean
		}
	}
	return best, true
}

// markBestRows bolds the best displayed value of every row with at least
// two values (derived rows excepted); ties are all bold.
func (g *grid) markBestRows() {
	for i := range g.cells {
		if g.t.Rows[i].Derived != nil {
			continue
		}
		var best *big.Rat
		var js []int
		for j := range g.t.Columns {
			e := &g.cells[i][j]
			if !e.ours.ok {
				continue
			}
			js = append(js, j)
			r := g.rat(e.ours.mean)
			if best == nil || (g.t.HigherIsBetter && r.Cmp(best) > 0) || (!g.t.HigherIsBetter && r.Cmp(best) < 0) {
				best = r
			}
		}
		if len(js) < 2 {
			continue
		}
		for _, j := range slices.Clone(js) {
			e := &g.cells[i][j]
			e.best = g.rat(e.ours.mean).Cmp(best) == 0
		}
	}
}
