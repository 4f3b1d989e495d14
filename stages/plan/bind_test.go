package plan

import (
	"encoding/json"
	"testing"

	"github.com/spn-project/spn/schema"
	"github.com/spn-project/spn/stages"
	"github.com/spn-project/spn/stages/cache"
)

// binderKind is a train kind that binds every train stage with a select
// input to grid point point, with notes, keeping its other inputs (as
// train.Kind binds an errica final run to its fold's winner).
type binderKind struct {
	testKind
	point schema.Point
}

func (k binderKind) Bind(raw json.RawMessage, in []stages.Input) (any, []int, error) {
	var tp stages.TrainParams
	if err := json.Unmarshal(raw, &tp); err != nil {
		return nil, nil, err
	}
	var keep []int
	for i, x := range in {
		if x.Kind != stages.KindSelect {
			keep = append(keep, i)
		}
	}
	if len(keep) == len(in) {
		return nil, nil, nil
	}
	tp.Point, tp.Notes = &k.point, []string{"chosen"}
	return tp, keep, nil
}

// TestBind: a node its kind binds runs as the bound stage, identified as
// the key document defines it (json.Marshal's hash): the bound
// parameters on the kept inputs for the bound key, without the device
// and the notes and on the kept inputs' seed keys for the seed key, the
// same from a plan file's node (inputs without seed keys). Every other
// node runs as itself.
func TestBind(t *testing.T) {
	pt := point(2, 0.001)
	reg := testRegistry(nil)
	ks := kindsOf(reg)
	for i, k := range ks {
		if k.Name() == stages.KindTrain {
			ks[i] = binderKind{testKind{stages.KindTrain, "1"}, pt}
		}
	}
	reg = stages.NewRegistry(ks...)
	spec := testSpec()
	spec.Device = "cuda"
	p := mustBuild(t, spec, reg)
	c, err := cache.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	bound := 0
	for _, n := range p.Nodes {
		r, err := Bind(reg, c, n)
		if err != nil {
			t.Fatalf("%s: %v", n.Name, err)
		}
		tp, isTrain := n.Params.(stages.TrainParams)
		if !isTrain || len(n.Deps) != 3 {
			if r.BoundKey != "" || string(r.Params) != string(n.JSON) || r.SeedKey != n.SeedKey || len(r.Inputs) != len(n.Deps) {
				t.Errorf("%s, not bound: runs as %+v", n.Name, r)
			}
			continue
		}
		bound++
		tp.Point, tp.Notes = &pt, []string{"chosen"}
		raw, err := json.Marshal(tp)
		if err != nil {
			t.Fatal(err)
		}
		cpu := tp
		cpu.Device, cpu.Notes = "", nil
		cpuRaw, err := json.Marshal(cpu)
		if err != nil {
			t.Fatal(err)
		}
		kept := n.Deps[:2]
		keys := []string{kept[0].Key, kept[1].Key}
		seeds := []string{kept[0].SeedKey, kept[1].SeedKey}
		if string(r.Params) != string(raw) {
			t.Errorf("%s: bound parameters %s, want %s", n.Name, r.Params, raw)
		}
		if want := jsonHash(t, keyDoc{Kind: n.Kind, Version: "1", Params: raw, Deps: keys}); r.BoundKey != want {
			t.Errorf("%s: bound key %.12s, want %.12s", n.Name, r.BoundKey, want)
		}
		if want := jsonHash(t, keyDoc{Kind: n.Kind, Version: "1", Params: cpuRaw, Deps: seeds}); r.SeedKey != want || r.SeedKey == r.BoundKey {
			t.Errorf("%s: bound seed key %.12s, want %.12s (not the bound key %.12s)", n.Name, r.SeedKey, want, r.BoundKey)
		}
		if len(r.Inputs) != 2 || r.Inputs[0].Key != keys[0] || r.Inputs[1].Key != keys[1] {
			t.Errorf("%s: bound inputs %+v, want the generate and precompute stages", n.Name, r.Inputs)
		}
		// A plan file's node: its inputs carry no seed keys.
		bare := *n
		bare.Deps = nil
		for _, d := range n.Deps {
			bare.Deps = append(bare.Deps, &Node{Key: d.Key, Kind: d.Kind, Name: d.Name})
		}
		rb, err := Bind(reg, c, &bare)
		if err != nil {
			t.Fatal(err)
		}
		if want := jsonHash(t, keyDoc{Kind: n.Kind, Version: "1", Params: cpuRaw, Deps: keys}); rb.SeedKey != want || rb.BoundKey != r.BoundKey {
			t.Errorf("%s from a plan file: seed key %.12s, want %.12s; bound key %.12s, want %.12s", n.Name, rb.SeedKey, want, rb.BoundKey, r.BoundKey)
		}
	}
	if bound != 4 {
		t.Errorf("%d stages bound, want the 4 final runs of tu_spn (2 splits × 2 runs)", bound)
	}
}
