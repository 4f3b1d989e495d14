package schema

import (
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"cuelang.org/go/cue"
)

// Figure kinds.
const (
	FigureDiameters  = "diameters"
	FigureHopWeights = "hop_weights"
)

// Figure is one rendered figure (see #Figure in schema.cue).
type Figure struct {
	Name       string `json:"name"`
	Kind       string `json:"kind"`
	Experiment string `json:"experiment"`
	Title      string `json:"title,omitempty"`
	Caption    string `json:"caption,omitempty"`
	Label      string `json:"label,omitempty"`
	// Formats among "png", "svg", "csv", "tex".
	Formats []string `json:"formats"`
	// Layers are the 1-based layers of a hop_weights figure (nil: the
	// first and the last).
	Layers []int `json:"layers,omitempty"`
	// Paper holds values to compare with: percent per diameter, or α per
	// layer (a list).
	Paper       map[string]any `json:"paper,omitempty"`
	PaperSource string         `json:"paper_source,omitempty"`
	// Width and Height in centimetres.
	Width  float64 `json:"width"`
	Height float64 `json:"height"`
}

// figure decodes one figure and checks its experiment and paper values.
func (l *loader) figure(name string, v cue.Value, exps []Experiment, names map[string]bool) Figure {
	base := []string{"figures", name}
	at := func(rest ...string) []string { return append(slices.Clone(base), rest...) }
	f := Figure{Name: name}
	if !l.decodeInto(base, v, &f) {
		return f
	}
	f.Name = name
	if f.Formats == nil {
		f.Formats = []string{}
	}
	if !names[f.Experiment] {
		l.errAt(at("experiment"), "no experiment named %q in this spec", f.Experiment)
		return f
	}
	if len(f.Paper) > 0 && f.PaperSource == "" {
		l.errAt(at("paper"), "paper values need their source (paper_source)")
	}
	i := slices.IndexFunc(exps, func(e Experiment) bool { return e.Name == f.Experiment })
	if i < 0 {
		return f // the experiment failed to decode; reported there
	}
	e := exps[i]
	for _, k := range slices.Sorted(maps.Keys(f.Paper)) {
		n, err := strconv.Atoi(k)
		_, isList := f.Paper[k].([]any)
		switch {
		case err != nil || n < 0:
			l.errAt(at("paper", k), "key %q: want a diameter or a layer number", k)
		case f.Kind == FigureDiameters && isList:
			l.errAt(at("paper", k), "diameters: want one percentage per diameter, not a list")
		case f.Kind == FigureHopWeights && !isList:
			l.errAt(at("paper", k), "hop_weights: want the list α_1..α_k of layer %s", k)
		}
	}
	if f.Kind == FigureHopWeights {
		if len(e.Points) != 1 {
			l.errAt(at("experiment"), "a hop_weights figure needs an experiment with one grid point; %s has %d", e.Name, len(e.Points))
			return f
		}
		m := e.Points[0].Model
		if m.K < 1 || m.Kind == "baseline" {
			l.errAt(at("experiment"), "experiment %s (model %s) learns no hop weights", e.Name, m.Kind)
		}
		for j, layer := range f.Layers {
			if layer > m.Layers {
				l.errAt(at("layers", strconv.Itoa(j)), "layer %d: the model of %s has %d layers", layer, e.Name, m.Layers)
			}
		}
	}
	return f
}

// sourceCaptions checks that every table and figure made from QM9's
// "valid-as-train" source says so in its caption: those numbers are not
// the paper's protocol, and nothing may substitute for it silently.
func (l *loader) sourceCaptions(spec *Spec) {
	const mark = "valid-as-train"
	substitute := map[string]bool{}
	for _, e := range spec.Experiments {
		if e.Dataset.Kind == "qm9" && e.Dataset.Source == mark {
			substitute[e.Name] = true
		}
	}
	if len(substitute) == 0 {
		return
	}
	for _, t := range spec.Tables {
		if strings.Contains(t.Caption, mark) {
			continue
		}
		for _, r := range t.Rows {
			if exp := usesAny(r, substitute); exp != "" {
				l.errAt([]string{"tables", t.Name, "caption"}, "experiment %s trains on QM9's valid file (source %q): the caption must say so (contain %q)", exp, mark, mark)
				break
			}
		}
	}
	for _, f := range spec.Figures {
		if substitute[f.Experiment] && !strings.Contains(f.Caption, mark) {
			l.errAt([]string{"figures", f.Name, "caption"}, "experiment %s trains on QM9's valid file (source %q): the caption must say so (contain %q)", f.Experiment, mark, mark)
		}
	}
}

func usesAny(r Row, exps map[string]bool) string {
	for _, k := range slices.Sorted(maps.Keys(r.Cells)) {
		if exps[r.Cells[k].Experiment] {
			return r.Cells[k].Experiment
		}
	}
	return ""
}

// derivedRow checks derived row i of t: no cells; known column keys
// (mean_relative_change); two distinct rows of t, not derived, each label
// held by one row (paired_difference).
func (l *loader) derivedRow(at []string, t Table, i int, keys map[string]bool) {
	r := t.Rows[i]
	if len(r.Cells) > 0 {
		l.errAt(append(slices.Clone(at), "cells"), "a derived row is computed from the other rows and has no cells")
	}
	for _, f := range []struct {
		name string
		keys []string
	}{{"baseline", r.Derived.Baseline}, {"columns", r.Derived.Columns}} {
		for j, k := range f.keys {
			if !keys[k] {
				l.errAt(append(slices.Clone(at), "derived", f.name, strconv.Itoa(j)), "no column with key %q", k)
			}
		}
	}
	if len(r.Derived.Rows) == 2 && r.Derived.Rows[0] == r.Derived.Rows[1] {
		l.errAt(append(slices.Clone(at), "derived", "rows", "1"), "a paired difference needs two different rows, not %q twice", r.Derived.Rows[0])
		return
	}
	for j, label := range r.Derived.Rows {
		found := t.RowsLabelled(label)
		rp := append(slices.Clone(at), "derived", "rows", strconv.Itoa(j))
		switch {
		case len(found) == 0:
			l.errAt(rp, "no row labelled %q in this table", label)
		case len(found) > 1:
			l.errAt(rp, "%d rows are labelled %q: a paired difference needs one", len(found), label)
		case t.Rows[found[0]].Derived != nil:
			l.errAt(rp, "row %q is derived itself: a paired difference takes rows of experiments", label)
		}
	}
}

// pairedSplits checks that the two experiments a paired_difference row
// sets against each other in a column are tested on the same splits: the
// same dataset, protocol kind and number of splits. Otherwise their
// scores do not pair split by split.
func (l *loader) pairedSplits(spec *Spec) {
	exps := map[string]*Experiment{}
	for i := range spec.Experiments {
		exps[spec.Experiments[i].Name] = &spec.Experiments[i]
	}
	row := func(t Table, label string) *Row {
		if found := t.RowsLabelled(label); len(found) == 1 {
			return &t.Rows[found[0]]
		}
		return nil // derivedRow reports it
	}
	for _, t := range spec.Tables {
		for i, r := range t.Rows {
			d := r.Derived
			if d == nil || d.Kind != DerivedPairedDifference || len(d.Rows) != 2 {
				continue
			}
			a, b := row(t, d.Rows[0]), row(t, d.Rows[1])
			if a == nil || b == nil {
				continue
			}
			for _, c := range t.Columns {
				ea, eb := exps[a.Cells[c.Key].Experiment], exps[b.Cells[c.Key].Experiment]
				if ea == nil || eb == nil || (reflect.DeepEqual(ea.Dataset, eb.Dataset) &&
					ea.Protocol.Kind == eb.Protocol.Kind && ea.Protocol.Splits == eb.Protocol.Splits) {
					continue
				}
				l.errAt([]string{"tables", t.Name, "rows", strconv.Itoa(i), "derived", "rows"},
					"column %q: experiments %s and %s are not tested on the same splits (their datasets or protocols differ), so their scores do not pair", c.Key, ea.Name, eb.Name)
			}
		}
	}
}
