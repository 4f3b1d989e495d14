package tabulate

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// MatrixVersion identifies the NAME.json format.
const MatrixVersion = 1

// Matrix is the content of NAME.json: the table as display text, for the
// terminal view.
type Matrix struct {
	// SPNTable is MatrixVersion; it marks the file as a rendered table.
	SPNTable int    `json:"spn_table"`
	Name     string `json:"name"`
	Title    string `json:"title,omitempty"`
	Caption  string `json:"caption,omitempty"`
	Style    string `json:"style"`
	// Header has one entry per printed column, the label column included.
	Header []string    `json:"header"`
	Rows   []MatrixRow `json:"rows"`
	// Notes are the footnotes (cited sources), in marker order.
	Notes []string `json:"notes,omitempty"`
	// Best is "row" when bold values are the best of each row (empty:
	// of each column).
	Best string `json:"best,omitempty"`
}

// MatrixRow is one printed row.
type MatrixRow struct {
	// Line is true when a rule precedes the row.
	Line  bool         `json:"line,omitempty"`
	Cells []MatrixCell `json:"cells"`
}

// MatrixCell is one printed cell.
type MatrixCell struct {
	Text string `json:"text"`
	// Best marks the best value of its column (style "results").
	Best bool `json:"best,omitempty"`
}

// textValue renders "M ± S", "M" or "--"; bold wraps the mean when best.
func (g *grid) textValue(v value, best bool, bold func(string) string) string {
	if !v.ok {
		return "--"
	}
	m := g.num(v.mean)
	if best {
		m = bold(m)
	}
	if v.hasStd {
		return m + " ± " + g.num(v.std)
	}
	return m
}

func (g *grid) textLabel(i int) string {
	s := g.t.Rows[i].Label
	if len(g.marks[i]) > 0 {
		s += " "
		for _, k := range g.marks[i] {
			s += marker(k, false)
		}
	}
	return s
}

func (g *grid) notes() []string {
	var out []string
	for k, s := range g.sources {
		out = append(out, marker(k, false)+" "+sourceText(s))
	}
	return out
}

// matrix lays the table out as text cells; bold formats best means.
func (g *grid) matrix(bold func(string) string) Matrix {
	t := g.t
	m := Matrix{SPNTable: MatrixVersion, Name: t.Name, Title: t.Title, Caption: t.Caption, Style: t.Style, Notes: g.notes()}
	if t.Best == BestRow {
		m.Best = BestRow
	}
	if t.Style == StyleCompare {
		m.Header = []string{"", "", "Paper", "Ours", "Δ", "Within std"}
		first := true
		for i, r := range t.Rows {
			label, rowStart := g.textLabel(i), true
			for j, col := range t.Columns {
				e := g.cells[i][j]
				if !e.present {
					continue
				}
				c := g.compare(e)
				row := MatrixRow{Line: r.Line && rowStart && !first}
				for _, s := range []string{label, col.Header, g.textValue(e.paper, false, bold), g.textValue(e.ours, false, bold), c.diff, c.within} {
					row.Cells = append(row.Cells, MatrixCell{Text: s})
				}
				m.Rows = append(m.Rows, row)
				first, rowStart, label = false, false, ""
			}
		}
		return m
	}
	m.Header = []string{""}
	for _, c := range t.Columns {
		m.Header = append(m.Header, c.Header)
	}
	for i, r := range t.Rows {
		row := MatrixRow{Line: r.Line && i > 0, Cells: []MatrixCell{{Text: g.textLabel(i)}}}
		for j := range t.Columns {
			e := g.cells[i][j]
			row.Cells = append(row.Cells, MatrixCell{Text: g.textValue(e.ours, e.best, bold), Best: e.best})
		}
		m.Rows = append(m.Rows, row)
	}
	return m
}

func (g *grid) json() []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(g.matrix(func(s string) string { return s })); err != nil {
		return nil // A Matrix holds only strings and bools: encoding cannot fail.
	}
	return b.Bytes()
}

var mdEscaper = strings.NewReplacer("|", `\|`)

func (g *grid) markdown() []byte {
	m := g.matrix(func(s string) string { return "**" + s + "**" })
	var b bytes.Buffer
	if m.Title != "" {
		b.WriteString("### " + m.Title + "\n\n")
	}
	line := func(cells []string) {
		b.WriteString("|")
		for _, c := range cells {
			b.WriteString(" " + mdEscaper.Replace(c) + " |")
		}
		b.WriteString("\n")
	}
	line(m.Header)
	align := make([]string, len(m.Header))
	for i := range align {
		align[i] = ":---:"
		if i == 0 || (m.Style == StyleCompare && i == 1) {
			align[i] = ":---"
		}
	}
	b.WriteString("|" + strings.Join(align, "|") + "|\n")
	for _, r := range m.Rows {
		cells := make([]string, len(r.Cells))
		for i, c := range r.Cells {
			cells[i] = c.Text
		}
		line(cells)
	}
	if len(m.Notes) > 0 {
		b.WriteString("\n" + strings.Join(m.Notes, "<br>\n") + "\n")
	}
	if m.Caption != "" {
		b.WriteString("\n" + m.Caption + "\n")
	}
	return b.Bytes()
}

func fullNum(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

func (g *grid) csv() ([]byte, error) {
	t := g.t
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	cmp := t.Style == StyleCompare
	head := []string{"row", "column", "mean", "std", "n", "cited", "source"}
	if cmp {
		head = append(head, "paper_mean", "paper_std", "diff", "within")
	}
	if err := w.Write(head); err != nil {
		return nil, fmt.Errorf("writing csv: %w", err)
	}
	opt := func(ok bool, v float64) string {
		if !ok {
			return ""
		}
		return fullNum(v)
	}
	for i, r := range t.Rows {
		for j, col := range t.Columns {
			e := g.cells[i][j]
			if cmp && !e.present {
				continue
			}
			n := ""
			if len(e.scores) > 0 {
				n = strconv.Itoa(len(e.scores))
			}
			rec := []string{r.Label, col.Key, opt(e.ours.ok, e.ours.mean), opt(e.ours.hasStd, e.ours.std), n, strconv.FormatBool(e.cited), e.source}
			if cmp {
				c := g.compare(e)
				within := c.within
				if within == "--" {
					within = ""
				}
				rec = append(rec, opt(e.paper.ok, e.paper.mean), opt(e.paper.hasStd, e.paper.std), opt(c.ok, e.ours.mean-e.paper.mean), within)
			}
			if err := w.Write(rec); err != nil {
				return nil, fmt.Errorf("writing csv: %w", err)
			}
		}
	}
	w.Flush()
	if err := w.Error(); err != nil {
		return nil, fmt.Errorf("writing csv: %w", err)
	}
	return b.Bytes(), nil
}
