package schema

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// FuzzLoadBytes checks that no input makes the loader panic, that every
// failure is an Errors value whose entries are positioned in the input
// file, and that filling grid sections separately (separateRoots) gives
// the spec or the errors that filling whole experiments gives. The seed
// corpus is every spec under testdata/ plus the quickstart, so `go test`
// runs them as ordinary cases.
func FuzzLoadBytes(f *testing.F) {
	files, err := filepath.Glob("testdata/*/*.cue")
	if err != nil {
		f.Fatal(err)
	}
	files = append(files, filepath.Join("..", "pipelines", "quickstart.cue"))
	for _, file := range files {
		src, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(src, false)
		f.Add(src, true)
	}
	f.Add([]byte(""), false)
	f.Add([]byte("package spn\n"), false)
	f.Add([]byte("package spn\nname: \"x\"\nexperiments: a: {dataset: {kind: \"prox\", h: 1}, model: kind: \"spn\", grid: \"model.k\": [1, 2, 3]}\n"), true)
	f.Add([]byte("package spn\nimport \"list\"\nname: \"x\"\nseeds: list.Range(0, 3, 1)\n"), false)
	f.Add([]byte("package spn\nname: \"x\"\ntables: t: rows: [{label: \"a\", cells: \"\\u0000\": {}}]\n"), false)

	f.Fuzz(func(t *testing.T, src []byte, smoke bool) {
		opt := Options{Models: testModels}
		if smoke {
			opt.Mode = ModeSmoke
		}
		const name = "fuzz.cue"
		spec, err := LoadBytes(name, src, opt)
		// Filling grid sections separately must not change a result.
		jopt := opt
		jopt.jointGrid = true
		joint, jerr := LoadBytes(name, src, jopt)
		if (err == nil) != (jerr == nil) || err != nil && err.Error() != jerr.Error() {
			t.Fatalf("separate grid fill: %v\njoint grid fill: %v", err, jerr)
		}
		if !reflect.DeepEqual(spec, joint) {
			t.Fatal("separate and joint grid fills give different specs")
		}
		if err == nil {
			if spec == nil {
				t.Fatal("nil spec without error")
			}
			if _, _, err := ParseDevice(spec.Device); err != nil {
				t.Fatalf("accepted device %q", spec.Device)
			}
			for _, e := range spec.Experiments {
				if len(e.Points) == 0 {
					t.Fatalf("experiment %s has no points", e.Name)
				}
			}
			return
		}
		var errs Errors
		if !errors.As(err, &errs) || len(errs) == 0 {
			t.Fatalf("error is not a non-empty Errors: %T %v", err, err)
		}
		for _, e := range errs {
			if strings.Contains(e.Msg, "internal error") {
				t.Fatalf("evaluator panicked: %v", e)
			}
			if e.File != name || e.Line < 1 || e.Col < 1 {
				t.Fatalf("error not positioned in the input: %#v", e)
			}
		}
	})
}
