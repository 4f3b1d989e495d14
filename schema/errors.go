package schema

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/spn-project/spn/schema/modelspec"
)

// Error is one problem found in a spec file, positioned in that file.
type Error struct {
	// File is the spec file's name as given to Load or LoadBytes.
	File string
	// Line and Col count from 1; 0 when the position is unknown.
	Line, Col int
	// Path is the CUE path of the offending value, e.g.
	// experiments.spn_k5.model.kind; empty for syntax errors.
	Path string
	// Msg says what is wrong.
	Msg string
	// Check is the kind of check that found the problem: one of Checks.
	Check string
	// Mode is the mode the spec was loaded in ("" when the problem was
	// found before the spec's mode was known, e.g. a syntax error).
	Mode string
}

// The kinds of check that find spec errors (Error.Check), in the order
// Checks lists them.
const (
	// CheckSyntax: the file does not parse, or declares no "package spn".
	CheckSyntax = "syntax"
	// CheckSchema: the CUE schema and the Go-side checks of values (types,
	// bounds, unknown fields, grids, dataset and protocol rules).
	CheckSchema = "schema"
	// CheckModel: a model kind's own constraints (schema.ModelChecker).
	CheckModel = "model-check"
	// CheckTable: the tables and figures and what they refer to
	// (experiments, columns, rows).
	CheckTable = "table-reference"
	// CheckLimits: the bounds on a spec's size (bytes, list and string
	// lengths, grid points, seeds).
	CheckLimits = "limits"
)

// Checks lists the kinds of check.
var Checks = []string{CheckSyntax, CheckSchema, CheckModel, CheckTable, CheckLimits}

// Error formats e as "file:line:col: path: message" (without "path: " when
// the path is empty).
func (e Error) Error() string {
	if e.Path == "" {
		return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Col, e.Msg)
	}
	return fmt.Sprintf("%s:%d:%d: %s: %s", e.File, e.Line, e.Col, e.Path, e.Msg)
}

// Errors is a list of spec errors, sorted by position and free of
// duplicates when returned by this package.
type Errors []Error

// Error joins the errors, one per line.
func (es Errors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// normalize sorts es by file, position, path and message and removes
// duplicates.
func (es Errors) normalize() Errors {
	out := slices.Clone(es)
	slices.SortFunc(out, func(a, b Error) int {
		return cmp.Or(
			cmp.Compare(a.File, b.File),
			cmp.Compare(a.Line, b.Line),
			cmp.Compare(a.Col, b.Col),
			cmp.Compare(a.Path, b.Path),
			cmp.Compare(a.Msg, b.Msg),
			cmp.Compare(a.Check, b.Check),
			cmp.Compare(a.Mode, b.Mode),
		)
	})
	return slices.Compact(out)
}

// FieldError is a problem with one field of a model section
// (schema/modelspec).
type FieldError = modelspec.FieldError

// ModelChecker checks a model section beyond its CUE definition: the
// constraints of its kind, against what the dataset declares (kmax,
// relations, categorical features; see InfoOf). The registry of model
// kinds (models.Registry) implements it; spn's commands pass it in
// Options.Models.
type ModelChecker interface {
	CheckModel(m Model, d DatasetInfo) []FieldError
}
