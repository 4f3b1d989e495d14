package rt

import (
	"math"

	"github.com/spn-project/spn/models/cuda"
	"github.com/spn-project/spn/models/cuda/engine"
	"github.com/spn-project/spn/models/op"
)

// Softmax writes softmax(x) into p (len(p) = len(x)), in float64 with
// the maximum subtracted: the one softmax of a row in Go, used by the hop
// weights α (the softmax op) and by predicted class probabilities
// (models/predict). The losses and the attention ops keep their own
// loops for their bits: the cross-entropy works with the log-sum-exp
// (kernels.CrossEntropy), and GAT's and Graphormer's attention keep
// their exponentials in float32 (models/gat, models/graphormer).
func Softmax(p []float64, x []float32) {
	m := math.Inf(-1)
	for _, v := range x {
		m = math.Max(m, float64(v))
	}
	var s float64
	for j, v := range x {
		p[j] = math.Exp(float64(v) - m)
		s += p[j]
	}
	for j := range p {
		p[j] /= s
	}
}

// softmax maps the k hop logits to α = softmax(logits), in float64
// (Softmax); its gradient is dl_j = α_j·(dα_j − Σ_i α_i dα_i).
type softmax struct {
	id string
	k  int
}

// NewSoftmax returns the op α = softmax(logits) over k logits, with id.
func NewSoftmax(id string, k int) op.Op { return softmax{id: id, k: k} }

// Sig implements op.Op.
func (o softmax) Sig() op.Sig { return op.Sig{ID: o.id, In: [][]int{{o.k}}, Out: []int{o.k}} }

// Forward implements op.Op.
func (o softmax) Forward(in [][]float32, a []float32) error {
	p := make([]float64, len(a))
	Softmax(p, in[0])
	for i, v := range p {
		a[i] = float32(v)
	}
	return nil
}

// Backward implements op.Op.
func (o softmax) Backward(_ [][]float32, a, da []float32, dIn [][]float32) error {
	var s float64
	for i := range a {
		s += float64(a[i]) * float64(da[i])
	}
	for j := range dIn[0] {
		dIn[0][j] = float32(float64(a[j]) * (float64(da[j]) - s))
	}
	return nil
}

// DeviceForward implements op.DeviceOp: spn_softmax, in double as on the
// CPU.
func (o softmax) DeviceForward(e *engine.Engine, in []*cuda.Buffer, a *cuda.Buffer) error {
	return e.Launch("spn_softmax", 1, a, in[0], o.k)
}

// DeviceBackward implements op.DeviceOp: spn_softmax_backward.
func (o softmax) DeviceBackward(e *engine.Engine, _ []*cuda.Buffer, a, da *cuda.Buffer, dIn []*cuda.Buffer) error {
	return e.Launch("spn_softmax_backward", 1, dIn[0], a, da, o.k)
}
