package train

import (
	"encoding/json"
	"testing"

	"github.com/spn-project/spn/models/kinds"
	"github.com/spn-project/spn/models/rspn"
	"github.com/spn-project/spn/schema"
	"github.com/spn-project/spn/stages"
)

// TestVersionOf: a train stage's version carries its model kind's
// revision when that is above 1 (rspn's stacked MLPs), and is the kind's
// Version otherwise: for the other kinds (their keys, and so their
// caches, unchanged) and for parameters that do not decode (the stage
// reports them when it runs). A final training (no configuration: its
// select stage's key holds the trainings') carries the final role's
// revision instead.
func TestVersionOf(t *testing.T) {
	k := Kind{}
	if got := kinds.All().Revision(rspn.Name); got != 2 {
		t.Fatalf("rspn revision %d, want 2", got)
	}
	for _, c := range []struct{ params, want string }{
		{`{"role":"grid","point":{"model":{"kind":"rspn","k":5}}}`, "3+rspn.2"},
		{`{"role":"grid","point":{"model":{"kind":"spn","k":5}}}`, "3"},
		{`{"role":"grid","point":{"model":{"kind":"espn"}}}`, "3"},
		{`{"role":"final"}`, "3+final.2"},
		{`{"point":`, "3"},
		{`{"role":"grid","point":{"model":{"kind":"nosuchkind"}}}`, "3"},
		{`{"point":null,"role":"final"}`, "3+final.2"},
		{`{"role":"final","point":{"model":{"kind":"spn"}}}`, "3"},
		{`{"role":"final","point":{"model":{"kind":"rspn"}}}`, "3+rspn.2"},
		{`{"role":"select"}`, "3"},
		{`{"role":"grid","point":{"model":{"k":5}}}`, "3"},
		{`{"role":"grid","point":{"model":{"kind":7}}}`, "3"},
		{`{"role":"grid","point":{"model":"rspn"}}`, "3"},
		{`{"point":{"values":[{"path":"model.kind","value":"spn"}],"training":{"kind":"spn"},"model":{"k":5,"kind":"rspn"}},"role":"grid"}`, "3+rspn.2"},
		{`{"role":{"point":{"model":{"kind":"rspn"}}},"point":{"model":{"kind":"spn"}}}`, "3"},
		{`[{"point":{"model":{"kind":"rspn"}}}]`, "3"},
	} {
		if got := stages.VersionOf(k, json.RawMessage(c.params)); got != c.want {
			t.Errorf("VersionOf(%s) = %q, want %q", c.params, got, c.want)
		}
	}
}

// TestVersionOfValueMatchesJSON: the version read from the parameters'
// value (the planner's) is the one read from their JSON, and decoding
// only the version's fields gives what decoding the whole
// stages.TrainParams gives, for parameters as the plan builder encodes
// them, every model kind and role, with and without a point.
func TestVersionOfValueMatchesJSON(t *testing.T) {
	k := Kind{}
	versions := map[string]bool{}
	for _, kind := range append(kinds.All().Names(), "") {
		for _, role := range []string{stages.RoleHoldout, stages.RoleSelect, stages.RoleFinal} {
			for _, withPoint := range []bool{true, false} {
				p := stages.TrainParams{Role: role, Metric: "accuracy", Split: 3, Run: 1, Seed: 7, Device: "cuda"}
				if withPoint {
					p.Point = &schema.Point{
						Values: []schema.GridValue{{Path: "model.k", Value: 5}},
						Model:  schema.Model{Kind: kind, K: 5, Layers: 2, Hidden: 16, Pool: "sum"},
					}
				}
				raw, err := json.Marshal(p)
				if err != nil {
					t.Fatal(err)
				}
				var full stages.TrainParams
				if err := json.Unmarshal(raw, &full); err != nil {
					t.Fatal(err)
				}
				f, ok := decodeVersionFields(raw)
				if !ok || f.role != full.Role || f.point != (full.Point != nil) || f.point && f.modelKind != full.Point.Model.Kind {
					t.Errorf("%s: decodeVersionFields = %+v, %v; decoding gives %+v", raw, f, ok, full)
				}
				v, ok := k.VersionOfValue(p)
				if want := stages.VersionOf(k, raw); !ok || v != want {
					t.Errorf("%s: VersionOfValue = %q, %v; VersionOf = %q", raw, v, ok, want)
				}
				versions[v] = true
			}
		}
	}
	if !versions["3"] || !versions["3+rspn.2"] || !versions["3+final.2"] {
		t.Errorf("versions %v: want 3, 3+rspn.2 and 3+final.2 among them", versions)
	}
	if _, ok := k.VersionOfValue(stages.SelectParams{}); ok {
		t.Error("VersionOfValue knows a select stage's parameters")
	}
}
