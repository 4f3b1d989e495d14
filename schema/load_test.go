package schema

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/spn-project/spn/internal/testkit/golden"
)

// TestBadSpecs loads every testdata/bad/NAME.cue and compares the error
// output with NAME.golden.
func TestBadSpecs(t *testing.T) {
	files, err := filepath.Glob("testdata/bad/*.cue")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 14 {
		t.Fatalf("want at least 14 malformed specs, found %d", len(files))
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".cue")
		t.Run(name, func(t *testing.T) {
			spec, err := Load(file, Options{Models: testModels})
			if err == nil {
				t.Fatalf("loaded a malformed spec: %+v", spec)
			}
			var errs Errors
			if !errors.As(err, &errs) {
				t.Fatalf("error is %T, want Errors: %v", err, err)
			}
			for _, e := range errs {
				if e.File != file || e.Line < 1 || e.Col < 1 || e.Msg == "" {
					t.Errorf("error without a position in %s: %#v", file, e)
				}
			}
			golden.CheckString(t, strings.TrimSuffix(file, ".cue")+".golden", err.Error()+"\n")
		})
	}
}

// TestErrorsSortedAndUnique checks the ordering contract of Errors on a
// spec with many problems.
func TestErrorsSortedAndUnique(t *testing.T) {
	_, err := Load("testdata/bad/many_errors.cue", Options{Models: testModels})
	var errs Errors
	if !errors.As(err, &errs) {
		t.Fatalf("want Errors, got %v", err)
	}
	if len(errs) < 8 {
		t.Fatalf("want every problem of many_errors.cue reported, got %d:\n%v", len(errs), err)
	}
	for i := 1; i < len(errs); i++ {
		a, b := errs[i-1], errs[i]
		if a == b {
			t.Errorf("duplicate error %v", a)
		}
		if a.Line > b.Line || (a.Line == b.Line && a.Col > b.Col) {
			t.Errorf("errors out of order: %v before %v", a, b)
		}
	}
}

func f64(x float64) *float64 { return &x }

// defaultTraining is the schema's #Training with no field set.
func defaultTraining() Training {
	return Training{Optimizer: "adam", LR: 1e-3, BatchSize: 32, Epochs: 200,
		Selection: "best_val_loss", Patience: 20, StepGamma: 0.5}
}

// defaultModel is the schema's #Model of the given kind.
func defaultModel(kind string) Model {
	return Model{Kind: kind, K: 1, Layers: 5, Hidden: 64, Dropout: 0.5, Pool: "mean"}
}

func defaultProtocol() Protocol {
	return Protocol{Kind: "holdout", Splits: 10, Runs: 3, SelectOn: "val_metric", Metric: "accuracy"}
}

// TestGoodSpecs decodes valid specs to the expected Go values: defaults
// filled, experiments and tables in name order, grids unrolled with paths
// sorted and the last path varying fastest.
func TestGoodSpecs(t *testing.T) {
	proxDefaults := Dataset{Kind: "prox", H: 3, Graphs: 9000, Levels: [2]int{15, 25}, Width: [2]int{3, 10}, Folds: 10, KMax: 10}
	point := func(k int, lr float64) Point {
		m := defaultModel("spn")
		m.K = k
		tr := defaultTraining()
		tr.LR = lr
		return Point{Values: []GridValue{{"model.k", int64(k)}, {"training.lr", lr}}, Model: m, Training: tr}
	}
	tests := []struct {
		file string
		want *Spec
	}{
		{
			file: "testdata/good/minimal.cue",
			want: &Spec{
				Name: "minimal", Device: "cpu", Mode: "full", File: "testdata/good/minimal.cue",
				Experiments: []Experiment{{
					Name: "a", Dataset: proxDefaults, Protocol: defaultProtocol(), Seeds: []int64{0},
					Points: []Point{{Model: defaultModel("spn"), Training: defaultTraining()}},
				}},
				Tables: []Table{},
			},
		},
		{
			file: "testdata/good/grid.cue",
			want: &Spec{
				Name: "grid", Description: "a grid over k and lr", Device: "cpu", Mode: "full", File: "testdata/good/grid.cue",
				Experiments: []Experiment{
					{
						Name:     "gin",
						Dataset:  Dataset{Kind: "tu", Name: "PROTEINS", KMax: 10},
						Protocol: Protocol{Kind: "errica", Splits: 10, Runs: 3, SelectOn: "val_loss", Metric: "accuracy"},
						Seeds:    []int64{1, 2},
						Points: []Point{{
							Values: []GridValue{{"model.pool", "sum"}},
							Model:  Model{Kind: "gin", K: 1, Layers: 5, Hidden: 64, Dropout: 0.5, Pool: "sum"}, Training: defaultTraining(),
						}, {
							Values: []GridValue{{"model.pool", "mean"}},
							Model:  Model{Kind: "gin", K: 1, Layers: 5, Hidden: 64, Dropout: 0.5, Pool: "mean"}, Training: defaultTraining(),
						}},
					},
					{
						Name:     "spn",
						Dataset:  Dataset{Kind: "tu", Name: "PROTEINS", KMax: 10},
						Protocol: Protocol{Kind: "errica", Splits: 10, Runs: 3, SelectOn: "val_loss", Metric: "accuracy"},
						Seeds:    []int64{7},
						Points: []Point{
							point(5, 1e-3), point(5, 1e-4),
							point(1, 1e-3), point(1, 1e-4),
							point(10, 1e-3), point(10, 1e-4),
						},
					},
				},
				Tables: []Table{{
					Name: "main", Title: "PROTEINS", Style: "results", Formats: []string{"latex", "markdown", "csv"},
					Scale: 100, Digits: 1, DDof: 0, StdOver: "splits", HigherIsBetter: true,
					Columns: []Column{{Key: "proteins", Header: "PROTEINS"}},
					Rows: []Row{
						{Label: "GIN (cited)", Cells: map[string]Cell{"proteins": {Mean: f64(73.3), Std: f64(4.0), Source: "Errica et al. 2020"}}},
						{Label: "GIN", Line: true, Cells: map[string]Cell{"proteins": {Experiment: "gin"}}},
						{Label: "SPN", Cells: map[string]Cell{"proteins": {Experiment: "spn", PaperMean: f64(74.2), PaperStd: f64(3.5)}}},
					},
				}},
			},
		},
	}
	for _, tt := range tests {
		t.Run(filepath.Base(tt.file), func(t *testing.T) {
			got, err := Load(tt.file, Options{Models: testModels})
			if err != nil {
				t.Fatal(err)
			}
			tt.want.Executor = defaultExecutor()
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("decoded spec differs\ngot:  %+v\nwant: %+v", got, tt.want)
			}
		})
	}
}

// TestModeOverride checks that Options.Mode reaches the spec's
// comprehensions and that a spec fixing its mode cannot be overridden.
func TestModeOverride(t *testing.T) {
	tests := []struct {
		mode       string
		wantEpochs int
		wantMode   string
	}{
		{"", 30, "full"},
		{"full", 30, "full"},
		{"smoke", 3, "smoke"},
	}
	for _, tt := range tests {
		t.Run("mode="+tt.mode, func(t *testing.T) {
			spec, err := Load("testdata/good/modes.cue", Options{Mode: tt.mode, Models: testModels})
			if err != nil {
				t.Fatal(err)
			}
			if spec.Mode != tt.wantMode {
				t.Errorf("Mode = %q, want %q", spec.Mode, tt.wantMode)
			}
			if got := spec.Experiments[0].Points[0].Training.Epochs; got != tt.wantEpochs {
				t.Errorf("epochs = %d, want %d", got, tt.wantEpochs)
			}
		})
	}

	src := []byte("package spn\nname: \"fixed\"\nmode: \"full\"\n")
	_, err := LoadBytes("fixed.cue", src, Options{Mode: "smoke", Models: testModels})
	golden.CheckString(t, "testdata/mode_fixed.golden", err.Error()+"\n")

	if _, err := LoadBytes("x.cue", src, Options{Mode: "fast"}); err == nil || !strings.Contains(err.Error(), `"fast"`) {
		t.Errorf("unknown mode accepted or not named: %v", err)
	}
}

// TestLoadMissingFile checks that an I/O error names the file.
func TestLoadMissingFile(t *testing.T) {
	_, err := Load("testdata/does-not-exist.cue", Options{Models: testModels})
	if err == nil || !strings.Contains(err.Error(), "testdata/does-not-exist.cue") || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("want a wrapped not-exist error naming the file, got %v", err)
	}
}

// TestErrorFormat pins the exact error format.
func TestErrorFormat(t *testing.T) {
	tests := []struct {
		e    Error
		want string
	}{
		{Error{File: "a.cue", Line: 3, Col: 7, Path: "experiments.a.model.k", Msg: "bad"}, "a.cue:3:7: experiments.a.model.k: bad"},
		{Error{File: "a.cue", Line: 1, Col: 2, Msg: "syntax error: x"}, "a.cue:1:2: syntax error: x"},
	}
	for _, tt := range tests {
		if got := tt.e.Error(); got != tt.want {
			t.Errorf("got %q, want %q", got, tt.want)
		}
	}
	es := Errors{{File: "b", Line: 2, Col: 1, Msg: "y"}, {File: "a", Line: 9, Col: 1, Msg: "x"}, {File: "b", Line: 2, Col: 1, Msg: "y"}}
	if got, want := es.normalize().Error(), "a:9:1: x\nb:2:1: y"; got != want {
		t.Errorf("normalize: got %q, want %q", got, want)
	}
}

// BenchmarkLoadQuickstart measures loading the quickstart spec: parse,
// CUE evaluation with the schema, validation, decoding and unrolling.
func BenchmarkLoadQuickstart(b *testing.B) {
	src, err := os.ReadFile(filepath.Join("..", "pipelines", "quickstart.cue"))
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := LoadBytes("quickstart.cue", src, Options{Models: testModels}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLoadGrid measures a spec with a 6-point and a 2-point grid.
func BenchmarkLoadGrid(b *testing.B) {
	src, err := os.ReadFile("testdata/good/grid.cue")
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := LoadBytes("grid.cue", src, Options{Models: testModels}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLoadTable3 measures the paper's Table 3 spec (3 468 grid
// points), its grid sections filled separately (the default) and filled
// into whole experiments.
func BenchmarkLoadTable3(b *testing.B) {
	src, err := os.ReadFile(filepath.Join("..", "pipelines", "paper", "table3_tu.cue"))
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name  string
		joint bool
	}{{"separate", false}, {"joint", true}} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := LoadBytes("table3_tu.cue", src, Options{Models: testModels, jointGrid: bc.joint}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// defaultExecutor is the executor settings of a spec without any.
func defaultExecutor() Executor {
	r := SlurmResources{CPUs: 1, Bundle: 1}
	return Executor{Slurm: Slurm{Group: "array", MaxArray: 1000,
		Generate: r, Precompute: r, Train: r, Select: r, Evaluate: r, Tabulate: r}}
}

// The executor settings decode with the schema's defaults for what a spec
// leaves out.
func TestExecutorSettings(t *testing.T) {
	spec, err := Load("testdata/good/slurm.cue", Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := defaultExecutor()
	want.Slurm.Partition = "cpu"
	want.Slurm.Sbatch = []string{"--qos=long"}
	want.Slurm.MaxArray = 500
	want.Slurm.Train = SlurmResources{CPUs: 2, Mem: "4G", Time: "1-02:00:00", Bundle: 3}
	if !reflect.DeepEqual(spec.Executor, want) {
		t.Errorf("executor\ngot:  %+v\nwant: %+v", spec.Executor, want)
	}
	if r := spec.Executor.Slurm.Resources("train"); r.CPUs != 2 || r.Bundle != 3 {
		t.Errorf("Resources(train) = %+v", r)
	}
	if r := spec.Executor.Slurm.Resources("select"); r.CPUs != 1 || r.Bundle != 1 {
		t.Errorf("Resources(select) = %+v", r)
	}
}

// TestModes checks that a spec loads only in the modes it declares.
func TestModes(t *testing.T) {
	plain := []byte("package spn\nname: \"m\"\n")
	if _, err := LoadBytes("m.cue", plain, Options{Mode: ModeSmoke}); err != nil {
		t.Errorf("default modes, smoke: %v", err)
	}
	_, err := LoadBytes("m.cue", plain, Options{Mode: ModePaper1Split})
	if err == nil || err.Error() != `m.cue:1:1: modes: the spec does not define mode "paper-1split" (its modes: "full", "smoke"; add it to modes with its branches)` {
		t.Errorf("default modes, paper-1split: %v", err)
	}
	declared := []byte("package spn\nname: \"m\"\nmodes: [\"paper-1split\"]\n")
	if _, err := LoadBytes("m.cue", declared, Options{Mode: ModePaper1Split}); err != nil {
		t.Errorf("declared paper-1split: %v", err)
	}
	if _, err := LoadBytes("m.cue", declared, Options{}); err == nil || !strings.Contains(err.Error(), `m.cue:3:1: modes: the spec does not define mode "full"`) {
		t.Errorf("declared paper-1split only, loaded in full: %v", err)
	}
}

// TestEditDistance checks the distance behind "did you mean": the
// Levenshtein distance, symmetric, 0 only for equal labels.
func TestEditDistance(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"layers", "layers", 0},
		{"layer", "layers", 1},
		{"hiden", "hidden", 1},
		{"lerning_rate", "lr", 10},
		{"kind", "k", 3},
		{"epcohs", "epochs", 2},
		{"", "pool", 4},
	} {
		if got := editDistance(c.a, c.b); got != c.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
		if got := editDistance(c.b, c.a); got != c.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", c.b, c.a, got, c.want)
		}
	}
}
