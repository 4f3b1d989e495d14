package tabulate

import (
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/tw"
	"github.com/spn-project/spn/internal/jsonpos"
	"github.com/spn-project/spn/stages"
)

// PrintTerminal prints the tables of a tabulate stage directory to w: for
// every NAME.json in stageDir (in name order; record.json, result.json and
// JSON files that are not rendered tables are skipped) its title, the table
// and its footnotes. The best value of a column is marked with "*".
func PrintTerminal(w io.Writer, stageDir string) error {
	ms, err := readMatrices(stageDir)
	if err != nil {
		return err
	}
	for i, m := range ms {
		if i > 0 {
			if _, err := fmt.Fprintln(w); err != nil {
				return err
			}
		}
		if err := printMatrix(w, m); err != nil {
			return fmt.Errorf("printing table %s of %s: %w", m.Name, stageDir, err)
		}
	}
	return nil
}

// readMatrices reads the rendered tables of a tabulate stage directory:
// every NAME.json in name order, less record.json, result.json and JSON
// that is not a rendered table. None is an error.
func readMatrices(stageDir string) ([]Matrix, error) {
	paths, err := filepath.Glob(filepath.Join(stageDir, "*.json"))
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", stageDir, err)
	}
	sort.Strings(paths)
	var ms []Matrix
	for _, p := range paths {
		base := filepath.Base(p)
		if base == stages.FileRecord || base == stages.FileResult {
			continue
		}
		m, ok, err := readMatrix(p)
		if err != nil {
			return nil, err
		}
		if ok {
			ms = append(ms, m)
		}
	}
	if len(ms) == 0 {
		return nil, fmt.Errorf("no rendered table in %s", stageDir)
	}
	return ms, nil
}

// readMatrix reads path; ok is false for JSON that is not a rendered table.
func readMatrix(path string) (m Matrix, ok bool, err error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return m, false, fmt.Errorf("reading table: %w", err)
	}
	var probe struct {
		SPNTable *int `json:"spn_table"`
	}
	if err := json.Unmarshal(b, &probe); err != nil || probe.SPNTable == nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return m, false, jsonpos.Wrap(path, b, fmt.Errorf("corrupted JSON: %w", err))
		}
		return m, false, nil
	}
	if *probe.SPNTable != MatrixVersion {
		return m, false, fmt.Errorf("%s: table format %d, want %d", path, *probe.SPNTable, MatrixVersion)
	}
	if err := jsonpos.Strict(path, b, &m); err != nil {
		return m, false, err
	}
	for i, r := range m.Rows {
		if len(r.Cells) != len(m.Header) {
			return m, false, fmt.Errorf("%s: row %d has %d cells, header has %d", path, i, len(r.Cells), len(m.Header))
		}
	}
	return m, true, nil
}

func printMatrix(w io.Writer, m Matrix) error {
	title := m.Title
	if title == "" {
		title = m.Name
	}
	if _, err := fmt.Fprintln(w, title); err != nil {
		return err
	}
	align := make(tw.Alignment, len(m.Header))
	for i := range align {
		align[i] = tw.AlignCenter
		if i == 0 || (m.Style == StyleCompare && i == 1) {
			align[i] = tw.AlignLeft
		}
	}
	tab := tablewriter.NewTable(w,
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithHeaderAutoWrap(tw.WrapNone),
		tablewriter.WithRowAutoWrap(tw.WrapNone),
		tablewriter.WithAlignment(align),
	)
	header := make([]any, len(m.Header))
	for i, h := range m.Header {
		header[i] = h
	}
	tab.Header(header...)
	anyBest := false
	for _, r := range m.Rows {
		cells := make([]string, len(r.Cells))
		for i, c := range r.Cells {
			cells[i] = c.Text
			if c.Best {
				cells[i] += " *"
				anyBest = true
			}
		}
		if err := tab.Append(cells); err != nil {
			return err
		}
	}
	if err := tab.Render(); err != nil {
		return err
	}
	notes := tableNotes(m, anyBest, "*")
	if len(notes) > 0 {
		if _, err := fmt.Fprintln(w, strings.Join(notes, "\n")); err != nil {
			return err
		}
	}
	return nil
}

// WriteHTML writes the tables of a tabulate stage directory to w as HTML
// tables, in the order PrintTerminal prints them: a caption with the
// title, the header, best values in <strong> inside a cell of class
// "best", then the footnotes and the caption as a paragraph. Every text is
// HTML-escaped.
func WriteHTML(w io.Writer, stageDir string) error {
	ms, err := readMatrices(stageDir)
	if err != nil {
		return err
	}
	var b strings.Builder
	for _, m := range ms {
		esc := html.EscapeString
		fmt.Fprintf(&b, "<table class=\"spn-table\" id=\"table-%s\">\n", esc(m.Name))
		title := m.Title
		if title == "" {
			title = m.Name
		}
		fmt.Fprintf(&b, "<caption>%s</caption>\n<thead><tr>", esc(title))
		for _, h := range m.Header {
			fmt.Fprintf(&b, "<th>%s</th>", esc(h))
		}
		b.WriteString("</tr></thead>\n<tbody>\n")
		anyBest := false
		for _, r := range m.Rows {
			if r.Line {
				b.WriteString("<tr class=\"rule\">")
			} else {
				b.WriteString("<tr>")
			}
			for i, c := range r.Cells {
				tag := "td"
				if i == 0 {
					tag = "th"
				}
				if c.Best {
					anyBest = true
					fmt.Fprintf(&b, "<%s class=\"best\"><strong>%s</strong></%s>", tag, esc(c.Text), tag)
				} else {
					fmt.Fprintf(&b, "<%s>%s</%s>", tag, esc(c.Text), tag)
				}
			}
			b.WriteString("</tr>\n")
		}
		b.WriteString("</tbody>\n</table>\n")
		notes := tableNotes(m, anyBest, "bold:")
		if len(notes) > 0 {
			b.WriteString("<p class=\"table-notes\">")
			for i, s := range notes {
				if i > 0 {
					b.WriteString("<br>")
				}
				b.WriteString(esc(s))
			}
			b.WriteString("</p>\n")
		}
	}
	_, err = io.WriteString(w, b.String())
	return err
}

// tableNotes returns the lines under a table: the best-cell mark's
// meaning (mark, then "best in row" or "best in column") when a cell is
// marked, the table's notes, and its caption.
func tableNotes(m Matrix, anyBest bool, mark string) []string {
	var notes []string
	if anyBest {
		if m.Best == BestRow {
			notes = append(notes, mark+" best in row")
		} else {
			notes = append(notes, mark+" best in column")
		}
	}
	notes = append(notes, m.Notes...)
	if m.Caption != "" {
		notes = append(notes, m.Caption)
	}
	return notes
}
