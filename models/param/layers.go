package param

import (
	"math"
	"math/rand/v2"
)

// Linear holds the parameters of y = x·W + b with W of shape In×Out.
type Linear struct {
	In, Out int
	W, B    *Param
}

// NewLinear returns a linear map named name with PyTorch's default
// initialisation: W and then b uniform in ±1/√in.
func NewLinear(name string, in, out int, rng *rand.Rand) *Linear {
	l := &Linear{In: in, Out: out, W: NewParam(name+".w", in, out), B: NewParam(name+".b", out)}
	bound := 1 / math.Sqrt(float64(max(in, 1)))
	l.W.Uniform(rng, bound)
	l.B.Uniform(rng, bound)
	return l
}

// NewGlorotLinear returns a linear layer initialised as PyTorch
// Geometric's graph convolutions are: W Glorot-uniform (±√(6/(in+out)))
// and b zero.
func NewGlorotLinear(name string, in, out int, rng *rand.Rand) *Linear {
	l := &Linear{In: in, Out: out, W: NewParam(name+".w", in, out), B: NewParam(name+".b", out)}
	l.W.Uniform(rng, math.Sqrt(6/float64(max(in+out, 1))))
	return l
}

// Params returns W and b.
func (l *Linear) Params() []*Param { return []*Param{l.W, l.B} }

// Encoder holds the parameters of the input encoding
//
//	h0_u = E[label_u] + attrs_u·W + b
//
// which equals a linear layer on the concatenation [one-hot(label), attrs].
// With neither labels nor attributes every node gets b.
type Encoder struct {
	NumLabels, AttrDim, Dim int
	// Emb is NumLabels×Dim (nil without labels); Attr maps attributes
	// (nil without attributes); Bias is the shared bias.
	Emb  *Param
	Attr *Param
	Bias *Param
}

// NewEncoder returns an encoder initialised like a PyTorch linear layer on
// the concatenated input (uniform in ±1/√fan_in; drawn in the order Emb,
// Attr, Bias).
func NewEncoder(name string, numLabels, attrDim, dim int, rng *rand.Rand) *Encoder {
	e := &Encoder{NumLabels: numLabels, AttrDim: attrDim, Dim: dim, Bias: NewParam(name+".b", dim)}
	bound := 1 / math.Sqrt(float64(max(numLabels+attrDim, 1)))
	if numLabels > 0 {
		e.Emb = NewParam(name+".emb", numLabels, dim)
		e.Emb.Uniform(rng, bound)
	}
	if attrDim > 0 {
		e.Attr = NewParam(name+".attr_w", attrDim, dim)
		e.Attr.Uniform(rng, bound)
	}
	e.Bias.Uniform(rng, bound)
	return e
}

// Params returns the encoder's parameters.
func (e *Encoder) Params() []*Param {
	var ps []*Param
	if e.Emb != nil {
		ps = append(ps, e.Emb)
	}
	if e.Attr != nil {
		ps = append(ps, e.Attr)
	}
	return append(ps, e.Bias)
}

// HopAggregation holds the parameters of the shortest-path aggregation of
// an SPN layer,
//
//	y_u = (1+ε)·x_u + Σ_{i=1..k} α_i · Σ_{v ∈ N_i(u)} x_v,  α = softmax(Logits)
//
// the k hop logits and ε (which may be frozen).
type HopAggregation struct {
	K, Dim int
	// Logits are the k pre-softmax hop weights; Eps holds ε.
	Logits, Eps *Param
}

// NewHopAggregation returns the aggregation over k hops with uniform α
// (zero logits) and the given initial ε (trainable when learnEps).
func NewHopAggregation(name string, k, dim int, eps float64, learnEps bool) *HopAggregation {
	h := &HopAggregation{K: k, Dim: dim, Logits: NewParam(name+".alpha_logits", k), Eps: NewParam(name+".eps", 1)}
	h.Eps.W[0] = float32(eps)
	h.Eps.Frozen = !learnEps
	h.Eps.NoDecay = true
	return h
}

// Params returns the α logits and ε.
func (h *HopAggregation) Params() []*Param { return []*Param{h.Logits, h.Eps} }

// BatchNormReLU holds the parameters and running statistics of
// y = ReLU(γ·(x−μ)/√(σ²+ε) + β) (PyTorch's BatchNorm1d: momentum 0.1,
// ε = 1e-5). The running statistics are not parameters; only a
// training-mode forward pass changes them.
type BatchNormReLU struct {
	Dim         int
	Gamma, Beta *Param
	// RunMean and RunVar are the running statistics used in evaluation.
	RunMean, RunVar []float64
	// Momentum and Eps follow PyTorch's defaults.
	Momentum, Eps float64
}

// NewBatchNormReLU returns a batch norm over dim features with γ = 1, β = 0,
// running mean 0 and running variance 1.
func NewBatchNormReLU(name string, dim int) *BatchNormReLU {
	b := &BatchNormReLU{Dim: dim, Gamma: NewParam(name+".gamma", dim), Beta: NewParam(name+".beta", dim),
		RunMean: make([]float64, dim), RunVar: make([]float64, dim), Momentum: 0.1, Eps: 1e-5}
	b.Gamma.Fill(1)
	for j := range b.RunVar {
		b.RunVar[j] = 1
	}
	return b
}

// Params returns γ and β.
func (b *BatchNormReLU) Params() []*Param { return []*Param{b.Gamma, b.Beta} }

// LayerNorm holds a layer norm's scale γ and shift β over dim features,
// named NAME.gamma and NAME.beta.
type LayerNorm struct {
	Gamma, Beta *Param
}

// NewLayerNorm returns a layer norm over dim features with γ = 1 and
// β = 0, PyTorch's nn.LayerNorm initialisation.
func NewLayerNorm(name string, dim int) *LayerNorm {
	l := &LayerNorm{Gamma: NewParam(name+".gamma", dim), Beta: NewParam(name+".beta", dim)}
	l.Gamma.Fill(1)
	return l
}

// Params returns γ and β.
func (l *LayerNorm) Params() []*Param { return []*Param{l.Gamma, l.Beta} }
