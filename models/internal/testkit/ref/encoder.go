package ref

import (
	"math/rand/v2"

	"github.com/spn-project/spn/models/kernels"
	"github.com/spn-project/spn/models/param"
)

// Encoder maps node inputs to the first hidden state over the parameters
// of a param.Encoder:
//
//	h0_u = E[label_u] + attrs_u·W + b
type Encoder struct {
	*param.Encoder

	labels []int32
	attrs  []float32
	n      int
	y      []float32
}

// NewEncoder returns the encoder of param.NewEncoder.
func NewEncoder(name string, numLabels, attrDim, dim int, rng *rand.Rand) *Encoder {
	return &Encoder{Encoder: param.NewEncoder(name, numLabels, attrDim, dim, rng)}
}

// Forward encodes n nodes; labels (len n) and attrs (n×AttrDim) must be
// present exactly when the encoder has labels/attributes.
func (e *Encoder) Forward(be kernels.Backend, labels []int32, attrs []float32, n int) []float32 {
	d := e.Dim
	e.labels, e.attrs, e.n = labels, attrs, n
	e.y = Grow(e.y, n*d)
	if e.Attr != nil {
		be.MatMul(e.y, attrs, e.Attr.W, e.Bias.W, n, e.AttrDim, d)
	} else {
		for r := 0; r < n; r++ {
			copy(e.y[r*d:(r+1)*d], e.Bias.W)
		}
	}
	if e.Emb != nil {
		for r, l := range labels[:n] {
			yr := e.y[r*d : (r+1)*d]
			for j, v := range e.Emb.W[int(l)*d : int(l+1)*d] {
				yr[j] += v
			}
		}
	}
	return e.y
}

// Backward accumulates the encoder's gradients (the input has none).
func (e *Encoder) Backward(be kernels.Backend, dy []float32) {
	d := e.Dim
	if e.Attr != nil {
		be.MatMulAT(e.Attr.G, e.Bias.G, e.attrs, dy, e.n, e.AttrDim, d)
	} else {
		for r := 0; r < e.n; r++ {
			for j, v := range dy[r*d : (r+1)*d] {
				e.Bias.G[j] += v
			}
		}
	}
	if e.Emb != nil {
		for r, l := range e.labels[:e.n] {
			g := e.Emb.G[int(l)*d : int(l+1)*d]
			for j, v := range dy[r*d : (r+1)*d] {
				g[j] += v
			}
		}
	}
}
