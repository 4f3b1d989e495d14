package proxcheck

import (
	"testing"

	"github.com/spn-project/spn/data"
)

func path(t *testing.T, colours ...int32) data.Graph {
	t.Helper()
	var edges [][2]int
	for i := 0; i+1 < len(colours); i++ {
		edges = append(edges, [2]int{i, i + 1})
	}
	g, err := data.FromEdges(len(colours), edges)
	if err != nil {
		t.Fatal(err)
	}
	g.Labels = colours
	return g
}

func TestCheck(t *testing.T) {
	const R, B, W = Red, Blue, White
	tests := []struct {
		name    string
		colours []int32
		h       int
		want    bool
	}{
		{"two blue within 1", []int32{B, R, B, W}, 1, true},
		{"three blue within 2", []int32{B, R, B, B}, 2, false},
		{"third blue just beyond h", []int32{B, R, B, W, B}, 2, true},
		{"third blue exactly at h", []int32{B, R, B, W, B}, 3, false},
		{"second red overloaded", []int32{R, W, W, W, B, B, R, B}, 2, false},
		{"auxiliary colours are not blue", []int32{9, R, 3, 4, 5}, 4, true},
		{"blue far from every red", []int32{R, W, W, W, B, B, B}, 3, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := path(t, tc.colours...)
			got, err := Check(&g, tc.h)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Fatalf("Check = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestCheckErrors(t *testing.T) {
	g := path(t, Blue, White)
	if _, err := Check(&g, 1); err == nil {
		t.Error("graph without red accepted")
	}
	g = path(t, Red, 12)
	if _, err := Check(&g, 1); err == nil {
		t.Error("colour 12 accepted")
	}
	g = path(t, Red, Blue)
	g.Labels = nil
	if _, err := Check(&g, 1); err == nil {
		t.Error("graph without labels accepted")
	}
	g = path(t, Red, Blue)
	g.Adj.Idx[0] = 9
	if _, err := Check(&g, 1); err == nil {
		t.Error("out-of-range neighbour accepted")
	}
	if _, err := Check(&g, 0); err == nil {
		t.Error("h=0 accepted")
	}
}

func TestCodeEdge(t *testing.T) {
	const R, B, W = Red, Blue, White
	// Path 0-1-2-3-4-5 coloured B W R W W B.
	g := path(t, B, W, R, W, W, B)
	tests := []struct {
		name     string
		h        int
		src, dst int
		want     bool
	}{
		// min_r d(dst, r) + min_b d(src, b) < h.
		{"blue to red, h=1", 1, 5, 2, true},
		{"red to blue, h=1: wrong orientation", 1, 2, 5, false},
		{"near pair below h", 3, 4, 1, true},       // d(1,R)=1 + d(4,B)=1 = 2 < 3
		{"pair at h is not below", 2, 4, 1, false}, // 2 < 2 fails
		{"existing edge", 5, 1, 2, false},
		{"self loop", 5, 3, 3, false},
		{"white pair far from both", 2, 3, 0, false}, // d(0,R)=2 + d(3,B)=2
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := CodeEdge(&g, tc.h, tc.src, tc.dst)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Fatalf("CodeEdge(%d, %d) at h=%d = %v, want %v", tc.src, tc.dst, tc.h, got, tc.want)
			}
		})
	}
	if _, err := CodeEdge(&g, 1, 0, 9); err == nil {
		t.Error("out-of-range pair accepted")
	}
	if _, err := CodeEdge(&g, 0, 0, 1); err == nil {
		t.Error("h=0 accepted")
	}
}

func TestNoise(t *testing.T) {
	const R, B, W = Red, Blue, White
	pos := path(t, B, R, B, W)
	pos.Y = 1
	noisy := path(t, B, R, B, W)  // class 0 but positive
	broken := path(t, B, R, B, B) // class 0, three blue within 2
	graphs := []data.Graph{pos, noisy, broken}
	if n, neg, err := Noise(graphs, 2); err != nil || n != 1 || neg != 2 {
		t.Fatalf("Noise = %d of %d, %v; want 1 of 2", n, neg, err)
	}
	blind := path(t, W, W, W)
	if _, _, err := Noise([]data.Graph{blind}, 2); err == nil {
		t.Error("negative without red accepted")
	}
}

// TestViolating: the share of the negatives that keep the rule broken.
func TestViolating(t *testing.T) {
	const R, B, W = Red, Blue, White
	pos := path(t, B, R, B, W)
	pos.Y = 1
	noisy := path(t, B, R, B, W)
	broken := path(t, B, R, B, B)
	for _, tc := range []struct {
		name   string
		graphs []data.Graph
		want   float64
	}{
		{"one of two noisy", []data.Graph{pos, noisy, broken}, 0.5},
		{"all broken", []data.Graph{broken, pos, broken}, 1},
		{"all noisy", []data.Graph{noisy}, 0},
		{"no negatives", []data.Graph{pos}, 1},
	} {
		if got, err := Violating(tc.graphs, 2); err != nil || got != tc.want {
			t.Errorf("%s: %g, %v; want %g", tc.name, got, err, tc.want)
		}
	}
	if _, err := Violating([]data.Graph{path(t, W, W, W)}, 2); err == nil {
		t.Error("negative without red accepted")
	}
}
