package param

import "math"

// Sizes count parameter values before a model is built, so that a
// configuration too large for memory is refused with an error instead of
// failing an allocation (which the Go runtime does not survive). Their
// arithmetic saturates at math.MaxInt64, so that a size too large for an
// int64 still compares as larger than any bound; a negative dimension
// counts as 0.

// Prod returns the number of values of a tensor of the given shape.
func Prod(shape ...int) int64 {
	for _, s := range shape {
		if s <= 0 {
			return 0
		}
	}
	n := int64(1)
	for _, s := range shape {
		if n > math.MaxInt64/int64(s) {
			return math.MaxInt64
		}
		n *= int64(s)
	}
	return n
}

// Sum returns the sum of sizes.
func Sum(sizes ...int64) int64 {
	var n int64
	for _, s := range sizes {
		if s > math.MaxInt64-n {
			return math.MaxInt64
		}
		n += max(s, 0)
	}
	return n
}

// Times returns n copies of size s.
func Times(n int, s int64) int64 {
	if n <= 0 || s <= 0 {
		return 0
	}
	if s > math.MaxInt64/int64(n) {
		return math.MaxInt64
	}
	return int64(n) * s
}

// LinearSize is the size of NewLinear's and NewGlorotLinear's W and b.
func LinearSize(in, out int) int64 { return Sum(Prod(in, out), Prod(out)) }

// EncoderSize is the size of NewEncoder's parameters.
func EncoderSize(numLabels, attrDim, dim int) int64 {
	return Sum(Prod(numLabels, dim), Prod(attrDim, dim), Prod(dim))
}

// HopAggregationSize is the size of NewHopAggregation's logits and ε.
func HopAggregationSize(k int) int64 { return Sum(Prod(k), 1) }

// BatchNormReLUSize is the size of NewBatchNormReLU's γ and β.
func BatchNormReLUSize(dim int) int64 { return Times(2, Prod(dim)) }

// LayerNormSize is the size of NewLayerNorm's γ and β.
func LayerNormSize(dim int) int64 { return Times(2, Prod(dim)) }
