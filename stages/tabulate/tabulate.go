// Package tabulate implements the "tabulate" stage kind: it renders one
// schema.Table from the results of evaluate stages into LaTeX, Markdown,
// CSV and a JSON cell matrix that PrintTerminal shows.
//
// Rendering rules, shared by every format:
//
//   - A computed cell shows mean ± std of the experiment's SplitScores (or RunScores with std_over: "runs"),
//     both multiplied by Table.Scale and printed with Table.Digits decimals
//     (strconv 'f' formatting; "-0.0" is printed as "0.0"). The std uses
//     Table.DDof (0: population, 1: sample); when there are not more scores
//     than DDof the std is left out and only the mean is shown.
//   - A cited cell (Cell.Mean, optional Cell.Std, already in table units)
//     is shown like a computed one; its row label gets a marker (†, ‡, §,
//     ¶, then doubled: ††, ...), one per distinct Source in order of first
//     appearance, and a footnote "MARKER cited from SOURCE" under the table.
//   - A column key with no cell in a row is missing and shown as "--".
//   - Style "results": the best mean of every column with at least two
//     values is bold (highest or lowest by HigherIsBetter); means are
//     compared as displayed (rounded), so equal displayed values tie and are
//     all bold. Cited values take part.
//   - Style "compare" (paper vs reproduced) is laid out long: one line per
//     (row, column) pair that has a cell, with the paper's value
//     (PaperMean ± PaperStd), ours (mean ± std), the difference ours −
//     paper and whether ours lies within the paper's std (|diff| ≤
//     PaperStd). Difference and "within" are computed exactly on the
//     displayed (rounded) decimals, so the printed numbers agree with each
//     other; the CSV also holds the full-precision difference.
//   - LaTeX text (row labels, headers, title, caption, sources): a string
//     containing "$" is taken verbatim (the author wrote LaTeX); otherwise
//     the characters _ % & # are escaped. Other LaTeX (e.g. \textsc{...})
//     passes through. Markdown escapes "|".
//
// Files: NAME.tex (booktabs tabular, inside a table environment when the
// table has a title, caption or label), NAME.md (GitHub Markdown; Row.Line
// has no Markdown equivalent and is dropped), NAME.csv and NAME.json (a
// Matrix). The CSV has a header line and one line per (row, column) cell —
// style "results": row,column,mean,std,n,cited,source (missing cells have
// empty numbers); style "compare": the same plus paper_mean,paper_std,diff,
// within, for the pairs that have a cell. Numbers are in table units
// (after Scale) with full precision (strconv 'g', -1); n is the number of
// split scores of a computed cell.
//
// Output depends only on the table and the results: same input, same bytes.
package tabulate

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/spn-project/spn/schema"
	"github.com/spn-project/spn/stages"
	"github.com/spn-project/spn/stages/selection"
)

// Kind is the tabulate stage kind. Inputs: the evaluate stages of the
// experiments named in TabulateParams.ExperimentNames, in that order.
// Artifacts: NAME.tex, NAME.md, NAME.csv for the requested formats
// ("latex", "markdown", "csv") and always NAME.json.
type Kind struct{}

// Name returns "tabulate".
func (Kind) Name() string { return stages.KindTabulate }

// Version returns the kind's version.
func (Kind) Version() string { return "1" }

// Run reads the evaluate results, renders the table and writes its files.
func (Kind) Run(ctx context.Context, job *stages.Job) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	var p stages.TabulateParams
	if err := job.Decode(&p); err != nil {
		return err
	}
	results, err := ReadResults(p.ExperimentNames, job.InputsOf(stages.KindEvaluate))
	if err != nil {
		return err
	}
	warnDirection(job, p.Table, results)
	files, err := Render(p.Table, results)
	if err != nil {
		return err
	}
	return WriteFiles(job.Dir, files)
}

// ReadResults reads the EvalResult of each input and maps it to the
// experiment name at the same position.
func ReadResults(names []string, inputs []stages.Input) (map[string]*stages.EvalResult, error) {
	if len(names) != len(inputs) {
		return nil, fmt.Errorf("got %d evaluate inputs for %d experiments %q", len(inputs), len(names), names)
	}
	out := make(map[string]*stages.EvalResult, len(names))
	for i, name := range names {
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("experiment %q listed twice", name)
		}
		r, err := selection.ReadEvalResult(inputs[i].Dir)
		if err != nil {
			return nil, fmt.Errorf("experiment %q: %w", name, err)
		}
		out[name] = r
	}
	return out, nil
}

// warnDirection logs a warning when the table bolds the highest values but
// an experiment's metric is lower-is-better, or the other way round.
func warnDirection(job *stages.Job, t schema.Table, results map[string]*stages.EvalResult) {
	if job.Log == nil || t.Style != StyleResults {
		return
	}
	names := make([]string, 0, len(results))
	for n := range results {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		lower, err := selection.LowerIsBetter(selection.SelectOnValMetric, results[n].Metric)
		if err == nil && lower == t.HigherIsBetter {
			job.Log.Warn("table bolds values in the direction opposite to an experiment's metric",
				"table", t.Name, "experiment", n, "metric", results[n].Metric, "higher_is_better", t.HigherIsBetter)
		}
	}
}

// WriteFiles writes files (name → content) into dir, in name order.
func WriteFiles(dir string, files map[string][]byte) error {
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if err := os.WriteFile(filepath.Join(dir, n), files[n], 0o644); err != nil {
			return fmt.Errorf("writing table: %w", err)
		}
	}
	return nil
}
