package rt

import (
	"math"
	"testing"
)

// TestSoftmax: probabilities by hand, a shift of every logit changes
// nothing, and large logits do not overflow.
func TestSoftmax(t *testing.T) {
	e := math.E
	for _, c := range []struct {
		x    []float32
		want []float64
	}{
		{[]float32{0, 0}, []float64{0.5, 0.5}},
		{[]float32{1, 0}, []float64{e / (e + 1), 1 / (e + 1)}},
		{[]float32{1001, 1000}, []float64{e / (e + 1), 1 / (e + 1)}},
		{[]float32{3}, []float64{1}},
	} {
		p := make([]float64, len(c.x))
		Softmax(p, c.x)
		for j := range p {
			if math.Abs(p[j]-c.want[j]) > 1e-12 {
				t.Errorf("Softmax(%v) = %v, want %v", c.x, p, c.want)
				break
			}
		}
	}
}
