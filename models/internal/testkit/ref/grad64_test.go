package ref

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/spn-project/spn/internal/testkit/numgrad"
	"github.com/spn-project/spn/models"
)

// The formula checks: every layer has a second forward written straight
// from its formula, as one scalar function of one argument; its central
// differences (step 1e-6, float64) must match the layer's analytic
// gradients (float64 loops, stored in float32 for the parameters) within
// 1e-6·(1+|g|): a relative float32 rounding and the O(h²) of the difference.

// weights returns the fixed random projection r of an output of length n.
func weights(n int) []float64 {
	rng := rand.New(rand.NewPCG(11, 11))
	r := make([]float64, n)
	for i := range r {
		r[i] = rng.NormFloat64()
	}
	return r
}

func dot64(a, b []float64) float64 {
	var s float64
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

func TestGradientsFloat64(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	n, d, out := 150, 4, 3

	// Linear: y = xW + b.
	lin := NewLinear("lin", d, out, rng)
	x := randSlice(rng, n*d)
	r := weights(n * out)
	linRef := func(x, w, b []float64) float64 {
		y := make([]float64, n*out)
		for i := 0; i < n; i++ {
			for j := 0; j < out; j++ {
				s := b[j]
				for k := 0; k < d; k++ {
					s += x[i*d+k] * w[k*out+j]
				}
				y[i*out+j] = s
			}
		}
		return dot64(y, r)
	}
	lin.Forward(to64(x), n)
	dx := to32(lin.Backward(r))
	x64, w64, b64 := to64(x), to64(lin.W.W), to64(lin.B.W)
	numgrad.Check(t, 1e-6, "linear dx", func(v []float64) float64 { return linRef(v, w64, b64) }, x64, dx)
	numgrad.Check(t, 1e-6, "linear dW", func(v []float64) float64 { return linRef(x64, v, b64) }, w64, lin.W.G)
	numgrad.Check(t, 1e-6, "linear db", func(v []float64) float64 { return linRef(x64, w64, v) }, b64, lin.B.G)

	// BatchNorm + ReLU, training mode (batch statistics) and evaluation mode.
	for _, train := range []bool{true, false} {
		bn := NewBatchNormReLU("bn", d)
		bn.Gamma.Uniform(rng, 1.5)
		bn.Beta.Uniform(rng, 0.5)
		for j := range bn.RunMean {
			bn.RunMean[j], bn.RunVar[j] = rng.NormFloat64(), 0.5+rng.Float64()
		}
		runMean, runVar := append([]float64(nil), bn.RunMean...), append([]float64(nil), bn.RunVar...)
		xb := randSlice(rng, n*d)
		rb := weights(n * d)
		ref := func(x, g, b []float64) float64 {
			y := make([]float64, n*d)
			for j := 0; j < d; j++ {
				mu, v := runMean[j], runVar[j]
				if train {
					mu, v = 0, 0
					for i := 0; i < n; i++ {
						mu += x[i*d+j]
					}
					mu /= float64(n)
					for i := 0; i < n; i++ {
						v += (x[i*d+j] - mu) * (x[i*d+j] - mu)
					}
					v /= float64(n)
				}
				for i := 0; i < n; i++ {
					y[i*d+j] = math.Max(g[j]*(x[i*d+j]-mu)/math.Sqrt(v+1e-5)+b[j], 0)
				}
			}
			return dot64(y, rb)
		}
		bn.Forward(to64(xb), n, train)
		dxb := to32(bn.Backward(rb))
		xb64, g64, bb64 := to64(xb), to64(bn.Gamma.W), to64(bn.Beta.W)
		name := map[bool]string{true: "batchnorm train", false: "batchnorm eval"}[train]
		numgrad.Check(t, 1e-6, name+" dx", func(v []float64) float64 { return ref(v, g64, bb64) }, xb64, dxb)
		numgrad.Check(t, 1e-6, name+" dγ", func(v []float64) float64 { return ref(xb64, v, bb64) }, g64, bn.Gamma.G)
		numgrad.Check(t, 1e-6, name+" dβ", func(v []float64) float64 { return ref(xb64, g64, v) }, bb64, bn.Beta.G)
	}

	// Hop aggregation: y_u = (1+ε)x_u + Σ_i softmax(l)_i Σ_{v∈N_i(u)} x_v.
	hop := randomHops(rng, n, 3)
	agg := NewHopAggregation("agg", 3, d, 0.2, true)
	agg.Logits.Uniform(rng, 1)
	xa := randSlice(rng, n*d)
	ra := weights(n * d)
	aggRef := func(x, logits []float64, eps float64) float64 {
		m := math.Max(logits[0], math.Max(logits[1], logits[2]))
		var z float64
		a := make([]float64, 3)
		for i, l := range logits {
			a[i] = math.Exp(l - m)
			z += a[i]
		}
		var s float64
		for u := 0; u < n; u++ {
			for c := 0; c < d; c++ {
				y := (1 + eps) * x[u*d+c]
				for i, h := range hop {
					for _, v := range h.Row(u) {
						y += a[i] / z * x[int(v)*d+c]
					}
				}
				s += y * ra[u*d+c]
			}
		}
		return s
	}
	agg.Forward(to64(xa), hop, n)
	dxa := to32(agg.Backward(ra))
	xa64, l64, eps := to64(xa), to64(agg.Logits.W), float64(agg.Eps.W[0])
	numgrad.Check(t, 1e-6, "hop dx", func(v []float64) float64 { return aggRef(v, l64, eps) }, xa64, dxa)
	numgrad.Check(t, 1e-6, "hop dα-logits", func(v []float64) float64 { return aggRef(xa64, v, eps) }, l64, agg.Logits.G)
	numgrad.Check(t, 1e-6, "hop dε", func(v []float64) float64 { return aggRef(xa64, l64, v[0]) }, []float64{eps}, agg.Eps.G)

	// Pooling over graph segments.
	ptr := []int32{0, 20, 20, 77, 150}
	xp := randSlice(rng, n*d)
	for _, kind := range []string{models.PoolSum, models.PoolMean, models.PoolMax} {
		p, _ := NewPool(kind, d)
		rp := weights(4 * d)
		ref := func(x []float64) float64 {
			var s float64
			for g := 0; g < 4; g++ {
				a, b := int(ptr[g]), int(ptr[g+1])
				for c := 0; c < d; c++ {
					var v float64
					if kind == models.PoolMax && b > a {
						v = math.Inf(-1)
					}
					for r := a; r < b; r++ {
						switch kind {
						case models.PoolMax:
							v = math.Max(v, x[r*d+c])
						default:
							v += x[r*d+c]
						}
					}
					if kind == models.PoolMean && b > a {
						v /= float64(b - a)
					}
					s += v * rp[g*d+c]
				}
			}
			return s
		}
		p.Forward(to64(xp), ptr, n)
		numgrad.Check(t, 1e-6, "pool "+kind, ref, to64(xp), to32(p.Backward(rp)))
	}

	// Encoder: h0 = E[label] + attrs·W + b.
	enc := NewEncoder("enc", 3, 2, d, rng)
	labels := make([]int32, n)
	for i := range labels {
		labels[i] = int32(rng.IntN(3))
	}
	attrs := randSlice(rng, n*2)
	re := weights(n * d)
	encRef := func(e, w, b []float64) float64 {
		var s float64
		for u := 0; u < n; u++ {
			for c := 0; c < d; c++ {
				y := e[int(labels[u])*d+c] + b[c]
				for k := 0; k < 2; k++ {
					y += float64(attrs[u*2+k]) * w[k*d+c]
				}
				s += y * re[u*d+c]
			}
		}
		return s
	}
	enc.Forward(labels, attrs, n)
	enc.Backward(re)
	e64, ew64, eb64 := to64(enc.Emb.W), to64(enc.Attr.W), to64(enc.Bias.W)
	numgrad.Check(t, 1e-6, "encoder dE", func(v []float64) float64 { return encRef(v, ew64, eb64) }, e64, enc.Emb.G)
	numgrad.Check(t, 1e-6, "encoder dW", func(v []float64) float64 { return encRef(e64, v, eb64) }, ew64, enc.Attr.G)
	numgrad.Check(t, 1e-6, "encoder db", func(v []float64) float64 { return encRef(e64, ew64, v) }, eb64, enc.Bias.G)
}
