package schema_test

import (
	"testing"

	"github.com/spn-project/spn/models/kinds"
	"github.com/spn-project/spn/schema"
)

func init() { schema.SetTestModels(kinds.All()) }

// TestModelKindsMatchSchema checks that the Go registry of model kinds and
// the schema's #Model union name the same kinds.
func TestModelKindsMatchSchema(t *testing.T) {
	got := kinds.All().Names()
	want := schema.ModelKinds()
	if len(got) != len(want) {
		t.Fatalf("registry kinds %v, schema kinds %v", got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("registry kinds %v, schema kinds %v", got, want)
		}
	}
}
