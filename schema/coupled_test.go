package schema

import (
	"strings"
	"testing"
)

// TestCoupledGrid checks that a grid key naming several paths unrolls its
// tuples together (the Errica et al. hidden × layers pairs) and crosses
// them with the other keys, and that malformed tuples are reported at the
// grid entry.
func TestCoupledGrid(t *testing.T) {
	const head = `package spn
name: "c"
experiments: a: {
	dataset: {kind: "tu", name: "PROTEINS"}
	model: kind: "spn"
	protocol: kind: "errica"
`
	spec, err := LoadBytes("c.cue", []byte(head+`	grid: {
		"model.hidden,model.layers": [[64, 4], [32, 4], [64, 1], [32, 2]]
		"training.lr": [1e-2, 1e-4]
	}
}
`), Options{Models: testModels})
	if err != nil {
		t.Fatal(err)
	}
	pts := spec.Experiments[0].Points
	if len(pts) != 8 {
		t.Fatalf("%d points, want 4 pairs × 2 learning rates = 8", len(pts))
	}
	want := [][3]float64{{64, 4, 1e-2}, {64, 4, 1e-4}, {32, 4, 1e-2}, {32, 4, 1e-4}, {64, 1, 1e-2}, {64, 1, 1e-4}, {32, 2, 1e-2}, {32, 2, 1e-4}}
	for i, p := range pts {
		got := [3]float64{float64(p.Model.Hidden), float64(p.Model.Layers), p.Training.LR}
		if got != want[i] {
			t.Errorf("point %d: hidden, layers, lr = %v, want %v", i, got, want[i])
		}
		if len(p.Values) != 3 || p.Values[0].Path != "model.hidden" || p.Values[1].Path != "model.layers" || p.Values[2].Path != "training.lr" {
			t.Errorf("point %d: grid values %+v, want model.hidden, model.layers, training.lr", i, p.Values)
		}
	}

	bad := []struct {
		name, grid, want string
	}{
		{"arity", `"model.hidden,model.layers": [[64, 4], [32]]`,
			`c.cue:8:42: experiments.a.grid."model.hidden,model.layers".1: grid key "model.hidden,model.layers" couples 2 paths: this value has 1 elements, want 2`},
		{"not a tuple", `"model.hidden,model.layers": [64]`,
			`c.cue:8:33: experiments.a.grid."model.hidden,model.layers".0: grid key "model.hidden,model.layers" couples 2 paths: each value must be a list of 2 values`},
		{"twice", `"model.hidden,model.layers": [[64, 4]], "model.layers": [1]`,
			`grid path "model.layers" is also set by grid key`},
		{"bad component", `"model.hidden,model.layers": [[64, "4"]]`,
			`c.cue:8:33: experiments.a.grid."model.hidden,model.layers".0: conflicting values "4" and int`},
		{"unknown path", `"model.hidden,model.depth": [[64, 4]]`,
			`grid path "model.depth" does not name a field of model or training`},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			_, err := LoadBytes("c.cue", []byte(head+"\tgrid: {\n\t\t"+tc.grid+"\n\t}\n}\n"), Options{Models: testModels})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error:\n%v\nwant it to contain:\n%s", err, tc.want)
			}
		})
	}
}
