package schema

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// A spec valid in its own mode (full) but whose smoke branch conflicts is
// "ok" to Load; LoadAllModes finds the fault, says it is smoke's, and the
// message names both values and where the file writes each, not an enum
// that blames the valid one.
func TestLoadAllModesFindsSmokeOnlyFault(t *testing.T) {
	const file = "testdata/allmodes/smoke_only.cue"
	if _, err := Load(file, Options{Models: testModels}); err != nil {
		t.Fatalf("full mode: %v", err)
	}
	modes, err := LoadAllModes(file, Options{Models: testModels})
	if !slices.Equal(modes, []string{ModeFull, ModeSmoke}) {
		t.Errorf("modes %q, want the default full, smoke", modes)
	}
	var errs Errors
	if !errors.As(err, &errs) || len(errs) != 1 {
		t.Fatalf("want one error, got %v", err)
	}
	want := Error{File: file, Line: 11, Col: 29, Path: "experiments.e.model.pool", Check: CheckSchema, Mode: ModeSmoke,
		Msg: `conflicting values "sum" (testdata/allmodes/smoke_only.cue:10:9) and "summ" (testdata/allmodes/smoke_only.cue:11:29)`}
	if errs[0] != want {
		t.Errorf("got  %#v\nwant %#v", errs[0], want)
	}
}

// Every mode of the modes field is loaded; an error of several modes is
// reported once per mode, each carrying its mode.
func TestLoadAllModesEveryMode(t *testing.T) {
	modes, err := LoadAllModes("testdata/allmodes/every_mode.cue", Options{Models: testModels})
	if !slices.Equal(modes, []string{ModeFull, ModeSmoke, ModeEvidence}) {
		t.Errorf("modes %q", modes)
	}
	var errs Errors
	if !errors.As(err, &errs) {
		t.Fatalf("want Errors, got %v", err)
	}
	var got []string
	for _, e := range errs {
		got = append(got, e.Mode+" "+e.Path)
	}
	want := []string{"evidence experiments.e.model.layers", "evidence experiments.e.training.epochz",
		"full experiments.e.training.epochz", "smoke experiments.e.training.epochz"}
	if !slices.Equal(got, want) {
		t.Errorf("errors by mode:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A spec that fixes its mode runs in that mode only: only it is vetted.
func TestLoadAllModesFixedMode(t *testing.T) {
	modes, err := LoadAllModes("testdata/allmodes/fixed.cue", Options{Models: testModels})
	if err != nil || !slices.Equal(modes, []string{ModeSmoke}) {
		t.Errorf("modes %q, err %v; want smoke only and no error", modes, err)
	}
}

// A syntax error is found before the modes are known: reported once,
// without a mode.
func TestLoadAllModesSyntaxError(t *testing.T) {
	_, err := LoadAllModes("testdata/bad/syntax_error.cue", Options{Models: testModels})
	var errs Errors
	if !errors.As(err, &errs) || len(errs) == 0 {
		t.Fatalf("want Errors, got %v", err)
	}
	for _, e := range errs {
		if e.Mode != "" || e.Check != CheckSyntax {
			t.Errorf("%#v: want no mode and check %q", e, CheckSyntax)
		}
	}
}

// Each error says which kind of check found it, decided where the check
// runs.
func TestErrorChecks(t *testing.T) {
	for file, want := range map[string][]string{
		"bad_pool":                 {CheckSchema},
		"gin_k5":                   {CheckModel, CheckModel},
		"huge_list":                {CheckLimits},
		"too_many_seeds":           {CheckLimits},
		"grid_too_large":           {CheckSchema, CheckLimits, CheckTable, CheckTable},
		"table_missing_experiment": {CheckTable},
		"syntax_error":             {CheckSyntax},
		"wrong_package":            {CheckSyntax},
	} {
		_, err := Load("testdata/bad/"+file+".cue", Options{Models: testModels})
		var errs Errors
		if !errors.As(err, &errs) {
			t.Fatalf("%s: want Errors, got %v", file, err)
		}
		var got []string
		for _, e := range errs {
			got = append(got, e.Check)
			if e.Mode != "" && e.Mode != ModeFull {
				t.Errorf("%s: mode %q, want full (the spec's own) or none", file, e.Mode)
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: checks %q, want %q\n%v", file, got, want, err)
		}
	}
}

// BenchmarkLoadAllModes compares vetting Table 3's spec in every mode it
// defines (full and smoke) with one Load per mode: each mode is evaluated
// once, so the two should cost about the same.
//
//	go test ./schema -run '^$' -bench LoadAllModes -benchtime 5x -count 3
func BenchmarkLoadAllModes(b *testing.B) {
	file := filepath.Join("..", "pipelines", "paper", "table3_tu.cue")
	b.Run("all-modes", func(b *testing.B) {
		for b.Loop() {
			if _, err := LoadAllModes(file, Options{Models: testModels}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("load-per-mode", func(b *testing.B) {
		for b.Loop() {
			for _, m := range []string{ModeFull, ModeSmoke} {
				if _, err := Load(file, Options{Mode: m, Models: testModels}); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}
