package schema

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"cuelang.org/go/cue/parser"
)

// separable accepts a spec whose sections only declare, and rejects every
// way an expression can reach one section of an experiment from another.
func TestSeparable(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		want      bool
	}{
		{"labels only", `experiments: x: {model: {kind: "spn", k: 2}, training: {lr: 0.1}, grid: {"model.hidden": [1], "training.lr": [1]}}`, true},
		{"self reference in a section", `experiments: x: model: {kind: "spn", k: layers}`, true},
		{"hidden fields and lets", `_t: {lr: 1}, for n in ["a"] let d = _t {experiments: (n): training: d}`, true},
		{"training reads model", `experiments: x: {model: kind: "spn", training: epochs: model.layers * 10}`, false},
		{"through experiments", `_e: experiments.x.model.k`, false},
		{"selector on another value", `for n, e in {a: {model: 1}} {x: e.model}`, true},
		{"literal index on another value", `_t: {training: 1}["training"]`, true},
		{"interpolation", `experiments: x: training: optimizer: "\(model.kind)"`, false},
		{"loop over experiments", `for n, e in experiments {x: n}`, false},
		{"let named model", `let model = 1, x: model`, false},
		{"label alias", `experiments: x: {M=model: {k: 2}, training: epochs: M.k}`, false},
		{"value alias", `experiments: x: E={training: epochs: E["model"].k}`, false},
		{"dynamic label", `experiments: x: {(model.kind): 1}`, false},
		{"pattern label", `experiments: [model]: 1`, false},
	} {
		f, err := parser.ParseFile("t.cue", "package spn\n"+tc.src)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := separable(f); got != tc.want {
			t.Errorf("%s: separable = %v, want %v", tc.name, got, tc.want)
		}
	}
	sf, err := parser.ParseFile(SchemaFile, schemaSource)
	if err != nil {
		t.Fatal(err)
	}
	if !separable(sf) {
		t.Error("the schema is not separable: every grid would be filled into whole experiments")
	}
}

// Filling the sections separately gives the same spec as filling whole
// experiments, and the same errors, for every shipped spec in every mode
// and every test spec; the paper's specs take the separate path.
func TestGridRootsSameSpecs(t *testing.T) {
	var files []string
	for _, pattern := range []string{"../pipelines/*.cue", "../pipelines/*/*.cue", "testdata/good/*.cue", "testdata/bad/*.cue", "testdata/gridroots/*.cue"} {
		m, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	if len(files) < 20 {
		t.Fatalf("found %d specs; the globs are wrong", len(files))
	}
	for _, path := range files {
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(path, "../pipelines/paper/") {
			f, err := parser.ParseFile(path, src)
			if err != nil {
				t.Fatal(err)
			}
			if !separable(f) {
				t.Errorf("%s is not separable: its grids would be filled into whole experiments", path)
			}
		}
		// "" is the spec's own mode, full for the paper's specs.
		modes := []string{""}
		if strings.HasPrefix(path, "../pipelines/") {
			modes = slices.DeleteFunc(slices.Clone(Modes), func(m string) bool { return m == ModeFull })
			modes = append([]string{""}, modes...)
		}
		for _, mode := range modes {
			sep, errSep := LoadBytes(path, src, Options{Mode: mode, Models: testModels})
			joint, errJoint := LoadBytes(path, src, Options{Mode: mode, Models: testModels, jointGrid: true})
			if (errSep == nil) != (errJoint == nil) || errSep != nil && errSep.Error() != errJoint.Error() {
				t.Errorf("%s mode %q: separately: %v\njointly: %v", path, mode, errSep, errJoint)
				continue
			}
			if !reflect.DeepEqual(sep, joint) {
				t.Errorf("%s mode %q: the specs differ", path, mode)
			}
		}
	}
}

// A training section that reads a gridded model field sees each point's
// value (the joint fill), and a model field that reads another gridded one
// of its own section does too (the separate fill).
func TestGridCrossReference(t *testing.T) {
	for _, tc := range []struct {
		file      string
		separable bool
	}{{"testdata/gridroots/cross.cue", false}, {"testdata/gridroots/self.cue", true}} {
		src, err := os.ReadFile(tc.file)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(tc.file, src)
		if err != nil {
			t.Fatal(err)
		}
		if got := separable(f); got != tc.separable {
			t.Errorf("%s: separable = %v, want %v", tc.file, got, tc.separable)
		}
		spec, err := LoadBytes(tc.file, src, Options{Models: testModels})
		if err != nil {
			t.Fatal(err)
		}
		pts := spec.Experiments[0].Points
		if len(pts) != 4 {
			t.Fatalf("%s: %d points, want 4", tc.file, len(pts))
		}
		for _, p := range pts {
			if p.Training.Epochs != 10*p.Model.Layers || p.Model.K != p.Model.Layers {
				t.Errorf("%s: point %v: epochs %d, k %d; want 10 × layers and layers", tc.file, p.Values, p.Training.Epochs, p.Model.K)
			}
		}
	}
}
