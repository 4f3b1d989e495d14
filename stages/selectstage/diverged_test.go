package selectstage

import (
	"strings"
	"testing"

	"github.com/spn-project/spn/models/metric"
	"github.com/spn-project/spn/stages"
	"github.com/spn-project/spn/stages/selection"
)

// A grid point with a diverged run is excluded, with a note, and the best
// of the others wins even if the diverged one's zero scores would have
// won (mae: lower is better).
func TestSelectExcludesDiverged(t *testing.T) {
	rs := runs(metric.MAE, [][]float64{{3, 3}, {0, 0}, {2, 2}}, false)
	rs[3].Result.Diverged = "training diverged: loss NaN at epoch 1 batch 0 (lr 1e+06)"
	p := stages.SelectParams{Split: 1, Points: 3, Runs: 2, SelectOn: selection.SelectOnValMetric}
	got, err := Select(p, rs)
	if err != nil {
		t.Fatal(err)
	}
	if got.Winner != 2 || len(got.Excluded) != 1 || got.Excluded[0] != 1 {
		t.Fatalf("winner %d excluded %v, want 2 and [1]", got.Winner, got.Excluded)
	}
	want := "split 1: grid point 1 (model.k=2) excluded from selection: run 1 diverged (training diverged: loss NaN at epoch 1 batch 0 (lr 1e+06))"
	if len(got.Notes) != 1 || got.Notes[0] != want {
		t.Errorf("notes %q, want %q", got.Notes, want)
	}
	// Every point diverged: nothing to select, and the error says why.
	for i := range rs {
		rs[i].Result.Diverged = "training diverged"
	}
	if _, err := Select(p, rs); err == nil || !strings.Contains(err.Error(), "every grid point diverged") {
		t.Errorf("all diverged: %v", err)
	}
	// Anything else that averages a diverged run fails naming it.
	if _, err := selection.MeanScore(rs[:1], selection.SelectOnValMetric); err == nil || !strings.Contains(err.Error(), "p0r0: the run diverged") {
		t.Errorf("mean over a diverged run: %v", err)
	}
}
