package catalog

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/spn-project/spn/data/prox"
)

// Load tells unknown names and impossible prox configurations apart from
// other errors; the fetchable names each have upstream files.
func TestLoadErrors(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	if _, err := Load(ctx, Source{DataDir: dir}, "no-such-set"); !errors.Is(err, ErrUnknown) {
		t.Errorf("unknown name: %v", err)
	}
	if _, err := Load(ctx, Source{DataDir: dir, Prox: prox.Config{H: 0, Graphs: 10}}, "prox"); !errors.Is(err, ErrBadConfig) {
		t.Errorf("prox with h 0: %v", err)
	}
	for _, n := range Fetchable() {
		if len(URLs(n)) == 0 {
			t.Errorf("%s: no upstream files", n)
		}
	}
	if !slices.Contains(Readable(), "ogbg-molhiv") || !slices.Contains(Readable(), "QM9") || slices.Contains(Readable(), "prox") {
		t.Errorf("readable names %v", Readable())
	}
}
