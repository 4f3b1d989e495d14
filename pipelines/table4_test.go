package pipelines

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"image/png"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spn-project/spn/internal/testkit/mirrortest"
	"github.com/spn-project/spn/schema"
	"github.com/spn-project/spn/stages"
	"github.com/spn-project/spn/stages/cache"
	"github.com/spn-project/spn/stages/evaluate"
	"github.com/spn-project/spn/stages/exec"
	"github.com/spn-project/spn/stages/figure"
	"github.com/spn-project/spn/stages/generate"
	"github.com/spn-project/spn/stages/plan"
	"github.com/spn-project/spn/stages/precompute"
	"github.com/spn-project/spn/stages/tabulate"
	"github.com/spn-project/spn/stages/train"
)

// TestTable4Spec checks paper/table4_qm9.cue in its three modes: the
// experiments (property × k × T), the protocol and metric, the paper's
// hyper-parameters, and that every table and figure made from the valid
// file says so.
func TestTable4Spec(t *testing.T) {
	src, err := fs.ReadFile(FS(), "paper/table4_qm9.cue")
	if err != nil {
		t.Fatalf("paper/table4_qm9.cue is not embedded: %v", err)
	}
	for _, tc := range []struct {
		mode        string
		experiments int
		source      string
		runs        int
		tables      int
	}{
		{schema.ModeFull, 13 * 3 * 3, "film", 5, 4},
		{schema.ModeEvidence, 2 * 2, "valid-as-train", 1, 4},
		{schema.ModeSmoke, 2 * 2 * 2, "valid-as-train", 2, 3},
	} {
		spec, err := schema.LoadBytes("pipelines/paper/table4_qm9.cue", src, schema.Options{Mode: tc.mode})
		if err != nil {
			t.Fatalf("mode %s: %v", tc.mode, err)
		}
		if len(spec.Experiments) != tc.experiments || len(spec.Tables) != tc.tables || len(spec.Figures) != 2 {
			t.Errorf("mode %s: %d experiments, %d tables, %d figures; want %d, %d, 2", tc.mode, len(spec.Experiments), len(spec.Tables), len(spec.Figures), tc.experiments, tc.tables)
		}
		for _, e := range spec.Experiments {
			p, d, m := e.Protocol, e.Dataset, e.Points[0]
			if p.Kind != "fixed" || p.Runs != tc.runs || p.Metric != "film_error" || p.SelectOn != "val_loss" || len(e.Points) != 1 {
				t.Errorf("mode %s: %s protocol %+v", tc.mode, e.Name, p)
			}
			if d.Kind != "qm9" || d.Source != tc.source || len(d.Targets) != 1 || !strings.HasPrefix(e.Name, d.Targets[0]+"_k") {
				t.Errorf("mode %s: %s dataset %+v", tc.mode, e.Name, d)
			}
			if m.Model.Kind != "rspn" || m.Training.LR != 1e-3 || m.Training.BatchSize != 128 || m.Model.Dropout != 0 {
				t.Errorf("mode %s: %s point %+v", tc.mode, e.Name, m)
			}
			if tc.mode != schema.ModeSmoke && (m.Model.Hidden != 128 || (m.Model.Layers != 8 && tc.mode == schema.ModeEvidence)) {
				t.Errorf("mode %s: %s is not the paper's hidden 128 / T = 8: %+v", tc.mode, e.Name, m.Model)
			}
			// Sum pooling does not train at lr 1e-3 (see the spec).
			if m.Model.Pool != "mean" {
				t.Errorf("mode %s: %s pools by %q, want mean", tc.mode, e.Name, m.Model.Pool)
			}
			if tc.mode == schema.ModeEvidence && (d.TrainSize != 9000 || d.Limit != 0) {
				t.Errorf("mode %s: %s trains on %d molecules with limit %d, want 9000 of the valid file (the last 1,000 validate) and the whole test file", tc.mode, e.Name, d.TrainSize, d.Limit)
			}
		}
		if tc.mode == schema.ModeEvidence {
			var names []string
			for _, e := range spec.Experiments {
				names = append(names, e.Name)
			}
			slices.Sort(names)
			if want := []string{"U0_k10_T8", "U0_k1_T8", "alpha_k10_T8", "alpha_k1_T8"}; !slices.Equal(names, want) {
				t.Errorf("mode evidence: experiments %v, want %v (k = 10 against k = 1 on U0 and alpha)", names, want)
			}
		}
		for _, tb := range spec.Tables {
			if tc.source == "valid-as-train" && !strings.Contains(tb.Caption, "valid-as-train") {
				t.Errorf("mode %s: table %s does not say it trains on the valid file", tc.mode, tb.Name)
			}
		}
	}
}

// TestTable4Smoke runs the smoke mode end to end on the offline mirror
// and checks the structure of what it writes: Table 4's layout (the
// properties, the cited and R-SPN columns, the two derived rows), the
// appendix and compare tables, and both figures in PNG, SVG, CSV and TeX;
// rendering again from the cache gives the same bytes. It checks no
// numbers of the paper (3 epochs on 800 molecules).
func TestTable4Smoke(t *testing.T) {
	if testing.Short() {
		t.Skip("trains 16 small models")
	}
	mirror := mirrortest.Dir(t)
	src, err := fs.ReadFile(FS(), "paper/table4_qm9.cue")
	if err != nil {
		t.Fatal(err)
	}
	spec, err := schema.LoadBytes("pipelines/paper/table4_qm9.cue", src, schema.Options{Mode: schema.ModeSmoke})
	if err != nil {
		t.Fatal(err)
	}
	reg := stages.NewRegistry(generate.Kind{}, precompute.Kind{}, train.Kind{}, evaluate.Kind{}, tabulate.Kind{}, figure.Kind{})
	p, err := plan.Build(spec, reg)
	if err != nil {
		t.Fatal(err)
	}
	c, err := cache.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	env := stages.Env{DataDir: t.TempDir(), Mirror: mirror, Threads: 2}
	if _, err := exec.Run(context.Background(), p, c, reg, exec.Options{Jobs: 1, Threads: 2, Env: env}); err != nil {
		t.Fatal(err)
	}
	read := func(n *plan.Node, name string) []byte {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(c.StageDir(n.Kind, n.Key), name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	var m tabulate.Matrix
	if err := json.Unmarshal(read(p.Tabulate["table4"], "table4.json"), &m); err != nil {
		t.Fatal(err)
	}
	wantHeader := []string{"", "R-GIN", "R-GIN +FA", "R-GAT", "R-GAT +FA", "GGNN", "GGNN +FA", "R-SPN k=1", "R-SPN k=5"}
	if strings.Join(m.Header, "|") != strings.Join(wantHeader, "|") {
		t.Errorf("table4 header %q, want %q", m.Header, wantHeader)
	}
	var labels []string
	for _, r := range m.Rows {
		labels = append(labels, r.Cells[0].Text)
	}
	wantRows := "mu †‡|U0 †‡|vs best GNNs (%)|vs best FA models (%)"
	if got := strings.Join(labels, "|"); got != wantRows {
		t.Errorf("table4 rows %q, want %q", got, wantRows)
	}
	if r := m.Rows[2].Cells; r[1].Text != "--" || r[7].Text == "--" || r[8].Text == "--" {
		t.Errorf("derived row %+v", r)
	}
	for _, name := range []string{"table4.tex", "table4.md", "table4.csv"} {
		if len(read(p.Tabulate["table4"], name)) == 0 {
			t.Errorf("%s is empty", name)
		}
	}
	cmp := read(p.Tabulate["table4_compare"], "table4_compare.csv")
	rows, err := csv.NewReader(bytes.NewReader(cmp)).ReadAll()
	if err != nil || len(rows) < 5 {
		t.Fatalf("table4_compare.csv: %d rows, %v", len(rows), err)
	}
	if !bytes.Contains(read(p.Tabulate["appendix_layers"], "appendix_layers.md"), []byte("T=3 k=5")) {
		t.Error("appendix table lacks the T=3 k=5 column")
	}
	for _, f := range []string{"figure3a_diameters", "figure3b_hop_weights"} {
		n := p.Figure[f]
		if _, err := png.Decode(bytes.NewReader(read(n, f+".png"))); err != nil {
			t.Errorf("%s.png: %v", f, err)
		}
		if !bytes.Contains(read(n, f+".svg"), []byte("<svg")) || !bytes.Contains(read(n, f+".tex"), []byte("\\begin{axis}")) {
			t.Errorf("%s: svg or tex malformed", f)
		}
	}
	diam, err := csv.NewReader(bytes.NewReader(read(p.Figure["figure3a_diameters"], "figure3a_diameters.csv"))).ReadAll()
	if err != nil || diam[0][0] != "diameter" || len(diam) < 5 {
		t.Errorf("diameter csv: %v %v", diam, err)
	}
	alpha, err := csv.NewReader(bytes.NewReader(read(p.Figure["figure3b_hop_weights"], "figure3b_hop_weights.csv"))).ReadAll()
	if err != nil || len(alpha) != 1+2*5 { // layers 1 and 3, k = 5 hops each
		t.Errorf("hop weight csv has %d rows, want 11: %v", len(alpha), err)
	}
	// Rendering again from the cached inputs gives the same bytes.
	for _, f := range spec.Figures {
		n := p.Figure[f.Name]
		dir := t.TempDir()
		job := &stages.Job{Name: n.Name, Params: n.JSON, Dir: dir, Env: env}
		for _, d := range n.Deps {
			job.Inputs = append(job.Inputs, stages.Input{Kind: d.Kind, Key: d.Key, Dir: c.StageDir(d.Kind, d.Key)})
		}
		if err := (figure.Kind{}).Run(context.Background(), job); err != nil {
			t.Fatal(err)
		}
		for _, ext := range []string{".png", ".svg", ".csv", ".tex"} {
			again, err := os.ReadFile(filepath.Join(dir, f.Name+ext))
			if err != nil || !bytes.Equal(again, read(n, f.Name+ext)) {
				t.Errorf("%s%s is not byte-identical when rendered again (%v)", f.Name, ext, err)
			}
		}
	}
}
