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

// TestMSEMissingTargets checks the regression loss with missing (NaN)
// targets against the masked mean written here in float64 with plain
// loops: the loss over the labelled entries only, its gradient (central
// differences over the labelled predictions, scaled), exactly 0 at a
// missing target, 0 and no NaN when none is labelled, and, without a
// missing target, the bits of the plain mean over every entry.
func TestMSEMissingTargets(t *testing.T) {
	nan := math.NaN()
	rng := rand.New(rand.NewPCG(21, 22))
	const scale = 0.7
	for _, c := range []struct {
		name   string
		target []float64
	}{
		{"some missing", []float64{1.5, nan, -0.25, nan, nan, 2, 0, nan}},
		{"one labelled", []float64{nan, nan, nan, -3}},
		{"none labelled", []float64{nan, nan, nan}},
		{"none missing", []float64{0.5, -1, 2, 0, 3.25}},
	} {
		t.Run(c.name, func(t *testing.T) {
			pred := randMat(rng, len(c.target))
			var lab []int
			for i, v := range c.target {
				if !math.IsNaN(v) {
					lab = append(lab, i)
				}
			}
			// The masked mean over the labelled entries, in float64.
			masked := func(p []float64) float64 {
				if len(lab) == 0 {
					return 0
				}
				var s float64
				for j, i := range lab {
					d := p[j] - c.target[i]
					s += d * d
				}
				return s / float64(len(lab))
			}
			labPred := make([]float64, len(lab))
			for j, i := range lab {
				labPred[j] = float64(pred[i])
			}
			dz := make([]float32, len(pred))
			for i := range dz {
				dz[i] = 9 // every entry must be written
			}
			loss := MSE(dz, scale, pred, c.target)
			if want := masked(labPred); math.IsNaN(loss) || math.Abs(loss-want) > 1e-12*(1+want) {
				t.Fatalf("loss %v, want %v (mean over %d labelled entries)", loss, want, len(lab))
			}
			if l := MSE(nil, 0, pred, c.target); l != loss {
				t.Errorf("loss without the gradient %v, with it %v", l, loss)
			}
			labGrad := make([]float32, len(lab))
			for j, i := range lab {
				labGrad[j] = dz[i]
			}
			numgrad.Check(t, 2e-4, "dpred (labelled)", func(v []float64) float64 { return scale * masked(v) }, labPred, labGrad)
			for i, v := range c.target {
				if math.IsNaN(v) && dz[i] != 0 {
					t.Errorf("dz[%d] = %v at a missing target, want 0", i, dz[i])
				}
			}
			if len(lab) < len(c.target) {
				return
			}
			// No missing target: the formula before masking, bit for bit.
			var old float64
			oldDz := make([]float32, len(pred))
			for i, tv := range c.target {
				e := float64(pred[i]) - tv
				old += e * e
				oldDz[i] = float32(scale * 2 * (float64(pred[i]) - tv) / float64(len(c.target)))
			}
			old /= float64(len(c.target))
			if math.Float64bits(loss) != math.Float64bits(old) {
				t.Errorf("loss %v, the unmasked mean %v: not the same bits", loss, old)
			}
			for i := range dz {
				if math.Float32bits(dz[i]) != math.Float32bits(oldDz[i]) {
					t.Errorf("dz[%d] = %v, the unmasked gradient %v: not the same bits", i, dz[i], oldDz[i])
				}
			}
		})
	}
}
