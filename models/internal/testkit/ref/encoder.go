package ref

import (
	"math/rand/v2"

	"github.com/spn-project/spn/models/param"
)

// Encoder maps node inputs to the first hidden state over the parameters
// of a param.Encoder, in float64:
//
//	h0_u = E[label_u] + attrs_u·W + b
type Encoder struct {
	*param.Encoder

	labels []int32
	attrs  []float64
	n      int
}

// NewEncoder returns the encoder of param.NewEncoder.
func NewEncoder(name string, numLabels, attrDim, dim int, rng *rand.Rand) *Encoder {
	return &Encoder{Encoder: param.NewEncoder(name, numLabels, attrDim, dim, rng)}
}

// Forward encodes n nodes; labels (len n) and attrs (n×AttrDim) must be
// present exactly when the encoder has labels/attributes.
func (e *Encoder) Forward(labels []int32, attrs []float32, n int) []float64 {
	d := e.Dim
	e.labels, e.attrs, e.n = labels, to64(attrs), n
	var y []float64
	if e.Attr != nil {
		y = affine(e.attrs, e.Attr.W, e.Bias.W, n, e.AttrDim, d)
	} else {
		y = make([]float64, n*d)
		for r := 0; r < n; r++ {
			for j, b := range e.Bias.W {
				y[r*d+j] = float64(b)
			}
		}
	}
	if e.Emb != nil {
		for r, l := range labels[:n] {
			for j, v := range e.Emb.W[int(l)*d : int(l+1)*d] {
				y[r*d+j] += float64(v)
			}
		}
	}
	return y
}

// Backward accumulates the encoder's gradients (the input has none).
func (e *Encoder) Backward(dy []float64) {
	d := e.Dim
	if e.Attr != nil {
		affineBackward(e.Attr.G, e.Bias.G, e.attrs, dy, affineShape{N: e.n, In: e.AttrDim, Out: d})
	} else {
		for j := range e.Bias.G {
			var s float64
			for r := 0; r < e.n; r++ {
				s += dy[r*d+j]
			}
			e.Bias.G[j] += float32(s)
		}
	}
	if e.Emb != nil {
		for j := 0; j < d; j++ {
			sums := map[int32]float64{}
			for r, l := range e.labels[:e.n] {
				sums[l] += dy[r*d+j]
			}
			for l, s := range sums {
				e.Emb.G[int(l)*d+j] += float32(s)
			}
		}
	}
}

// to64 returns x in float64.
func to64(x []float32) []float64 {
	if x == nil {
		return nil
	}
	y := make([]float64, len(x))
	for i, v := range x {
		y[i] = float64(v)
	}
	return y
}

// to32 returns x rounded to float32.
func to32(x []float64) []float32 {
	y := make([]float32, len(x))
	for i, v := range x {
		y[i] = float32(v)
	}
	return y
}
