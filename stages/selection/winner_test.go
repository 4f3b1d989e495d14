package selection

import (
	"strings"
	"testing"

	"github.com/spn-project/spn/stages"
	"github.com/spn-project/spn/stages/cache"
)

// Winner is 0 for a single point and asks for --point while the
// evaluation has not run.
func TestWinnerWithoutEvaluation(t *testing.T) {
	c := &cache.Cache{Root: t.TempDir()}
	ev := Stage{Kind: stages.KindEvaluate, Key: "00ff", Name: "evaluate-x"}
	if w, err := Winner(c, ev, 1); w != 0 || err != nil {
		t.Errorf("one point: %d, %v", w, err)
	}
	if _, err := Winner(c, ev, 3); err == nil || !strings.Contains(err.Error(), "3 grid points and no finished evaluation") {
		t.Errorf("three points, no evaluation: %v", err)
	}
}
