package ref

import "math/rand/v2"

// Dropout zeroes each entry with probability P in training and scales the
// kept ones by 1/(1−P) (inverted dropout); it is the identity in evaluation.
type Dropout struct {
	P    float64
	mask []float32
	y    []float32
	dx   []float32
	on   bool
}

// Forward applies dropout to x, drawing the mask from rng.
func (l *Dropout) Forward(x []float32, train bool, rng *rand.Rand) []float32 {
	l.on = train && l.P > 0
	if !l.on {
		return x
	}
	l.mask = Grow(l.mask, len(x))
	l.y = Grow(l.y, len(x))
	keep := float32(1 / (1 - l.P))
	for i, v := range x {
		if rng.Float64() < l.P {
			l.mask[i] = 0
		} else {
			l.mask[i] = keep
		}
		l.y[i] = v * l.mask[i]
	}
	return l.y
}

// Backward returns dx = dy·mask.
func (l *Dropout) Backward(dy []float32) []float32 {
	if !l.on {
		return dy
	}
	l.dx = Grow(l.dx, len(dy))
	for i, v := range dy {
		l.dx[i] = v * l.mask[i]
	}
	return l.dx
}
