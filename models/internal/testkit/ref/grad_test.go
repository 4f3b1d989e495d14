package ref

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/models"
	"github.com/spn-project/spn/models/param"
)

// gradCase is one op under a finite-difference check: forward maps the
// current values of params and x to an output; backward maps an output
// gradient to the input gradient (nil if the op has no input gradient).
type gradCase struct {
	name     string
	params   []*param.Param
	x        []float64
	forward  func() []float64
	backward func(dy []float64) []float64
}

// checkGrad compares analytic gradients of L = Σ r_i·y_i (r fixed random)
// with central differences of step h (the float32 parameters are moved by
// the float32 nearest to h, and the difference is divided by the step
// actually taken); it fails when |analytic − numeric| > tol·(1 + |numeric|).
func checkGrad(t *testing.T, c gradCase, h, tol float64) {
	t.Helper()
	rng := rand.New(rand.NewPCG(7, 7))
	y := c.forward()
	r := make([]float64, len(y))
	for i := range r {
		r[i] = rng.NormFloat64()
	}
	loss := func() float64 { return dot(c.forward(), r) }
	for _, p := range c.params {
		p.ZeroGrad()
	}
	c.forward()
	dx := append([]float64(nil), c.backward(append([]float64(nil), r...))...)
	grads := make([][]float64, len(c.params))
	for i, p := range c.params {
		grads[i] = to64(p.G)
	}
	fail := func(what string, i int, analytic, num float64) bool {
		if d := math.Abs(analytic - num); d > tol*(1+math.Abs(num)) {
			t.Errorf("%s: d%s[%d] analytic %.9g numeric %.9g", c.name, what, i, analytic, num)
			return true
		}
		return false
	}
	for k, p := range c.params {
		if p.Frozen {
			continue
		}
		for i := range p.W {
			old := p.W[i]
			p.W[i] = old + float32(h)
			up := p.W[i]
			lp := loss()
			p.W[i] = old - float32(h)
			down := p.W[i]
			lm := loss()
			p.W[i] = old
			if fail(p.Name, i, grads[k][i], (lp-lm)/float64(up-down)) {
				break
			}
		}
	}
	if dx != nil && c.x != nil {
		for i := range c.x {
			old := c.x[i]
			c.x[i] = old + h
			lp := loss()
			c.x[i] = old - h
			lm := loss()
			c.x[i] = old
			if fail("x", i, dx[i], (lp-lm)/(2*h)) {
				break
			}
		}
	}
}

func randSlice64(rng *rand.Rand, n int) []float64 {
	return to64(randSlice(rng, n))
}

func randSlice(rng *rand.Rand, n int) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = float32(rng.NormFloat64())
	}
	return s
}

// randomHops returns k random (asymmetric) CSRs over n nodes.
func randomHops(rng *rand.Rand, n, k int) []data.CSR {
	hops := make([]data.CSR, k)
	for i := range hops {
		c := data.CSR{Ptr: make([]int32, n+1)}
		for u := 0; u < n; u++ {
			for v := 0; v < n; v++ {
				if v != u && rng.IntN(3) == 0 {
					c.Idx = append(c.Idx, int32(v))
				}
			}
			c.Ptr[u+1] = int32(len(c.Idx))
		}
		hops[i] = c
	}
	return hops
}

// TestGradients checks every layer's backward pass against central
// differences of its forward pass. Both are float64 loops, so the only
// error is the difference's: O(h²) for the smooth layers (step 1e-4:
// within 1e-6), and the ReLU kink, which a batch norm with β = 0 puts
// within h of some entries (a small step, 1e-5, and a tolerance of 1e-3).
func TestGradients(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	n, d := 300, 5

	lin := NewLinear("lin", d, 3, rng)
	xl := randSlice64(rng, n*d)
	bn := NewBatchNormReLU("bn", d)
	bn.Gamma.Uniform(rng, 1)
	bn.Beta.Fill(4) // far from the ReLU kink: checks the normalisation itself
	bnKink := NewBatchNormReLU("bnk", d)
	bnKink.Gamma.Uniform(rng, 1) // β = 0: about half the entries are cut by the ReLU
	xb := randSlice64(rng, n*d)
	bnEval := NewBatchNormReLU("bne", d)
	bnEval.Gamma.Uniform(rng, 1)
	bnEval.Beta.Fill(4)
	for j := range bnEval.RunMean {
		bnEval.RunMean[j], bnEval.RunVar[j] = rng.NormFloat64(), 1+rng.Float64()
	}
	hop := randomHops(rng, n, 3)
	agg := NewHopAggregation("agg", 3, d, 0.3, true)
	agg.Logits.Uniform(rng, 1)
	xa := randSlice64(rng, n*d)
	ptr := []int32{0, 10, 10, 57, 200, 300}
	pools := map[string]*Pool{}
	for _, k := range []string{models.PoolSum, models.PoolMean, models.PoolMax} {
		pools[k], _ = NewPool(k, d)
	}
	xp := randSlice64(rng, n*d)
	enc := NewEncoder("enc", 4, 2, d, rng)
	labels := make([]int32, n)
	for i := range labels {
		labels[i] = int32(rng.IntN(4))
	}
	attrs := randSlice(rng, n*2)

	cases := []gradCase{
		{"linear", lin.Params(), xl, func() []float64 { return lin.Forward(xl, n) }, lin.Backward},
		{"batchnorm-relu train", bn.Params(), xb, func() []float64 { return bn.Forward(xb, n, true) }, bn.Backward},
		{"batchnorm-relu eval", bnEval.Params(), xb, func() []float64 { return bnEval.Forward(xb, n, false) }, bnEval.Backward},
		{"hop aggregation", agg.Params(), xa, func() []float64 { return agg.Forward(xa, hop, n) }, agg.Backward},
		{"encoder", enc.Params(), nil, func() []float64 { return enc.Forward(labels, attrs, n) }, func(dy []float64) []float64 { enc.Backward(dy); return nil }},
	}
	for _, k := range []string{models.PoolSum, models.PoolMean, models.PoolMax} {
		p := pools[k]
		cases = append(cases, gradCase{"pool " + k, nil, xp, func() []float64 { return p.Forward(xp, ptr, n) }, p.Backward})
	}
	for _, c := range cases {
		checkGrad(t, c, 1e-4, 1e-6)
	}
	checkGrad(t, gradCase{"batchnorm-relu kink", bnKink.Params(), nil,
		func() []float64 { return bnKink.Forward(xb, n, true) }, bnKink.Backward}, 1e-5, 1e-3)
}

func TestDropoutGradient(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	x := randSlice64(rng, 400)
	dr := &Dropout{P: 0.3}
	c := gradCase{"dropout", nil, x,
		func() []float64 { return dr.Forward(x, true, rand.New(rand.NewPCG(5, 6))) }, dr.Backward}
	checkGrad(t, c, 1e-4, 1e-9)
	// The kept fraction is about 1−p and kept entries are scaled by 1/(1−p).
	y := dr.Forward(x, true, rand.New(rand.NewPCG(5, 6)))
	kept := 0
	for i, v := range y {
		if v != 0 {
			kept++
			if math.Abs(float64(v)-float64(x[i])/0.7) > 1e-5 {
				t.Fatalf("kept entry %d = %v, want %v", i, v, x[i]/0.7)
			}
		}
	}
	if kept < 240 || kept > 320 {
		t.Fatalf("kept %d of 400 entries with p=0.3", kept)
	}
}
