package retain

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/spn-project/spn/stages"
)

// A spec that does not load is a LoadError, and no stage is named.
func TestKeysLoadError(t *testing.T) {
	f := filepath.Join(t.TempDir(), "bad.cue")
	if err := os.WriteFile(f, []byte("name: 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	keep, err := Keys([]string{f}, t.TempDir(), stages.NewRegistry())
	var le *LoadError
	if !errors.As(err, &le) || keep != nil {
		t.Errorf("Keys = %v, %v; want a LoadError", keep, err)
	}
}
