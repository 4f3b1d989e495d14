package train

import (
	"encoding/json"
	"testing"

	"github.com/spn-project/spn/models/kinds"
	"github.com/spn-project/spn/models/rspn"
	"github.com/spn-project/spn/stages"
)

// TestVersionOf: a train stage's version carries its model kind's
// revision when that is above 1 (rspn's stacked MLPs), and is the kind's
// Version otherwise: for the other kinds (their keys, and so their
// caches, unchanged), for a final training (no configuration: its select
// stage's key holds the trainings'), and for parameters that do not
// decode (the stage reports them when it runs).
func TestVersionOf(t *testing.T) {
	k := Kind{}
	if got := kinds.All().Revision(rspn.Name); got != 2 {
		t.Fatalf("rspn revision %d, want 2", got)
	}
	for _, c := range []struct{ params, want string }{
		{`{"role":"grid","point":{"model":{"kind":"rspn","k":5}}}`, "3+rspn.2"},
		{`{"role":"grid","point":{"model":{"kind":"spn","k":5}}}`, "3"},
		{`{"role":"grid","point":{"model":{"kind":"espn"}}}`, "3"},
		{`{"role":"final"}`, "3"},
		{`{"point":`, "3"},
		{`{"role":"grid","point":{"model":{"kind":"nosuchkind"}}}`, "3"},
	} {
		if got := stages.VersionOf(k, json.RawMessage(c.params)); got != c.want {
			t.Errorf("VersionOf(%s) = %q, want %q", c.params, got, c.want)
		}
	}
}
