package separation

import (
	"context"
	"strings"
	"testing"

	"github.com/spn-project/spn/data/expressivity"
)

// SPN tells a triangle from a path of three nodes (degrees differ) and
// never a graph from a relabelled copy of itself.
func TestSPN(t *testing.T) {
	in := `{"name": "tri-path", "a": {"nodes": 3, "edges": [[0, 1], [1, 2], [2, 0]]}, "b": {"nodes": 3, "edges": [[0, 1], [1, 2]]}}
{"name": "path-path", "a": {"nodes": 3, "edges": [[0, 1], [1, 2]]}, "b": {"nodes": 3, "edges": [[2, 0], [0, 1]]}}
`
	pairs, err := expressivity.ReadPairs(strings.NewReader(in), "test")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	results := make([]*expressivity.Result, len(pairs))
	for i := range pairs {
		if results[i], err = expressivity.Check(ctx, &pairs[i], expressivity.Options{Ks: []int{1, 2}}); err != nil {
			t.Fatal(err)
		}
	}
	seps, err := SPN(ctx, pairs, results, 2, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(seps) != 2 || len(seps[0]) != 2 || len(seps[1]) != 2 {
		t.Fatalf("separations %+v: want 2 ks for each of 2 pairs", seps)
	}
	// At k = 1 the degrees differ; at k = 2 the uniform initial α weighs
	// N_1 and N_2 alike, and every node then sums two others.
	if s := seps[0][0]; s.K != 1 || !s.Separates() || s.Seeds != 2 {
		t.Errorf("triangle vs path, k=1: %+v, want separated", s)
	}
	for _, s := range seps[1] {
		if s.Separates() || s.MaxRelDiff > Tolerance {
			t.Errorf("path vs relabelled path, k=%d: %+v, want not separated", s.K, s)
		}
	}
}

func TestRelDiff(t *testing.T) {
	if got := relDiff([]float64{1, 4}, []float64{1, 2}); got != 0.5 {
		t.Errorf("relDiff = %g, want 2/4", got)
	}
	if got := relDiff([]float64{0.1}, []float64{0.3}); got < 0.19 || got > 0.21 {
		t.Errorf("relDiff small = %g, want 0.2 (scale at least 1)", got)
	}
}
