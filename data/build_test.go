package data

import (
	"math"
	"slices"
	"strings"
	"testing"
)

func TestFromEdges(t *testing.T) {
	tests := []struct {
		name    string
		n       int
		edges   [][2]int
		rows    [][]int32
		wantErr string
	}{
		{name: "dedupes and sorts", n: 3, edges: [][2]int{{2, 0}, {0, 1}, {1, 0}, {0, 2}}, rows: [][]int32{{1, 2}, {0}, {0}}},
		{name: "isolated nodes", n: 3, edges: nil, rows: [][]int32{{}, {}, {}}},
		{name: "self loop", n: 2, edges: [][2]int{{0, 1}, {1, 1}}, wantErr: "edge 1 (1,1): self loop"},
		{name: "out of range", n: 2, edges: [][2]int{{0, 2}}, wantErr: "edge 0 (0,2): node id out of range 0..1"},
		{name: "negative id", n: 2, edges: [][2]int{{-1, 0}}, wantErr: "out of range"},
		{name: "negative n", n: -1, wantErr: "negative node count"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g, err := FromEdges(tc.n, tc.edges)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for u, want := range tc.rows {
				if got := g.Adj.Row(u); !slices.Equal(got, want) {
					t.Errorf("row %d = %v, want %v", u, got, want)
				}
			}
			if err := g.Validate(&Dataset{}); err != nil {
				t.Errorf("built graph is invalid: %v", err)
			}
			back := append([][2]int(nil), g.Edges()...)
			h, _ := FromEdges(tc.n, back)
			if !slices.Equal(h.Adj.Idx, g.Adj.Idx) {
				t.Error("Edges does not round-trip through FromEdges")
			}
		})
	}
}

func TestValidate(t *testing.T) {
	good, _ := FromEdges(3, [][2]int{{0, 1}, {1, 2}})
	ds := &Dataset{NumLabels: 2, NumClasses: 2, AttrDim: 1}
	tests := []struct {
		name    string
		mutate  func(g *Graph)
		wantErr string
	}{
		{"asymmetric", func(g *Graph) { g.Adj = CSR{Ptr: []int32{0, 1, 1, 1}, Idx: []int32{1}} }, "not symmetric"},
		{"label out of range", func(g *Graph) { g.Labels = []int32{0, 2, 0} }, "label 2 outside 0..1"},
		{"labels wrong length", func(g *Graph) { g.Labels = []int32{0} }, "1 node labels for 3 nodes"},
		{"attrs wrong length", func(g *Graph) { g.Attrs = []float32{1} }, "1 attribute values"},
		{"class out of range", func(g *Graph) { g.Y = 2 }, "class 2 outside 0..1"},
		{"edge types without vocabulary", func(g *Graph) { g.EdgeType = make([]int32, len(g.Adj.Idx)) }, "type 0 outside"},
		{"self loop", func(g *Graph) { g.Adj = CSR{Ptr: []int32{0, 1, 1, 1}, Idx: []int32{0}} }, "contains itself"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := good
			g.Adj = CSR{Ptr: slices.Clone(good.Adj.Ptr), Idx: slices.Clone(good.Adj.Idx)}
			tc.mutate(&g)
			err := g.Validate(ds)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error %v, want %q", err, tc.wantErr)
			}
		})
	}
	s := Split{Train: []int{0, 1}, Val: []int{1}, Test: []int{2}}
	if err := s.Validate(3); err == nil || !strings.Contains(err.Error(), "graph 1 is in both train and validation") {
		t.Fatalf("overlapping split: %v", err)
	}
}

// TestValidateRegressionTargets: a regression target may be NaN (a
// missing label), not infinite.
func TestValidateRegressionTargets(t *testing.T) {
	g, _ := FromEdges(2, [][2]int{{0, 1}})
	ds := &Dataset{NumTargets: 2, Task: TaskRegression}
	for _, tc := range []struct {
		name    string
		target  []float64
		wantErr string
	}{
		{"labelled", []float64{1.5, -2}, ""},
		{"one missing", []float64{math.NaN(), -2}, ""},
		{"all missing", []float64{math.NaN(), math.NaN()}, ""},
		{"infinite", []float64{1, math.Inf(-1)}, "target 1 is -Inf"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g.Target = tc.target
			err := g.Validate(ds)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("error %v, want none", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("error %v, want %q", err, tc.wantErr)
			}
		})
	}
}

func TestFromTypedEdges(t *testing.T) {
	g, err := FromTypedEdges(3, [][2]int{{2, 0}, {0, 1}, {1, 0}}, []int32{3, 1, 1})
	if err != nil {
		t.Fatal(err)
	}
	// Rows: 0 -> {1, 2}, 1 -> {0}, 2 -> {0}.
	if !slices.Equal(g.EdgeType, []int32{1, 3, 1, 3}) {
		t.Fatalf("edge types %v", g.EdgeType)
	}
	if _, err := FromTypedEdges(2, [][2]int{{0, 1}, {1, 0}}, []int32{0, 2}); err == nil || !strings.Contains(err.Error(), "conflicts") {
		t.Fatalf("conflicting types: %v", err)
	}
	if _, err := FromTypedEdges(2, [][2]int{{0, 1}}, nil); err == nil {
		t.Fatal("missing types accepted")
	}
	if _, err := FromTypedEdges(2, [][2]int{{0, 1}}, []int32{-1}); err == nil {
		t.Fatal("negative type accepted")
	}
}
