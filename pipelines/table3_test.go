package pipelines

import (
	"io/fs"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/spn-project/spn/schema"
)

// TestTable3Spec checks the embedded paper/table3_tu.cue in both modes: the
// 16 experiments (4 datasets × SPN k ∈ {1, 5, 10} and the baseline), the
// grid sizes the spec's comments declare, the protocol and the tables.
func TestTable3Spec(t *testing.T) {
	src, err := fs.ReadFile(FS(), "paper/table3_tu.cue")
	if err != nil {
		t.Fatalf("paper/table3_tu.cue is not embedded: %v", err)
	}
	for _, tc := range []struct {
		mode                    string
		spnPoints, chem, enz    int
		splits, runs, maxEpochs int
	}{
		// SPN: batch 2 × lr 2 × selection 2 × (hidden, layers) 4 × ε 2 × pool 2 × dropout 2.
		// Baseline: chemical 2 × 3 × 3 × 2 × 3; ENZYMES 1 × 3 × 3 × 2 × 4.
		{schema.ModeFull, 256, 108, 72, 10, 3, 5000},
		{schema.ModeSmoke, 1, 1, 1, 2, 1, 2},
	} {
		if tc.mode == schema.ModeFull && testing.Short() {
			// Loading validates all 3,144 full-mode grid points (a few seconds of CPU).
			continue
		}
		spec, err := schema.LoadBytes("pipelines/paper/table3_tu.cue", src, schema.Options{Mode: tc.mode})
		if err != nil {
			t.Fatalf("mode %s: %v", tc.mode, err)
		}
		if len(spec.Experiments) != 16 {
			t.Errorf("mode %s: %d experiments, want 16", tc.mode, len(spec.Experiments))
		}
		for _, e := range spec.Experiments {
			want := tc.spnPoints
			switch {
			case e.Name == "enzymes_baseline":
				want = tc.enz
			case strings.HasSuffix(e.Name, "_baseline"):
				want = tc.chem
			}
			if len(e.Points) != want {
				t.Errorf("mode %s: %s has %d grid points, want %d", tc.mode, e.Name, len(e.Points), want)
			}
			p := e.Protocol
			if p.Kind != "errica" || p.Splits != tc.splits || p.Runs != tc.runs || p.SelectOn != "val_metric" || p.Metric != "accuracy" {
				t.Errorf("mode %s: %s protocol %+v", tc.mode, e.Name, p)
			}
			for _, pt := range e.Points {
				if pt.Training.Epochs > tc.maxEpochs {
					t.Errorf("mode %s: %s trains %d epochs", tc.mode, e.Name, pt.Training.Epochs)
				}
				if pt.Model.Kind == "baseline" && pt.Model.Dropout != 0 {
					t.Errorf("%s: baseline with dropout %v", e.Name, pt.Model.Dropout)
				}
				if pt.Model.Kind == "spn" && (pt.Training.StepEvery != 50 || pt.Training.StepGamma != 0.5 || pt.Training.WeightDecay != 0) {
					t.Errorf("%s: SPN training %+v, want step LR 50/0.5 and no weight decay", e.Name, pt.Training)
				}
			}
		}
		if len(spec.Tables) != 3 {
			t.Fatalf("mode %s: %d tables, want compare, paired and results", tc.mode, len(spec.Tables))
		}
		for _, tb := range spec.Tables {
			// The paper's tables take the std with ddof 0 (Errica et
			// al.'s numpy.std); the paired table's t needs ddof 1.
			ddof := 0
			if tb.Name == "paired" {
				ddof = 1
				var derived []string
				for _, r := range tb.Rows {
					if r.Derived != nil {
						derived = append(derived, r.Label+": "+strings.Join(r.Derived.Rows, " − "))
					}
				}
				want := []string{"k = 5 − k = 1: SPN (k = 5) − SPN (k = 1)", "k = 10 − k = 1: SPN (k = 10) − SPN (k = 1)"}
				if !slices.Equal(derived, want) {
					t.Errorf("mode %s: paired rows %q, want %q", tc.mode, derived, want)
				}
			}
			if len(tb.Columns) != 4 || tb.DDof != ddof {
				t.Errorf("table %s: %d columns, ddof %d", tb.Name, len(tb.Columns), tb.DDof)
			}
		}
	}
}

// TestTable3Evidence checks the evidence mode's reductions as its notes
// state them: PROTEINS and ENZYMES, SPN k ∈ {1, 5} with 4 grid points
// (two sizes, each with the full grid's two dropout rates) and the
// Baseline with 4, 10 outer folds and one final run, SPN trained 100
// epochs on PROTEINS and 300 on ENZYMES, the Baseline 500.
func TestTable3Evidence(t *testing.T) {
	src, err := fs.ReadFile(FS(), "paper/table3_tu.cue")
	if err != nil {
		t.Fatal(err)
	}
	spec, err := schema.LoadBytes("pipelines/paper/table3_tu.cue", src, schema.Options{Mode: "evidence"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]struct{ points, epochs int }{
		"proteins_spn_k1": {4, 100}, "proteins_spn_k5": {4, 100}, "proteins_baseline": {4, 500},
		"enzymes_spn_k1": {4, 300}, "enzymes_spn_k5": {4, 300}, "enzymes_baseline": {4, 500},
	}
	if len(spec.Experiments) != len(want) {
		t.Errorf("%d experiments, want %d", len(spec.Experiments), len(want))
	}
	for _, e := range spec.Experiments {
		w, ok := want[e.Name]
		if !ok {
			t.Errorf("experiment %s is not the evidence mode's", e.Name)
			continue
		}
		if len(e.Points) != w.points {
			t.Errorf("%s has %d grid points, want %d", e.Name, len(e.Points), w.points)
		}
		if p := e.Protocol; p.Splits != 10 || p.Runs != 1 {
			t.Errorf("%s: %d folds, %d final runs, want 10 and 1", e.Name, p.Splits, p.Runs)
		}
		dropouts := map[float64]int{}
		for _, pt := range e.Points {
			if pt.Training.Epochs != w.epochs {
				t.Errorf("%s trains %d epochs, want %d", e.Name, pt.Training.Epochs, w.epochs)
			}
			dropouts[pt.Model.Dropout]++
		}
		// SPN's points split evenly between the full grid's dropout
		// rates (selection on validation picks one); the Baseline has none.
		wantDrop := map[float64]int{0.5: 2, 0: 2}
		if strings.HasSuffix(e.Name, "_baseline") {
			wantDrop = map[float64]int{0: 4}
		}
		if !maps.Equal(dropouts, wantDrop) {
			t.Errorf("%s: points by dropout %v, want %v", e.Name, dropouts, wantDrop)
		}
	}
}
