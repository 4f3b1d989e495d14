package schema

import (
	"testing"
)

// TestPlateauDecodes checks that training.plateau decodes with PyTorch's
// ReduceLROnPlateau defaults filled in, and that a training section
// without it decodes to a nil Plateau (so that it stays out of the train
// stage keys of every spec that does not set it).
func TestPlateauDecodes(t *testing.T) {
	src := []byte(`package spn
name: "p"
experiments: {
	set: {
		dataset: {kind: "prox", h: 3}
		model: {kind: "spn", k: 1}
		training: plateau: {factor: 0.5, patience: 20, min_lr: 1e-5}
	}
	unset: {
		dataset: {kind: "prox", h: 3}
		model: {kind: "spn", k: 1}
	}
	metric: {
		dataset: {kind: "prox", h: 3}
		model: {kind: "spn", k: 1}
		training: plateau: {monitor: "val_metric"}
	}
}
`)
	spec, err := LoadBytes("p.cue", src, Options{Models: testModels})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]*Plateau{
		"set":    {Monitor: "val_loss", Factor: 0.5, Patience: 20, Threshold: 1e-4, MinLR: 1e-5, Cooldown: 0},
		"unset":  nil,
		"metric": {Monitor: "val_metric", Factor: 0.1, Patience: 10, Threshold: 1e-4, MinLR: 0, Cooldown: 0},
	}
	for _, e := range spec.Experiments {
		got := e.Points[0].Training.Plateau
		w := want[e.Name]
		switch {
		case w == nil && got != nil:
			t.Errorf("%s: plateau = %+v, want nil", e.Name, *got)
		case w != nil && (got == nil || *got != *w):
			t.Errorf("%s: plateau = %+v, want %+v", e.Name, got, *w)
		}
	}
}
