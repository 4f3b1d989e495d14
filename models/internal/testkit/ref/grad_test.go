package ref

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/models"
	"github.com/spn-project/spn/models/kernels"
	"github.com/spn-project/spn/models/param"
)

// gradCase is one op under a finite-difference check: forward maps the
// current values of params and x to an output; backward maps an output
// gradient to the input gradient (nil if the op has no input gradient).
type gradCase struct {
	name     string
	params   []*param.Param
	x        []float32
	forward  func() []float32
	backward func(dy []float32) []float32
}

// checkGrad compares analytic gradients of L = Σ r_i·y_i (r fixed random)
// with central differences of step h, in float32 arithmetic with the loss
// summed in float64; it fails when |analytic − numeric| > tol·(1 + |numeric|).
func checkGrad(t *testing.T, c gradCase, h, tol float64) {
	t.Helper()
	rng := rand.New(rand.NewPCG(7, 7))
	y := c.forward()
	r := make([]float32, len(y))
	for i := range r {
		r[i] = float32(rng.NormFloat64())
	}
	loss := func() float64 {
		var s float64
		for i, v := range c.forward() {
			s += float64(v) * float64(r[i])
		}
		return s
	}
	for _, p := range c.params {
		p.ZeroGrad()
	}
	c.forward()
	dx := c.backward(append([]float32(nil), r...))
	dx = append([]float32(nil), dx...)
	grads := make([][]float32, len(c.params))
	for i, p := range c.params {
		grads[i] = append([]float32(nil), p.G...)
	}
	check := func(what string, vals []float32, analytic []float32) {
		for i := range vals {
			old := vals[i]
			vals[i] = old + float32(h)
			lp := loss()
			vals[i] = old - float32(h)
			lm := loss()
			vals[i] = old
			num := (lp - lm) / (2 * h)
			if d := math.Abs(float64(analytic[i]) - num); d > tol*(1+math.Abs(num)) {
				t.Errorf("%s: d%s[%d] analytic %.6g numeric %.6g", c.name, what, i, analytic[i], num)
				return
			}
		}
	}
	for i, p := range c.params {
		if !p.Frozen {
			check(p.Name, p.W, grads[i])
		}
	}
	if dx != nil && c.x != nil {
		check("x", c.x, dx)
	}
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

func TestGradients(t *testing.T) {
	for _, threads := range []int{1, 2} {
		be := kernels.CPU{Threads: threads}
		rng := rand.New(rand.NewPCG(1, 2))
		n, d := 300, 5 // 300 rows: three row chunks, so chunked reductions are exercised

		lin := NewLinear("lin", d, 3, rng)
		xl := randSlice(rng, n*d)
		bn := NewBatchNormReLU("bn", d)
		bn.Gamma.Uniform(rng, 1)
		bn.Beta.Fill(4) // far from the ReLU kink: checks the normalisation itself
		bnKink := NewBatchNormReLU("bnk", d)
		bnKink.Gamma.Uniform(rng, 1) // β = 0: about half the entries are cut by the ReLU
		xb := randSlice(rng, n*d)
		bnEval := NewBatchNormReLU("bne", d)
		bnEval.Gamma.Uniform(rng, 1)
		bnEval.Beta.Fill(4)
		for j := range bnEval.RunMean {
			bnEval.RunMean[j], bnEval.RunVar[j] = rng.NormFloat64(), 1+rng.Float64()
		}
		hop := randomHops(rng, n, 3)
		hopT := make([]data.CSR, len(hop))
		for i := range hop {
			hopT[i] = kernels.Transpose(hop[i])
		}
		agg := NewHopAggregation("agg", 3, d, 0.3, true)
		agg.Logits.Uniform(rng, 1)
		xa := randSlice(rng, n*d)
		ptr := []int32{0, 10, 10, 57, 200, 300}
		pools := map[string]*Pool{}
		for _, k := range []string{models.PoolSum, models.PoolMean, models.PoolMax} {
			pools[k], _ = NewPool(k, d)
		}
		xp := randSlice(rng, n*d)
		enc := NewEncoder("enc", 4, 2, d, rng)
		labels := make([]int32, n)
		for i := range labels {
			labels[i] = int32(rng.IntN(4))
		}
		attrs := randSlice(rng, n*2)

		cases := []gradCase{
			{"linear", lin.Params(), xl, func() []float32 { return lin.Forward(be, xl, n) }, func(dy []float32) []float32 { return lin.Backward(be, dy) }},
			{"batchnorm-relu train", bn.Params(), xb, func() []float32 { return bn.Forward(be, xb, n, true) }, func(dy []float32) []float32 { return bn.Backward(be, dy) }},
			{"batchnorm-relu eval", bnEval.Params(), xb, func() []float32 { return bnEval.Forward(be, xb, n, false) }, func(dy []float32) []float32 { return bnEval.Backward(be, dy) }},
			{"hop aggregation", agg.Params(), xa, func() []float32 { return agg.Forward(be, xa, hop, hopT, n) }, func(dy []float32) []float32 { return agg.Backward(be, dy) }},
			{"encoder", enc.Params(), attrs, func() []float32 { return enc.Forward(be, labels, attrs, n) }, func(dy []float32) []float32 { enc.Backward(be, dy); return nil }},
		}
		for _, k := range []string{models.PoolSum, models.PoolMean, models.PoolMax} {
			p := pools[k]
			cases = append(cases, gradCase{"pool " + k, nil, xp, func() []float32 { return p.Forward(be, xp, ptr, n) }, func(dy []float32) []float32 { return p.Backward(be, dy) }})
		}
		for _, c := range cases {
			checkGrad(t, c, 1e-2, 2e-2)
		}
		// Near the ReLU kink a central difference of step h is off by up to
		// |r|/2 whenever an entry lies within h of 0: use a small step.
		// The input gradient is checked away from the kink above; here γ and β
		// check the ReLU mask.
		checkGrad(t, gradCase{"batchnorm-relu kink", bnKink.Params(), nil,
			func() []float32 { return bnKink.Forward(be, xb, n, true) },
			func(dy []float32) []float32 { return bnKink.Backward(be, dy) }}, 1e-3, 5e-2)
	}
}

func TestDropoutGradient(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	x := randSlice(rng, 400)
	dr := &Dropout{P: 0.3}
	c := gradCase{"dropout", nil, x,
		func() []float32 { return dr.Forward(x, true, rand.New(rand.NewPCG(5, 6))) },
		func(dy []float32) []float32 { return dr.Backward(dy) }}
	checkGrad(t, c, 1e-2, 1e-3)
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
