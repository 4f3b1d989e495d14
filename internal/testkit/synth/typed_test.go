package synth

import (
	"math"
	"testing"
)

func TestTypedTasks(t *testing.T) {
	ds, hops, err := Relational(1, 50, 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(ds.Graphs) != 50 || hops.KMax != 3 || ds.NumEdgeTypes != NumRelations || len(ds.Splits[0].Train) != 40 {
		t.Fatalf("relational: %d graphs, kmax %d, %d relations, %d train", len(ds.Graphs), hops.KMax, ds.NumEdgeTypes, len(ds.Splits[0].Train))
	}
	distinct := map[float64]bool{}
	for _, g := range ds.Graphs {
		distinct[g.Target[0]] = true
	}
	if len(distinct) < 10 {
		t.Fatalf("relational targets take %d values", len(distinct))
	}
	ds, _, err = EdgeFeatures(1, 200, 2)
	if err != nil {
		t.Fatal(err)
	}
	var pos, neg, missing [2]int
	for _, g := range ds.Graphs {
		for i, y := range g.Target {
			switch {
			case math.IsNaN(y):
				missing[i]++
			case y == 1:
				pos[i]++
			default:
				neg[i]++
			}
		}
	}
	for i := range pos {
		if pos[i] < 20 || neg[i] < 20 || missing[i] < 20 {
			t.Fatalf("task %d: %d positive, %d negative, %d missing", i, pos[i], neg[i], missing[i])
		}
	}
	if _, err := TypedGraphs(1, 0, 3, 2); err == nil {
		t.Fatal("bad parameters accepted")
	}
}
