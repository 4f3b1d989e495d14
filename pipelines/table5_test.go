package pipelines

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/spn-project/spn/schema"
)

// TestTable5Spec checks the embedded paper/table5_moleculenet.cue in both
// modes: one E-SPN experiment per set and k, the paper's and OGB's
// settings, OGB's protocol and the two tables with the declared std
// convention.
func TestTable5Spec(t *testing.T) {
	src, err := fs.ReadFile(FS(), "paper/table5_moleculenet.cue")
	if err != nil {
		t.Fatalf("paper/table5_moleculenet.cue is not embedded: %v", err)
	}
	for _, tc := range []struct {
		mode                   string
		sets, ks, points, runs int
		hidden, layers, epochs int
	}{
		{schema.ModeFull, 7, 3, 2, 10, 300, 5, 100},
		{schema.ModeEvidence, 1, 2, 2, 10, 300, 5, 100},
		{schema.ModeSmoke, 2, 3, 1, 2, 32, 2, 2},
	} {
		spec, err := schema.LoadBytes("pipelines/paper/table5_moleculenet.cue", src, schema.Options{Mode: tc.mode})
		if err != nil {
			t.Fatalf("mode %s: %v", tc.mode, err)
		}
		if len(spec.Experiments) != tc.ks*tc.sets {
			t.Errorf("mode %s: %d experiments, want %d", tc.mode, len(spec.Experiments), tc.ks*tc.sets)
		}
		for _, e := range spec.Experiments {
			p := e.Protocol
			if e.Dataset.Kind != "ogb" || p.Kind != "fixed" || p.Splits != 1 || p.Runs != tc.runs || p.Metric != "rocauc" || p.SelectOn != "val_metric" {
				t.Errorf("mode %s: %s dataset %+v protocol %+v", tc.mode, e.Name, e.Dataset, p)
			}
			if len(e.Points) != tc.points {
				t.Errorf("mode %s: %s has %d grid points, want %d", tc.mode, e.Name, len(e.Points), tc.points)
			}
			for _, pt := range e.Points {
				m, tr := pt.Model, pt.Training
				if m.Kind != "espn" || m.Hidden != tc.hidden || m.Layers != tc.layers || m.Dropout != 0.5 || m.Pool != "mean" || m.K > e.Dataset.KMax {
					t.Errorf("mode %s: %s model %+v", tc.mode, e.Name, m)
				}
				if tr.BatchSize != 32 || tr.Epochs != tc.epochs || tr.Selection != "best_val_metric" || tr.WeightDecay != 0 || tr.StepEvery != 0 {
					t.Errorf("mode %s: %s training %+v", tc.mode, e.Name, tr)
				}
				if tr.LR != 1e-3 && tr.LR != 1e-4 {
					t.Errorf("mode %s: %s lr %v", tc.mode, e.Name, tr.LR)
				}
			}
		}
		if len(spec.Tables) != 2 {
			t.Fatalf("mode %s: %d tables, want results and compare", tc.mode, len(spec.Tables))
		}
		for _, tb := range spec.Tables {
			if len(tb.Columns) != tc.sets || tb.DDof != 1 || tb.StdOver != "runs" || tb.Scale != 100 || !tb.HigherIsBetter {
				t.Errorf("mode %s: table %s: %d columns, ddof %d, std over %s, scale %v", tc.mode, tb.Name, len(tb.Columns), tb.DDof, tb.StdOver, tb.Scale)
			}
			want := map[string]int{"results": 2 + tc.ks, "compare": tc.ks}[tb.Name]
			if len(tb.Rows) != want {
				t.Errorf("mode %s: table %s has %d rows, want %d", tc.mode, tb.Name, len(tb.Rows), want)
			}
		}
	}
}

// TestTable5PaperValues checks the spec's paper values and cited rows
// against the paper's results.json (key table5_moleculenet_rocauc), when
// the shared paper folder is there.
func TestTable5PaperValues(t *testing.T) {
	// The paper folder sits next to the data mirror (../shared/paper from
	// the repository root).
	path := filepath.Join("..", "..", "shared", "paper", "results.json")
	if m := os.Getenv("SPN_DATA_MIRROR"); m != "" {
		path = filepath.Join(m, "..", "paper", "results.json")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Skipf("paper results not found: %v", err)
	}
	var res map[string]json.RawMessage
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	var tab struct {
		Columns []string                        `json:"columns"`
		Rows    map[string]map[string][]float64 `json:"rows"`
	}
	if err := json.Unmarshal(res["table5_moleculenet_rocauc"], &tab); err != nil {
		t.Fatal(err)
	}
	src, err := fs.ReadFile(FS(), "paper/table5_moleculenet.cue")
	if err != nil {
		t.Fatal(err)
	}
	spec, err := schema.LoadBytes("pipelines/paper/table5_moleculenet.cue", src, schema.Options{Mode: schema.ModeFull})
	if err != nil {
		t.Fatal(err)
	}
	header := map[string]string{}
	for _, tb := range spec.Tables {
		for _, c := range tb.Columns {
			header[c.Key] = c.Header
		}
	}
	checked := 0
	for _, tb := range spec.Tables {
		for _, r := range tb.Rows {
			label := r.Label
			for k := range 6 {
				if r.Label == fmt.Sprintf("E-SPN (k = %d)", k) {
					label = fmt.Sprintf("E-SPN (k=%d)", k)
				}
			}
			paper, ok := tab.Rows[label]
			if !ok {
				t.Errorf("table %s row %q is not in results.json", tb.Name, r.Label)
				continue
			}
			for key, c := range r.Cells {
				want := paper[header[key]]
				mean, std := c.Mean, c.Std
				if tb.Style == "compare" {
					mean, std = c.PaperMean, c.PaperStd
				}
				if c.Experiment != "" && tb.Style != "compare" {
					continue
				}
				if len(want) != 2 || mean == nil || std == nil || math.Abs(*mean-want[0]) > 1e-9 || math.Abs(*std-want[1]) > 1e-9 {
					t.Errorf("table %s row %q column %s: spec %v ± %v, paper %v", tb.Name, r.Label, key, mean, std, want)
				}
				checked++
			}
		}
	}
	if checked != 5*7 {
		t.Errorf("checked %d cells, want 35 (GIN, GCN, E-SPN k = 1, 3, 5 × 7 sets)", checked)
	}
}
