package schema

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestDefaultsSpelledOut checks that a spec writing an optional field's
// default out loads exactly as one leaving it out: the stage keys hash
// the loaded experiment, so the two must name the same stages.
func TestDefaultsSpelledOut(t *testing.T) {
	load := func(dataset, model string) []byte {
		t.Helper()
		src := "package spn\nname: \"c\"\nexperiments: a: {dataset: {kind: \"prox\", h: 3" + dataset +
			"}, model: {kind: \"spn\", k: 2" + model + "}}\n"
		spec, err := LoadBytes("c.cue", []byte(src), Options{Models: testModels})
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		b, err := json.Marshal(spec.Experiments)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	bare := load("", "")
	for _, c := range []struct{ dataset, model string }{
		{`, negatives: "strict"`, ""},
		{"", `, alpha_init: "zeros"`},
		{`, negatives: "strict"`, `, alpha_init: "zeros"`},
	} {
		if got := load(c.dataset, c.model); string(got) != string(bare) {
			t.Errorf("dataset %q, model %q loads as\n%s\nwant (as without them)\n%s", c.dataset, c.model, got, bare)
		}
	}
	// A value other than the default is kept.
	if got := load(`, negatives: "code"`, `, alpha_init: "normal"`); string(got) == string(bare) {
		t.Errorf("negatives code and alpha_init normal load as the defaults")
	}
}

// TestOGBFeaturesSpelledOut: features "full" loads as the field left out
// (the same stages); "simple" is kept; other dataset kinds have no
// features field.
func TestOGBFeaturesSpelledOut(t *testing.T) {
	load := func(features string) ([]byte, error) {
		src := "package spn\nname: \"c\"\nexperiments: a: {dataset: {kind: \"ogb\", name: \"bace\"" + features +
			"}, model: {kind: \"espn\", k: 2}, protocol: {kind: \"fixed\", metric: \"rocauc\"}}\n"
		spec, err := LoadBytes("c.cue", []byte(src), Options{Models: testModels})
		if err != nil {
			return nil, err
		}
		return json.Marshal(spec.Experiments[0].Dataset)
	}
	bare, err := load("")
	if err != nil {
		t.Fatal(err)
	}
	if full, err := load(`, features: "full"`); err != nil || string(full) != string(bare) {
		t.Errorf("features full loads as %s (%v), want %s", full, err, bare)
	}
	if simple, err := load(`, features: "simple"`); err != nil || !strings.Contains(string(simple), `"features":"simple"`) {
		t.Errorf("features simple loads as %s (%v)", simple, err)
	}
	if _, err := load(`, features: "rich"`); err == nil {
		t.Error("features rich loads")
	}
	src := "package spn\nname: \"c\"\nexperiments: a: {dataset: {kind: \"prox\", h: 3, features: \"simple\"}, model: {kind: \"spn\", k: 2}}\n"
	if _, err := LoadBytes("c.cue", []byte(src), Options{Models: testModels}); err == nil || !strings.Contains(err.Error(), "features") {
		t.Errorf("features on a prox dataset: %v", err)
	}
}
