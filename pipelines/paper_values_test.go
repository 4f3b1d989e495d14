package pipelines

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spn-project/spn/internal/testkit/mirrortest"
	"github.com/spn-project/spn/schema"
)

// paperTable is one table of results.json: rows × columns of [mean, std].
type paperTable struct {
	Rows map[string]map[string][2]float64 `json:"rows"`
}

// rowKey normalises a row label for matching a table row to a
// results.json row: "SPN (k = 5) L = 2" and "SPN (k=5, L=2)" both become
// "SPNk=5L=2".
func rowKey(label string) string {
	return strings.NewReplacer(" ", "", "(", "", ")", "", ",", "").Replace(label)
}

// TestPaperValues checks every paper value of the paper specs against the
// paper's numbers in results.json (the data mirror's sibling paper/): each
// compare-table cell's paper_mean/paper_std and each cited constant whose
// row the paper reports must equal results.json, every compare-table row
// must be a row of the paper, and, in full mode, every number of the
// paper's table must appear in the spec. It is skipped when results.json
// is absent, and fails then under CI=true.
func TestPaperValues(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(mirrortest.PaperDir(t), "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var results map[string]json.RawMessage
	if err := json.Unmarshal(raw, &results); err != nil {
		t.Fatalf("results.json: %v", err)
	}
	specs := []struct {
		file, key string
		// column maps a spec column key to the results.json column.
		column func(string) string
		modes  []string
	}{
		{"paper/table2_prox.cue", "table2_prox_accuracy", func(k string) string { return strings.TrimPrefix(k, "h") },
			[]string{schema.ModeFull, schema.ModeSmoke, schema.ModePaper1Split}},
		{"paper/table3_tu.cue", "table3_tu_accuracy", strings.ToUpper,
			[]string{schema.ModeFull, schema.ModeSmoke, schema.ModeEvidence}},
	}
	for _, sp := range specs {
		var paper paperTable
		if err := json.Unmarshal(results[sp.key], &paper); err != nil || len(paper.Rows) == 0 {
			t.Fatalf("results.json %q: %v (%d rows)", sp.key, err, len(paper.Rows))
		}
		rows := map[string]map[string][2]float64{}
		for label, cols := range paper.Rows {
			rows[rowKey(label)] = cols
		}
		src, err := fs.ReadFile(FS(), sp.file)
		if err != nil {
			t.Fatal(err)
		}
		for _, mode := range sp.modes {
			if mode == schema.ModeFull && testing.Short() && sp.key == "table3_tu_accuracy" {
				continue // its full grid takes seconds to load
			}
			spec, err := schema.LoadBytes("pipelines/"+sp.file, src, schema.Options{Mode: mode})
			if err != nil {
				t.Fatalf("%s mode %s: %v", sp.file, mode, err)
			}
			seen := map[[2]string]bool{}
			compares := 0
			for _, tab := range spec.Tables {
				if tab.Style == "compare" {
					compares++
				}
				for _, row := range tab.Rows {
					prow, ok := rows[rowKey(row.Label)]
					if tab.Style == "compare" && !ok {
						t.Errorf("%s (%s) table %s: row %q is not a row of results.json %q", sp.file, mode, tab.Name, row.Label, sp.key)
					}
					for ck, cell := range row.Cells {
						want, reported := prow[sp.column(ck)]
						where := sp.file + " (" + mode + ") table " + tab.Name + " row " + row.Label + " column " + ck
						if tab.Style == "compare" && cell.Experiment != "" {
							switch {
							case !reported:
								if cell.PaperMean != nil {
									t.Errorf("%s: paper_mean %v, but the paper reports no value", where, *cell.PaperMean)
								}
							case cell.PaperMean == nil || cell.PaperStd == nil:
								t.Errorf("%s: no paper value; the paper reports %v", where, want)
							case *cell.PaperMean != want[0] || *cell.PaperStd != want[1]:
								t.Errorf("%s: paper value %v ± %v, results.json %v ± %v", where, *cell.PaperMean, *cell.PaperStd, want[0], want[1])
							default:
								seen[[2]string{rowKey(row.Label), sp.column(ck)}] = true
							}
						}
						if cell.Mean != nil && reported {
							switch {
							case cell.Std == nil:
								t.Errorf("%s: cited %v without a std; results.json has %v", where, *cell.Mean, want)
							case *cell.Mean != want[0] || *cell.Std != want[1]:
								t.Errorf("%s: cited %v ± %v, results.json %v ± %v", where, *cell.Mean, *cell.Std, want[0], want[1])
							default:
								seen[[2]string{rowKey(row.Label), sp.column(ck)}] = true
							}
						}
					}
				}
			}
			if compares == 0 {
				t.Errorf("%s (%s): no compare table", sp.file, mode)
			}
			if mode != schema.ModeFull {
				continue
			}
			for r, cols := range rows {
				for c := range cols {
					if !seen[[2]string{r, c}] {
						t.Errorf("%s (full): the paper's %s / %s (%v) appears in no table", sp.file, r, c, cols[c])
					}
				}
			}
		}
	}
}
