package ref

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestGINEqualsSPNk1 checks that GIN (over Batch.Adj) and the SPN with k = 1
// (over N_1) built from the same seed give bit-identical outputs and
// gradients: α = softmax of one logit is exactly 1.
func TestGINEqualsSPNk1(t *testing.T) {
	ds, hops := TestData(t, 20)
	gin, err := NewGIN(TestConfig("gin", 1, PoolSumName, 0), 5)
	if err != nil {
		t.Fatal(err)
	}
	spn, err := NewSPN(TestConfig("spn", 1, PoolSumName, 0), 5)
	if err != nil {
		t.Fatal(err)
	}
	idx := []int{0, 3, 5, 7, 11}
	for _, train := range []bool{true, false} {
		og, err := gin.Forward(BatchOf(t, ds, hops, idx, 0), train)
		if err != nil {
			t.Fatal(err)
		}
		os, err := spn.Forward(BatchOf(t, ds, hops, idx, 1), train)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(og, os) {
			t.Fatalf("train=%v: gin %v != spn(k=1) %v", train, og, os)
		}
		dy := make([]float32, len(og))
		for i := range dy {
			dy[i] = float32(i) - 2.5
		}
		gin.Backward(dy)
		spn.Backward(dy)
		pg, ps := gin.Params(), spn.Params()
		for i := range pg {
			if pg[i].Name != ps[i].Name || !slices.Equal(pg[i].G, ps[i].G) {
				t.Fatalf("train=%v: gradient of %s differs", train, pg[i].Name)
			}
			pg[i].ZeroGrad()
			ps[i].ZeroGrad()
		}
	}
}

// PoolSumName avoids importing nn in the table below.
const PoolSumName = "sum"

// TestModelGradient checks the whole SPN (encoder, layers, pooling,
// readout, cross-entropy) against central differences, for every pooling.
func TestModelGradient(t *testing.T) {
	ds, hops := TestData(t, 12)
	// Random attributes break the exact ties between structurally equal
	// nodes, where max pooling is not differentiable.
	ds.AttrDim = 2
	arng := rand.New(rand.NewPCG(4, 4))
	for gi := range ds.Graphs {
		g := &ds.Graphs[gi]
		g.Attrs = make([]float32, 2*g.N)
		for i := range g.Attrs {
			g.Attrs[i] = float32(arng.NormFloat64())
		}
	}
	for _, pool := range []string{"sum", "mean", "max"} {
		cfg := TestConfig("spn", 3, pool, 0)
		cfg.AttrDim = 2
		m, err := NewSPN(cfg, 3)
		if err != nil {
			t.Fatal(err)
		}
		// β = 1 keeps most ReLUs active: ties at 0 (a column dead across a
		// whole graph) make max pooling non-differentiable.
		for _, l := range m.(*SPN).Layers {
			l.BN1.Beta.Fill(1)
			l.BN2.Beta.Fill(1)
		}
		b := BatchOf(t, ds, hops, []int{0, 1, 2, 3, 4, 5}, 3)
		// Evaluation mode: batch norm uses fixed statistics, so the loss is a
		// smooth function of every parameter except at ReLU kinks.
		loss := func() float64 {
			out, err := m.Forward(b, false)
			if err != nil {
				t.Fatal(err)
			}
			var s float64
			for i, v := range out {
				s += float64(v) * float64(i%3-1)
			}
			return s
		}
		out, _ := m.Forward(b, false)
		dy := make([]float32, len(out))
		for i := range dy {
			dy[i] = float32(i%3 - 1)
		}
		m.Backward(dy)
		// Directional derivatives along random directions v: compare
		// (L(θ+hv) − L(θ−hv))/2h with ⟨∇L, v⟩. Summing over all parameters
		// keeps float32 rounding and the rare ReLU/max kink small against the
		// signal.
		params := m.Params()
		rng := rand.New(rand.NewPCG(1, uint64(len(pool))))
		for dir := 0; dir < 5; dir++ {
			v := make([][]float32, len(params))
			var dot float64
			for pi, p := range params {
				v[pi] = make([]float32, len(p.W))
				for i := range v[pi] {
					v[pi][i] = float32(rng.NormFloat64())
					dot += float64(v[pi][i]) * float64(p.G[i])
				}
			}
			shift := func(h float32) {
				for pi, p := range params {
					for i := range p.W {
						p.W[i] += h * v[pi][i]
					}
				}
			}
			const h = 1e-4 // small: moving every parameter at once crosses ReLU kinks
			shift(h)
			lp := loss()
			shift(-2 * h)
			lm := loss()
			shift(h)
			num := (lp - lm) / (2 * h)
			if math.Abs(num-dot) > 2e-2*math.Abs(num)+2e-3 {
				t.Errorf("%s: direction %d: analytic %v numeric %v", pool, dir, dot, num)
			}
		}
	}
}

// TestParamNamesUnique guards checkpoints and optimiser state.
func TestParamNamesUnique(t *testing.T) {
	m, _ := NewSPN(TestConfig("spn", 3, "sum", 0), 0)
	seen := map[string]bool{}
	for _, p := range m.Params() {
		if seen[p.Name] {
			t.Fatalf("duplicate parameter name %s", p.Name)
		}
		seen[p.Name] = true
	}
}
