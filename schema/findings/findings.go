// Package findings is the machine-readable form of spec problems: what
// spn vet (and spn plan, before it plans) reports, as findings with a
// position, a mode and the kind of check that found them, written as text
// lines for people, as a JSON array, as GitHub Actions workflow commands
// or as a SARIF 2.1.0 log.
package findings

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spn-project/spn/schema"
)

// SeverityError is the severity of every finding: each makes the spec
// unusable.
const SeverityError = "error"

// CheckIO is the check of a spec file that cannot be read at all.
const CheckIO = "io"

// Finding is one problem of a spec file.
type Finding struct {
	// File is the spec file as given on the command line.
	File string
	// Line and Col count from 1 (Col in bytes, as CUE counts); 0 when
	// the position is unknown (an unreadable file).
	Line, Col int
	// Path is the CUE path of the offending value ("" for syntax errors).
	Path string
	// Modes are the modes the problem was found in, in schema.Modes
	// order; empty when it does not depend on one (a syntax error).
	Modes []string
	// Message says what is wrong.
	Message string
	// Severity is SeverityError.
	Severity string
	// Check is the kind of check that found it: one of schema.Checks or
	// CheckIO.
	Check string
}

// Mode is the finding's modes as one string, comma-separated ("full",
// "full,smoke"; "" for none).
func (f Finding) Mode() string { return strings.Join(f.Modes, ",") }

// FromError converts the error of loading file into findings: one per
// schema.Error, or one without a position for any other error (the file
// cannot be read).
func FromError(file string, err error) []Finding {
	if err == nil {
		return nil
	}
	var errs schema.Errors
	if !errors.As(err, &errs) {
		return []Finding{{File: file, Message: err.Error(), Severity: SeverityError, Check: CheckIO}}
	}
	out := make([]Finding, 0, len(errs))
	for _, e := range errs {
		f := Finding{File: e.File, Line: e.Line, Col: e.Col, Path: e.Path, Message: e.Msg,
			Severity: SeverityError, Check: cmp.Or(e.Check, schema.CheckSchema)}
		if e.Mode != "" {
			f.Modes = []string{e.Mode}
		}
		out = append(out, f)
	}
	return out
}

// Merge returns fs sorted by file, position, path and message, with the
// findings that differ only in their modes merged into one that lists
// them all: a fault in what every mode shares is one fault, reported once.
func Merge(fs []Finding) []Finding {
	type key struct {
		file, path, msg, check string
		line, col              int
	}
	idx := map[key]int{}
	var out []Finding
	for _, f := range fs {
		k := key{f.File, f.Path, f.Message, f.Check, f.Line, f.Col}
		i, ok := idx[k]
		if !ok {
			idx[k] = len(out)
			f.Modes = slices.Clone(f.Modes)
			out = append(out, f)
			continue
		}
		for _, m := range f.Modes {
			if !slices.Contains(out[i].Modes, m) {
				out[i].Modes = append(out[i].Modes, m)
			}
		}
	}
	for i := range out {
		slices.SortFunc(out[i].Modes, func(a, b string) int { return cmp.Compare(modeRank(a), modeRank(b)) })
	}
	slices.SortStableFunc(out, func(a, b Finding) int {
		return cmp.Or(cmp.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line), cmp.Compare(a.Col, b.Col),
			cmp.Compare(a.Path, b.Path), cmp.Compare(a.Message, b.Message))
	})
	return out
}

// modeRank orders modes as schema.Modes lists them.
func modeRank(m string) int {
	if i := slices.Index(schema.Modes, m); i >= 0 {
		return i
	}
	return len(schema.Modes)
}

// Formats are the output formats, "text" first (the default).
var Formats = []string{"text", "json", "github", "sarif"}

// CheckFormat returns an error unless f is one of Formats.
func CheckFormat(f string) error {
	if slices.Contains(Formats, f) {
		return nil
	}
	return fmt.Errorf("format %q is not one of %s", f, strings.Join(Formats, ", "))
}

// Options controls Write.
type Options struct {
	// Format is one of Formats.
	Format string
	// ShowModes adds the modes to each text line.
	ShowModes bool
	// ToolVersion is spn's version, for the SARIF log's driver.
	ToolVersion string
}

// Write writes fs in opt.Format. Text writes one line per finding;
// json one array (empty when fs is); github one workflow command per
// finding; sarif one log with one run (without results when fs is empty).
func Write(w io.Writer, fs []Finding, opt Options) error {
	var err error
	switch opt.Format {
	case "text", "":
		err = writeText(w, fs, opt.ShowModes)
	case "json":
		err = writeJSON(w, fs)
	case "github":
		err = writeGitHub(w, fs)
	case "sarif":
		err = writeSARIF(w, fs, opt.ToolVersion)
	default:
		return CheckFormat(opt.Format)
	}
	if err != nil {
		return fmt.Errorf("writing findings as %s: %w", cmp.Or(opt.Format, "text"), err)
	}
	return nil
}

// Text is f as a line for people: "file:line:col: path: message", with
// " (mode M)" or " (modes M1, M2)" when showModes is set and f has modes.
func Text(f Finding, showModes bool) string {
	var b strings.Builder
	b.WriteString(f.File)
	if f.Line > 0 {
		fmt.Fprintf(&b, ":%d:%d", f.Line, f.Col)
	}
	b.WriteString(": ")
	if f.Path != "" {
		b.WriteString(f.Path + ": ")
	}
	b.WriteString(f.Message)
	if showModes && len(f.Modes) > 0 {
		word := "mode"
		if len(f.Modes) > 1 {
			word = "modes"
		}
		fmt.Fprintf(&b, " (%s %s)", word, strings.Join(f.Modes, ", "))
	}
	return b.String()
}

func writeText(w io.Writer, fs []Finding, showModes bool) error {
	for _, f := range fs {
		if _, err := fmt.Fprintln(w, Text(f, showModes)); err != nil {
			return err
		}
	}
	return nil
}
