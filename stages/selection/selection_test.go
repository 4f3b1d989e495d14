package selection

import "testing"

func TestBest(t *testing.T) {
	tests := []struct {
		scores []float64
		lower  bool
		want   int
	}{
		{[]float64{1}, false, 0},
		{[]float64{1, 3, 3, 2}, false, 1},
		{[]float64{1, 3, 3, 2}, true, 0},
		{[]float64{2, 1, 1}, true, 1},
		{[]float64{-1, -1}, false, 0},
	}
	for _, tc := range tests {
		if got := Best(tc.scores, tc.lower); got != tc.want {
			t.Errorf("Best(%v, %v) = %d, want %d", tc.scores, tc.lower, got, tc.want)
		}
	}
}
