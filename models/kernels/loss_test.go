package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestLossGradients checks both losses' gradients against central
// differences of their values, and that scale multiplies the gradient.
func TestLossGradients(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	rnd := func(n int) []float32 {
		s := make([]float32, n)
		for i := range s {
			s[i] = float32(rng.NormFloat64())
		}
		return s
	}
	logits, y := rnd(12), []int32{0, 2, 1, 2}
	pred, target := rnd(6), []float64{1, -1, 0.5, 2, 0, 3}
	for _, c := range []struct {
		name string
		x    []float32
		loss func(dz []float32, scale float64) float64
	}{
		{"cross-entropy", logits, func(dz []float32, s float64) float64 { return CrossEntropy(dz, s, logits, y, 4, 3) }},
		{"mse", pred, func(dz []float32, s float64) float64 { return MSE(dz, s, pred, target) }},
	} {
		g := make([]float32, len(c.x))
		c.loss(g, 1)
		g2 := make([]float32, len(c.x))
		c.loss(g2, 2)
		for i := range c.x {
			old := c.x[i]
			c.x[i] = old + 1e-2
			lp := c.loss(nil, 0)
			c.x[i] = old - 1e-2
			lm := c.loss(nil, 0)
			c.x[i] = old
			if num := (lp - lm) / 2e-2; math.Abs(num-float64(g[i])) > 1e-3 {
				t.Errorf("%s grad[%d] = %v, numeric %v", c.name, i, g[i], num)
			}
			if math.Abs(float64(g2[i]-2*g[i])) > 1e-6 {
				t.Errorf("%s grad[%d] with scale 2 = %v, want %v", c.name, i, g2[i], 2*g[i])
			}
		}
	}
}
