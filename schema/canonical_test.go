package schema

import (
	"encoding/json"
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
