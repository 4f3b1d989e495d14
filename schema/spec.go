// Package schema defines spn's experiment specification: the CUE schema
// (schema.cue, embedded) and the Go loader that validates a spec file against
// it, applies defaults, unrolls hyper-parameter grids and returns a Spec.
package schema

import (
	"github.com/spn-project/spn/data/graphfile"
	"github.com/spn-project/spn/data/ogb"
	"github.com/spn-project/spn/data/prox"
	"github.com/spn-project/spn/schema/modelspec"
)

// Spec is one validated, defaults-filled experiment file.
type Spec struct {
	// Name is the spec's name (used for results/<name>/).
	Name string `json:"name"`
	// Description is free text.
	Description string `json:"description,omitempty"`
	// Device is the compute device as written: "cpu", "auto", "cuda" or
	// "cuda:N" (see ParseDevice). Commands resolve it to "cpu" or
	// "cuda:N" before planning.
	Device string `json:"device"`
	// Mode is "full" or "smoke".
	Mode string `json:"mode"`
	// File is the path the spec was loaded from ("<embedded>/..." for built-ins).
	File string `json:"-"`
	// Experiments in name order.
	Experiments []Experiment `json:"experiments"`
	// Tables in name order.
	Tables []Table `json:"tables"`
	// Figures in name order.
	Figures []Figure `json:"figures,omitempty"`
	// Executor configures the executors; it never enters stage keys.
	Executor Executor `json:"-"`
	// Unimported names the imported datasets that file datasets name and
	// that were not found under Options.DataDir (only with
	// Options.Unimported): their file checks were skipped.
	Unimported []string `json:"-"`
}

// Experiment is one dataset × model family × protocol, with its grid unrolled.
type Experiment struct {
	Name     string   `json:"name"`
	Dataset  Dataset  `json:"dataset"`
	Protocol Protocol `json:"protocol"`
	// Seeds are the base seeds; runs are seeded from them and the stage keys.
	Seeds []int64 `json:"seeds"`
	// Points are the grid points in a deterministic order (grid paths sorted,
	// values in declared order, last path varying fastest).
	Points []Point `json:"points"`
}

// Point is one fully resolved configuration of the grid.
type Point struct {
	// Values are the grid values that produced this point, e.g.
	// {"model.k": 5, "training.lr": 0.001}; empty when there is no grid.
	Values   []GridValue `json:"values,omitempty"`
	Model    Model       `json:"model"`
	Training Training    `json:"training"`
}

// GridValue is one path/value pair of a grid point.
type GridValue struct {
	Path  string `json:"path"`
	Value any    `json:"value"`
}

// Dataset selects and parameterises a dataset. Kind discriminates.
type Dataset struct {
	// Kind is "prox", "tu", "qm9", "ogb" or "file".
	Kind string `json:"kind"`
	// Name is the TU dataset name (DD, NCI1, PROTEINS, PROTEINS_full,
	// ENZYMES), the OGB set name (bbbp, tox21, ..., see data/ogb.Names)
	// or the name a file dataset was imported as.
	Name string `json:"name,omitempty"`
	// H is the h of h-Proximity.
	H int `json:"h,omitempty"`
	// Graphs is the total number of h-Prox graphs (half positive); 9000 in the paper.
	Graphs int `json:"graphs,omitempty"`
	// Levels and Width are the [min,max] ranges of the h-Prox generator.
	Levels [2]int `json:"levels,omitempty"`
	Width  [2]int `json:"width,omitempty"`
	// Seed seeds the generator and the generated splits.
	Seed int64 `json:"seed,omitempty"`
	// Folds is the number of generated folds (h-Prox).
	Folds int `json:"folds,omitempty"`
	// KMax is the largest hop distance precomputed (default 10).
	KMax int `json:"kmax"`
	// Unreachable keeps N_∞(u) in the precompute.
	Unreachable bool `json:"unreachable,omitempty"`
	// Targets are the QM9 properties predicted, by name, in order.
	Targets []string `json:"targets,omitempty"`
	// Source is QM9's training data: "film" or "valid-as-train".
	Source string `json:"source,omitempty"`
	// TrainSize is the number of valid-file molecules trained on with
	// source "valid-as-train".
	TrainSize int `json:"train_size,omitempty"`
	// Limit, when > 0, reads only the first Limit molecules of each file.
	Limit int `json:"limit,omitempty"`
	// Negatives is how h-Prox twins are drawn: "strict" (also "") or
	// "code" (the official generator's rule).
	Negatives string `json:"negatives,omitempty"`
	// Balanced gives every h-Prox positive one extra rule-keeping edge.
	Balanced bool `json:"balanced,omitempty"`
	// ColourBlind sets every h-Prox node label to 0.
	ColourBlind bool `json:"colour_blind,omitempty"`
	// Features is the OGB feature set: ogb.FeaturesFull (also "") or
	// ogb.FeaturesSimple.
	Features string `json:"features,omitempty"`
	// Path is a file dataset's JSON Lines file as the spec writes it
	// (relative to the spec file's folder).
	Path string `json:"path,omitempty"`
	// Task is a file dataset's task: "classification", "multilabel" or
	// "regression" (data/graphfile).
	Task string `json:"task,omitempty"`
	// File is where a file dataset's graphs are read (an absolute path:
	// Path resolved, or the imported dataset's stored file) and SHA256 is
	// that file's content hash, both filled when the spec loads. SHA256
	// enters the stage keys, File does not (stages.GenerateParams).
	File   string `json:"file,omitempty"`
	SHA256 string `json:"sha256,omitempty"`
	// Contents are what a file dataset's graphs hold (filled when the spec
	// loads; not encoded).
	Contents *graphfile.Contents `json:"-"`
}

// Canonical returns d with every optional field that holds its default
// spelled as absent, so that a spec writing a default out and one leaving
// it out describe the same dataset (and name the same stages).
func (d Dataset) Canonical() Dataset {
	if d.Negatives == prox.NegStrict {
		d.Negatives = ""
	}
	if d.Features == ogb.FeaturesFull {
		d.Features = ""
	}
	return d
}

// Model is a model section: the plain struct the model library reads
// (defined in schema/modelspec, which does not depend on CUE).
type Model = modelspec.Model

// Training is one optimisation configuration (schema/modelspec).
type Training = modelspec.Training

// Plateau is a reduce-on-plateau schedule, training.plateau (schema/modelspec).
type Plateau = modelspec.Plateau

// Protocol is the evaluation protocol.
type Protocol struct {
	// Kind is "holdout" (fixed splits × reruns), "errica" or "fixed" (the
	// dataset's own split × reruns); see stages/protocol.
	Kind string `json:"kind"`
	// Splits is how many of the dataset's fixed splits/outer folds are used.
	Splits int `json:"splits"`
	// Runs is the number of reruns per split (holdout) or final runs (errica).
	Runs int `json:"runs"`
	// SelectOn is "val_metric" or "val_loss": how grid points are compared.
	SelectOn string `json:"select_on"`
	// Metric is "accuracy", "mae", "rmse", "rocauc", "ap" or "film_error"
	// (models/metric).
	Metric string `json:"metric"`
}

// Table is one rendered table.
type Table struct {
	Name    string `json:"name"`
	Title   string `json:"title,omitempty"`
	Caption string `json:"caption,omitempty"`
	Label   string `json:"label,omitempty"`
	// Style is "results" or "compare" (paper vs reproduced).
	Style string `json:"style"`
	// Formats among "latex", "markdown", "csv".
	Formats []string `json:"formats"`
	// Scale multiplies values (100 for percentages); Digits after the point.
	Scale  float64 `json:"scale"`
	Digits int     `json:"digits"`
	// DDof is the std convention: 0 (population) or 1 (sample).
	DDof int `json:"ddof"`
	// StdOver is "splits" (per-split means) or "runs" (all run scores).
	StdOver string `json:"std_over"`
	// HigherIsBetter decides which value per column is bold.
	HigherIsBetter bool `json:"higher_is_better"`
	// Best is where bold values are sought: "" or "column" per column,
	// "row" per row.
	Best    string   `json:"best,omitempty"`
	Columns []Column `json:"columns"`
	Rows    []Row    `json:"rows"`
}

// RowsLabelled returns the indices of t's rows labelled label.
func (t Table) RowsLabelled(label string) []int {
	var out []int
	for i, r := range t.Rows {
		if r.Label == label {
			out = append(out, i)
		}
	}
	return out
}

// Column is one table column.
type Column struct {
	Key    string `json:"key"`
	Header string `json:"header"`
}

// Row is one table row; Cells maps column keys to cells.
type Row struct {
	Label string          `json:"label"`
	Cells map[string]Cell `json:"cells"`
	// Line, when true, draws a \midrule before this row.
	Line bool `json:"line,omitempty"`
	// Derived, when not nil, computes the row from the other rows.
	Derived *Derived `json:"derived,omitempty"`
}

// Cell is either a reference to an experiment's result or a cited constant.
type Cell struct {
	// Experiment names an experiment of the spec.
	Experiment string `json:"experiment,omitempty"`
	// Cited constant (e.g. from Errica et al.), already in table units.
	Mean   *float64 `json:"mean,omitempty"`
	Std    *float64 `json:"std,omitempty"`
	Source string   `json:"source,omitempty"`
	// Paper value to compare against (style "compare"), in table units.
	PaperMean *float64 `json:"paper_mean,omitempty"`
	PaperStd  *float64 `json:"paper_std,omitempty"`
}

// Derived row kinds (Derived.Kind; #Derived in schema.cue).
const (
	// DerivedMeanRelativeChange: per column, the mean over the other rows
	// of 100·(x − b)/b, b the row's best baseline value.
	DerivedMeanRelativeChange = "mean_relative_change"
	// DerivedPairedDifference: per column, the mean ± std of the
	// differences between two rows' experiments, split by split.
	DerivedPairedDifference = "paired_difference"
)

// Derived is a row computed from the table's other rows (see #Derived).
type Derived struct {
	// Kind is DerivedMeanRelativeChange (Baseline, Columns) or
	// DerivedPairedDifference (Rows).
	Kind     string   `json:"kind"`
	Baseline []string `json:"baseline,omitempty"`
	Columns  []string `json:"columns,omitempty"`
	// Rows are the labels of the two rows whose difference, first minus
	// second, a paired_difference row shows.
	Rows []string `json:"rows,omitempty"`
}
