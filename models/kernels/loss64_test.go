package kernels

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/spn-project/spn/internal/testkit/numgrad"
)

// TestLossGradientsFloat64 checks the losses' float32 gradients against
// central differences (step 1e-6) of the losses written in float64 from
// their formulas, to float32 accuracy.
func TestLossGradientsFloat64(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 8))
	// Losses.
	logits := randMat(rng, 5*3)
	ys := []int32{0, 2, 1, 1, 0}
	gce := make([]float32, len(logits))
	CrossEntropy(gce, 1, logits, ys, len(ys), 3)
	numgrad.Check(t, 2e-4, "cross-entropy", func(v []float64) float64 {
		var l float64
		for i, y := range ys {
			m := math.Max(v[i*3], math.Max(v[i*3+1], v[i*3+2]))
			z := math.Exp(v[i*3]-m) + math.Exp(v[i*3+1]-m) + math.Exp(v[i*3+2]-m)
			l += m + math.Log(z) - v[i*3+int(y)]
		}
		return l / 5
	}, to64(logits), gce)
	pred := randMat(rng, 6)
	tgt := []float64{1, 0, -1, 2, 0.5, 0}
	gm := make([]float32, len(pred))
	MSE(gm, 1, pred, tgt)
	numgrad.Check(t, 2e-4, "mse", func(v []float64) float64 {
		var l float64
		for i := range v {
			l += (v[i] - tgt[i]) * (v[i] - tgt[i])
		}
		return l / 6
	}, to64(pred), gm)
}

func to64(s []float32) []float64 {
	o := make([]float64, len(s))
	for i, v := range s {
		o[i] = float64(v)
	}
	return o
}
