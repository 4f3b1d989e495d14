package rt

import (
	"math"
	"math/rand/v2"

	"github.com/spn-project/spn/models/param"
	"github.com/spn-project/spn/schema/modelspec"
)

// NewGlobalRead returns the global readout map W (d×d) of layer name,
// uniform in ±1/√d as a linear layer's weights, or nil when m has no
// global readout.
func NewGlobalRead(name string, m modelspec.Model, init *rand.Rand) *param.Param {
	if !m.GlobalReadout {
		return nil
	}
	w := param.NewParam(name+".global_readout.w", m.Hidden, m.Hidden)
	w.Uniform(init, 1/math.Sqrt(float64(m.Hidden)))
	return w
}

// HopWeights returns α = softmax(logits) and ε of every layer's hop
// aggregation (models.HopWeights of the SPN kinds).
func HopWeights(aggs []*param.HopAggregation) (alpha [][]float64, eps []float64) {
	for _, a := range aggs {
		al := make([]float32, a.K)
		// The softmax op's Forward never fails on a k-vector.
		_ = NewSoftmax("", a.K).Forward([][]float32{a.Logits.W}, al)
		var row []float64
		for _, v := range al {
			row = append(row, float64(v))
		}
		alpha = append(alpha, row)
		eps = append(eps, float64(a.Eps.W[0]))
	}
	return alpha, eps
}
