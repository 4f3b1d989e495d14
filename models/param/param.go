// Package param holds the trainable parameters of spn's models and their
// optimiser: Param (values and accumulated gradient), the parameter
// holders of the layers the model kinds share (linear map, input encoder,
// hop aggregation, batch norm) with their initialisation, and Adam.
//
// There is no forward or backward math here: the ops of models/rt compute
// with these parameters and add their gradients into Param.G. The random
// draw order of every constructor is part of the models' traces (same
// seed, same bits), so it must not change.
package param

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// Param is one trainable tensor with its gradient.
type Param struct {
	// Name identifies the parameter in checkpoints, e.g. "layer2.lin1.w".
	Name string
	// Shape is the tensor shape (row-major).
	Shape []int
	// W holds the values and G the accumulated gradient (same length).
	W, G []float32
	// NoDecay excludes the parameter from L2 weight decay.
	NoDecay bool
	// Frozen parameters are not updated by the optimiser (e.g. a fixed ε).
	Frozen bool
}

// NewParam returns a zero parameter of the given shape.
func NewParam(name string, shape ...int) *Param {
	n := 1
	for _, s := range shape {
		n *= s
	}
	return &Param{Name: name, Shape: append([]int(nil), shape...), W: make([]float32, n), G: make([]float32, n)}
}

// Uniform fills p with values drawn uniformly from [-bound, bound).
func (p *Param) Uniform(rng *rand.Rand, bound float64) {
	for i := range p.W {
		p.W[i] = float32((2*rng.Float64() - 1) * bound)
	}
}

// Normal fills p with values drawn from the standard normal N(0, 1).
func (p *Param) Normal(rng *rand.Rand) {
	for i := range p.W {
		p.W[i] = float32(rng.NormFloat64())
	}
}

// Fill sets every value of p to v.
func (p *Param) Fill(v float32) {
	for i := range p.W {
		p.W[i] = v
	}
}

// ZeroGrad clears the accumulated gradient.
func (p *Param) ZeroGrad() { clear(p.G) }

// CheckFinite returns an error naming p when a value or gradient is NaN or Inf.
func (p *Param) CheckFinite() error {
	for i, v := range p.W {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return fmt.Errorf("parameter %s[%d] = %v", p.Name, i, v)
		}
	}
	for i, v := range p.G {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return fmt.Errorf("gradient of %s[%d] = %v", p.Name, i, v)
		}
	}
	return nil
}
