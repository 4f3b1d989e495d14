package ref

import "math/rand/v2"

// Dropout zeroes each entry with probability P in training and scales the
// kept ones by 1/(1−P) (inverted dropout); it is the identity in evaluation.
type Dropout struct {
	P    float64
	mask []float64
	on   bool
}

// Forward applies dropout to x, drawing the mask from rng (one draw per
// entry, in order).
func (l *Dropout) Forward(x []float64, train bool, rng *rand.Rand) []float64 {
	l.on = train && l.P > 0
	if !l.on {
		return x
	}
	l.mask = make([]float64, len(x))
	y := make([]float64, len(x))
	keep := 1 / (1 - l.P)
	for i, v := range x {
		if rng.Float64() >= l.P {
			l.mask[i] = keep
		}
		y[i] = v * l.mask[i]
	}
	return y
}

// Backward returns dx = dy·mask.
func (l *Dropout) Backward(dy []float64) []float64 {
	if !l.on {
		return dy
	}
	dx := make([]float64, len(dy))
	for i, v := range dy {
		dx[i] = v * l.mask[i]
	}
	return dx
}
