package synth

import (
	"testing"

	"github.com/spn-project/spn/data/sp"
)

func TestLayered(t *testing.T) {
	ds, hops, err := Layered(1, 50, 2, [2]int{3, 5}, [2]int{2, 3}, 4)
	if err != nil {
		t.Fatal(err)
	}
	if err := ds.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := hops.Matches(ds); err != nil {
		t.Fatal(err)
	}
	pos := 0
	for i, g := range ds.Graphs {
		red, blue := -1, -1
		for u, l := range g.Labels {
			switch l {
			case ColourRed:
				red = u
			case ColourBlue:
				blue = u
			}
		}
		if red < 0 || blue < 0 {
			t.Fatalf("graph %d lacks a red or blue node", i)
		}
		d := sp.Distances(&g)[red*g.N+blue]
		if want := d <= 2; (g.Y == 1) != want || d < 0 {
			t.Fatalf("graph %d: class %d with red–blue distance %d (h = 2)", i, g.Y, d)
		}
		pos += g.Y
	}
	if pos != 25 {
		t.Fatalf("%d positive graphs of 50, want 25", pos)
	}
	s := ds.Splits[0]
	if len(s.Train) != 30 || len(s.Val) != 10 || len(s.Test) != 10 {
		t.Fatalf("split sizes %d/%d/%d, want 30/10/10", len(s.Train), len(s.Val), len(s.Test))
	}
}
