package tabulate

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/spn-project/spn/schema"
	"github.com/spn-project/spn/stages"
)

// Why an experiment of a partial table has no results.
const (
	// Failed: a run with --keep-going in which the experiments failed.
	Failed = "experiments that did not finish (%s); see the run's log, fix and run again."
	// NotYet: spn table --partial, the experiments not run (or not
	// finished) yet.
	NotYet = "experiments without results yet (%s)."
)

// Partial returns a copy of t for rendering while the experiments in
// missing have no results, for the reason why (Failed or NotYet): their
// cells are left out, so they show as "--" like any missing cell, and the
// caption says which experiments they are and why. Such a table is
// written to the results folder but never cached as the table's stage.
func Partial(t schema.Table, missing []string, why string) schema.Table {
	if len(missing) == 0 {
		return t
	}
	gone := map[string]bool{}
	for _, m := range missing {
		gone[m] = true
	}
	out := t
	out.Rows = make([]schema.Row, len(t.Rows))
	for i, r := range t.Rows {
		r.Cells = maps.Clone(r.Cells)
		for k, c := range r.Cells {
			if c.Experiment != "" && gone[c.Experiment] {
				delete(r.Cells, k)
			}
		}
		out.Rows[i] = r
	}
	names := slices.Sorted(maps.Keys(gone))
	note := "Incomplete: cells shown as -- are " + fmt.Sprintf(why, strings.Join(names, ", "))
	if out.Caption != "" {
		out.Caption += " "
	}
	out.Caption += note
	return out
}

// withNotes appends to t's caption the notes of the experiments its cells
// show (grid points model selection excluded because training diverged),
// in experiment name order, so every format says that a cell's protocol
// ran on fewer points than the spec lists.
func withNotes(t schema.Table, results map[string]*stages.EvalResult) schema.Table {
	used := map[string]bool{}
	for _, r := range t.Rows {
		for _, c := range r.Cells {
			if c.Experiment != "" {
				used[c.Experiment] = true
			}
		}
	}
	var notes []string
	for _, e := range slices.Sorted(maps.Keys(used)) {
		if r := results[e]; r != nil {
			for _, n := range r.Notes {
				notes = append(notes, e+": "+n)
			}
		}
	}
	if len(notes) == 0 {
		return t
	}
	if t.Caption != "" {
		t.Caption += " "
	}
	t.Caption += "Diverged training runs: " + strings.Join(notes, "; ") + "."
	return t
}
