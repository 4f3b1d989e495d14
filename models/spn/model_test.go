package spn

import (
	"fmt"
	"math"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spn-project/spn/models/internal/testkit/modeltest"
	"github.com/spn-project/spn/models/internal/testkit/refkind"
	"github.com/spn-project/spn/models/rt"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/internal/testkit/synth"
	"github.com/spn-project/spn/models"
	"github.com/spn-project/spn/models/kernels"
	"github.com/spn-project/spn/models/param"
	"github.com/spn-project/spn/schema"
	"github.com/spn-project/spn/schema/modelspec"
)

// relTol is the tolerance of every comparison with the hand-written model:
// max_i |a_i − b_i| ≤ relTol · max(max_i |b_i|, 1e-6), per tensor.
const relTol = 1e-4

// pair builds the hand-written model and the Gorgonia model from one seed.
func pair(t *testing.T, cfg models.Config, seed uint64) (models.Model, *Model) {
	t.Helper()
	be := kernels.CPU{Threads: 2}
	ref, err := refkind.HandWritten().New(cfg, seed, be)
	if err != nil {
		t.Fatal(err)
	}
	m, err := New(cfg, seed, be)
	if err != nil {
		t.Fatal(err)
	}
	rp, mp := ref.Params(), m.Params()
	if len(rp) != len(mp) {
		t.Fatalf("%d parameters, hand-written model has %d", len(mp), len(rp))
	}
	for i := range rp {
		if rp[i].Name != mp[i].Name || modeltest.MaxRelDiff(mp[i].W, rp[i].W) != 0 {
			t.Fatalf("parameter %d: %s differs from the hand-written %s", i, mp[i].Name, rp[i].Name)
		}
	}
	return ref, m
}

// refStep is one training step of the hand-written model with the loss
// computed by nn (as models/fit does).
func refStep(t *testing.T, ref models.Model, b *data.Batch) (float64, []float32) {
	t.Helper()
	out, err := ref.Forward(b, true)
	if err != nil {
		t.Fatal(err)
	}
	out = append([]float32(nil), out...)
	var loss float64
	var grad []float32
	if ref.Config().Task == models.TaskClassification {
		loss, grad, _ = modeltest.CE(out, b.Y, ref.Config().Out)
	} else {
		loss, grad = modeltest.MSE(out, b.Target)
	}
	ref.Backward(grad)
	return loss, out
}

// zeroGradParam matches the biases of the linear maps that feed a
// training-mode batch norm: their exact gradient is 0 (the batch mean
// removes them), so both models hold float32 rounding noise there.
var zeroGradParam = regexp.MustCompile(`^layer[0-9]+\.lin[12]\.b$`)

// sumGradParam matches the hop weights (ε and the α logits): their
// gradients are sums over every node and feature, ⟨dy, x⟩ and ⟨dy, A_i x⟩,
// that cancel down to values far below their summands. The model adds
// them up in float32 per row chunk, the reference in float64, so they
// differ by float32 roundings of the summands, not of the result: they
// are compared within relTol of the larger of the result and a tenth of
// the largest gradient of the model. That bound is a few float32 roundings
// of the summands: in spn_k3_p0.5_mean at step 1, layer1's dε is −0.00228
// from summands whose magnitudes add up to 9.4, the largest gradient is
// 0.27, and the two sides differ by 3.5e-7 (bound 2.7e-6).
var sumGradParam = regexp.MustCompile(`^layer[0-9]+\.agg\.(eps|alpha_logits)$`)

func maxAbs(a []float32) float64 {
	var m float64
	for _, v := range a {
		m = math.Max(m, math.Abs(float64(v)))
	}
	return m
}

func maxAbsDiff(a, b []float32) float64 {
	var m float64
	for i := range a {
		m = math.Max(m, math.Abs(float64(a[i])-float64(b[i])))
	}
	return m
}

func compareState(t *testing.T, what string, ref models.Model, m *Model, train bool) {
	t.Helper()
	rp, mp := ref.Params(), m.Params()
	var scale float64
	for _, p := range rp {
		for _, v := range p.G {
			scale = math.Max(scale, math.Abs(float64(v)))
		}
	}
	for i := range rp {
		if train && zeroGradParam.MatchString(rp[i].Name) {
			for j := range rp[i].G {
				if math.Abs(float64(rp[i].G[j])) > relTol*scale || math.Abs(float64(mp[i].G[j])) > relTol*scale {
					t.Errorf("%s: gradient of %s[%d] should vanish: %v, hand-written %v (scale %v)", what, rp[i].Name, j, mp[i].G[j], rp[i].G[j], scale)
					break
				}
			}
			continue
		}
		if sumGradParam.MatchString(rp[i].Name) {
			if d := maxAbsDiff(mp[i].G, rp[i].G); d > relTol*math.Max(maxAbs(rp[i].G), 0.1*scale) {
				t.Errorf("%s: gradient of %s differs by %.3g: %v vs hand-written %v (scale %v)", what, rp[i].Name, d, mp[i].G, rp[i].G, scale)
			}
			continue
		}
		if d := modeltest.MaxRelDiff(mp[i].G, rp[i].G); d > relTol {
			t.Errorf("%s: gradient of %s differs by %.3g (relative): %v vs hand-written %v", what, rp[i].Name, d, mp[i].G[0], rp[i].G[0])
		}
	}
	rb, mb := ref.Buffers(), m.Buffers()
	if len(rb) != len(mb) {
		t.Fatalf("%s: %d buffers, hand-written %d", what, len(mb), len(rb))
	}
	for name, v := range rb {
		w, ok := mb[name]
		if !ok {
			t.Fatalf("%s: buffer %s missing", what, name)
		}
		for j := range v {
			if math.Abs(v[j]-w[j]) > relTol*(1+math.Abs(v[j])) {
				t.Errorf("%s: buffer %s[%d] = %v, hand-written %v", what, name, j, w[j], v[j])
				break
			}
		}
	}
}

// distinctAttrs returns n×dim random node attributes (nil for dim 0).
// The max-pooling cases need them: the Layered graphs have nodes alike in
// label and neighbourhood, whose hidden states tie exactly, and a float32
// model and the float64 reference break such ties differently (each
// sends the gradient to another node). Attributes make the maxima distinct.
func distinctAttrs(n, dim int) []float32 {
	if dim == 0 {
		return nil
	}
	rng := rand.New(rand.NewPCG(uint64(n), uint64(dim)))
	a := make([]float32, n*dim)
	for i := range a {
		a[i] = float32(rng.NormFloat64())
	}
	return a
}

func zeroGrads(ps []*param.Param) {
	for _, p := range ps {
		p.ZeroGrad()
	}
}

// TestMatchesHandWritten runs spn.Model and the reference SPN/GIN (refkind) side by side on
// the same weights: outputs, loss, every parameter gradient and the running
// statistics agree within relTol over several training steps (train mode,
// dropout with identical masks drawn from the same seed) and in eval mode.
func TestMatchesHandWritten(t *testing.T) {
	_, _, b := modeltest.LayeredBatch(t, 3, 24, 5)
	cases := []models.Config{
		modeltest.Config(modelspec.Model{Kind: "spn", K: 5, Layers: 3, Hidden: 16, Pool: models.PoolSum}, models.TaskClassification, 2, 3, 0),
		modeltest.Config(modelspec.Model{Kind: "spn", K: 3, Layers: 2, Hidden: 8, Dropout: 0.5, Pool: models.PoolMean}, models.TaskClassification, 2, 3, 0),
		modeltest.Config(modelspec.Model{Kind: "spn", K: 2, Layers: 2, Hidden: 8, Dropout: 0.3, Pool: models.PoolMax}, models.TaskClassification, 2, 3, 2),
		modeltest.Config(modelspec.Model{Kind: "gin", K: 1, Layers: 3, Hidden: 16, Dropout: 0.2, Pool: models.PoolSum}, models.TaskClassification, 2, 3, 0),
		modeltest.Config(modelspec.Model{Kind: "spn", K: 4, Layers: 2, Hidden: 8, Pool: models.PoolSum}, models.TaskRegression, 2, 3, 0),
	}
	for _, cfg := range cases {
		name := fmt.Sprintf("%s_k%d_p%v_%s_%s", cfg.Model.Kind, cfg.Model.K, cfg.Model.Dropout, cfg.Model.Pool, cfg.Task)
		t.Run(name, func(t *testing.T) {
			bb := *b
			bb.Attrs, bb.AttrDim = distinctAttrs(b.N, cfg.AttrDim), cfg.AttrDim
			if cfg.Task == models.TaskRegression {
				bb.Target = make([]float64, b.NumGraphs*cfg.Out)
				for i := range bb.Target {
					bb.Target[i] = math.Sin(float64(i))
				}
			}
			ref, m := pair(t, cfg, 11)
			adamR := param.NewAdam(ref.Params(), 0.01, 0)
			for step := 0; step < 3; step++ {
				what := fmt.Sprintf("step %d", step)
				lr, or := refStep(t, ref, &bb)
				lm, om, err := m.Step(&bb)
				if err != nil {
					t.Fatal(err)
				}
				if d := modeltest.MaxRelDiff(om, or); d > relTol {
					t.Errorf("%s: outputs differ by %.3g (relative)", what, d)
				}
				if math.Abs(lm-lr) > relTol*math.Abs(lr) {
					t.Errorf("%s: loss %v, hand-written %v", what, lm, lr)
				}
				compareState(t, what, ref, m, true)
				// Keep the models in lockstep: Adam turns the rounding noise
				// of the vanishing gradients into full-size steps, so m
				// takes ref's updated weights instead of its own update.
				adamR.Step()
				for i, p := range m.Params() {
					copy(p.W, ref.Params()[i].W)
					p.ZeroGrad()
				}
			}
			pr, err := ref.Forward(&bb, false)
			if err != nil {
				t.Fatal(err)
			}
			pm, err := m.Predict(&bb)
			if err != nil {
				t.Fatal(err)
			}
			if d := modeltest.MaxRelDiff(pm, pr); d > relTol {
				t.Errorf("eval: outputs differ by %.3g (relative)", d)
			}
		})
	}
}

// TestSPNk1IsGIN checks that the SPN with k = 1 (over N_1) and GIN (over
// the adjacency) are the same function with the same gradients: bit for
// bit, since N_1 is the adjacency.
func TestSPNk1IsGIN(t *testing.T) {
	_, _, b := modeltest.LayeredBatch(t, 5, 16, 1)
	be := kernels.CPU{Threads: 2}
	spn, err := New(modeltest.Config(modelspec.Model{Kind: "spn", K: 1, Layers: 3, Hidden: 8, Dropout: 0.4, Pool: models.PoolSum}, models.TaskClassification, 2, 3, 0), 21, be)
	if err != nil {
		t.Fatal(err)
	}
	gin, err := New(modeltest.Config(modelspec.Model{Kind: "gin", K: 1, Layers: 3, Hidden: 8, Dropout: 0.4, Pool: models.PoolSum}, models.TaskClassification, 2, 3, 0), 21, be)
	if err != nil {
		t.Fatal(err)
	}
	if spn.Hops() != 1 || gin.Hops() != 0 {
		t.Fatalf("Hops() = %d (spn), %d (gin); want 1, 0", spn.Hops(), gin.Hops())
	}
	ls, os, err := spn.Step(b)
	if err != nil {
		t.Fatal(err)
	}
	lg, og, err := gin.Step(b)
	if err != nil {
		t.Fatal(err)
	}
	if ls != lg {
		t.Errorf("loss: spn k=1 %v, gin %v", ls, lg)
	}
	for i := range os {
		if os[i] != og[i] {
			t.Fatalf("output %d: spn k=1 %v, gin %v", i, os[i], og[i])
		}
	}
	ps, pg := spn.Params(), gin.Params()
	for i := range ps {
		for j := range ps[i].G {
			if ps[i].G[j] != pg[i].G[j] {
				t.Fatalf("gradient of %s[%d]: spn k=1 %v, gin %v", ps[i].Name, j, ps[i].G[j], pg[i].G[j])
			}
		}
	}
	// For k = 1, α = softmax of one logit is 1 and its gradient is 0.
	if g := ps[2].G[0]; ps[2].Name != "layer1.agg.alpha_logits" || g != 0 {
		t.Errorf("%s gradient = %v, want 0 for k = 1", ps[2].Name, g)
	}
}

// TestAdaptorMatchesStep checks the models.Model adaptor (Forward in
// training mode, then Backward with the loss gradient from nn) against the
// hand-written model, and that it updates the running statistics once.
func TestAdaptorMatchesStep(t *testing.T) {
	_, _, b := modeltest.LayeredBatch(t, 7, 20, 4)
	cfg := modeltest.Config(modelspec.Model{Kind: "spn", K: 4, Layers: 2, Hidden: 8, Dropout: 0.3, Pool: models.PoolMean}, models.TaskClassification, 2, 3, 0)
	ref, m := pair(t, cfg, 5)
	var mm models.Model = m
	for step := 0; step < 2; step++ {
		or, err := ref.Forward(b, true)
		if err != nil {
			t.Fatal(err)
		}
		out, err := mm.Forward(b, true)
		if err != nil {
			t.Fatal(err)
		}
		if d := modeltest.MaxRelDiff(out, or); d > relTol {
			t.Errorf("step %d: outputs differ by %.3g (relative)", step, d)
		}
		// Both backward passes start from the same output gradient.
		_, grad, _ := modeltest.CE(or, b.Y, cfg.Out)
		ref.Backward(grad)
		mm.Backward(grad)
		compareState(t, fmt.Sprintf("adaptor step %d", step), ref, m, true)
		zeroGrads(ref.Params())
		zeroGrads(m.Params())
	}
	if _, err := mm.Forward(b, false); err != nil {
		t.Fatal(err)
	}
	mm.Backward(make([]float32, b.NumGraphs*cfg.Out))
	if _, err := mm.Forward(b, true); err == nil {
		t.Errorf("Backward after an evaluation-mode Forward: the next Forward did not fail")
	}
}

// TestLearns trains spn.Model with the project's Adam on a small task whose
// class is whether two marked nodes are within 3 hops: the training loss
// must fall clearly within a few dozen full-batch steps.
func TestLearns(t *testing.T) {
	ds, hops, err := synth.Layered(9, 64, 3, [2]int{3, 6}, [2]int{1, 3}, 4)
	if err != nil {
		t.Fatal(err)
	}
	b, err := data.NewBatch(ds, hops, ds.Splits[0].Train, 4)
	if err != nil {
		t.Fatal(err)
	}
	m, err := New(modeltest.Config(modelspec.Model{Kind: "spn", K: 4, Layers: 3, Hidden: 32, Pool: models.PoolSum}, models.TaskClassification, 2, 3, 0), 1, kernels.CPU{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	opt := param.NewAdam(m.Params(), 0.01, 0)
	var first, last float64
	for step := 0; step < 40; step++ {
		loss, _, err := m.Step(b)
		if err != nil {
			t.Fatal(err)
		}
		if step == 0 {
			first = loss
		}
		last = loss
		opt.Step()
	}
	t.Logf("training loss %.4f → %.4f over 40 steps", first, last)
	if last > 0.5*first {
		t.Errorf("training loss %.4f → %.4f: did not halve in 40 steps", first, last)
	}
}

// TestCacheAcrossBatches runs batches of different sizes that share
// compiled graphs (same padded sizes) alternately through spn.Model and the
// hand-written model: every step matches, so re-pointing a cached graph at
// a new batch (and padding) changes nothing.
func TestCacheAcrossBatches(t *testing.T) {
	ds, hops, err := synth.Layered(4, 40, 3, [2]int{3, 6}, [2]int{1, 3}, 3)
	if err != nil {
		t.Fatal(err)
	}
	var batches []*data.Batch
	for _, r := range [][2]int{{0, 9}, {9, 20}, {20, 30}, {30, 40}, {0, 12}} {
		idx := make([]int, 0, r[1]-r[0])
		for i := r[0]; i < r[1]; i++ {
			idx = append(idx, i)
		}
		b, err := data.NewBatch(ds, hops, idx, 3)
		if err != nil {
			t.Fatal(err)
		}
		b.Attrs, b.AttrDim = distinctAttrs(b.N, 2), 2
		batches = append(batches, b)
	}
	cfg := modeltest.Config(modelspec.Model{Kind: "spn", K: 3, Layers: 2, Hidden: 8, Dropout: 0.3, Pool: models.PoolMax}, models.TaskClassification, 2, 3, 2)
	ref, m := pair(t, cfg, 9)
	for round := 0; round < 2; round++ {
		for i, b := range batches {
			what := fmt.Sprintf("round %d batch %d (%d nodes)", round, i, b.N)
			lr, or := refStep(t, ref, b)
			lm, om, err := m.Step(b)
			if err != nil {
				t.Fatal(err)
			}
			if d := modeltest.MaxRelDiff(om, or); d > relTol {
				t.Errorf("%s: outputs differ by %.3g (relative)", what, d)
			}
			if math.Abs(lm-lr) > relTol*math.Abs(lr) {
				t.Errorf("%s: loss %v, hand-written %v", what, lm, lr)
			}
			compareState(t, what, ref, m, true)
			zeroGrads(ref.Params())
			zeroGrads(m.Params())
			pr, err := ref.Forward(b, false)
			if err != nil {
				t.Fatal(err)
			}
			pm, err := m.Predict(b)
			if err != nil {
				t.Fatal(err)
			}
			if d := modeltest.MaxRelDiff(pm, pr); d > relTol {
				t.Errorf("%s: eval outputs differ by %.3g (relative)", what, d)
			}
		}
	}
	if m.CacheHits == 0 || m.CacheMisses > 4 {
		t.Errorf("%d cache hits, %d misses: the compiled graphs were not reused", m.CacheHits, m.CacheMisses)
	}
	t.Logf("%d cache hits, %d misses", m.CacheHits, m.CacheMisses)
}

// TestCacheEviction checks that a model with room for one compiled graph
// evicts correctly and computes bit for bit what an uncached model computes.
func TestCacheEviction(t *testing.T) {
	ds, hops, err := synth.Layered(4, 40, 3, [2]int{3, 6}, [2]int{1, 3}, 3)
	if err != nil {
		t.Fatal(err)
	}
	cfg := modeltest.Config(modelspec.Model{Kind: "spn", K: 3, Layers: 2, Hidden: 8, Dropout: 0.3, Pool: models.PoolMean}, models.TaskClassification, 2, 3, 0)
	be := kernels.CPU{Threads: 2}
	small, err := New(cfg, 3, be)
	if err != nil {
		t.Fatal(err)
	}
	small.LimitCache(1, rt.MaxCachedBytes)
	none, err := New(cfg, 3, be)
	if err != nil {
		t.Fatal(err)
	}
	none.LimitCache(0, 0)
	for step, r := range [][2]int{{0, 5}, {0, 30}, {5, 10}, {10, 15}, {0, 40}, {20, 40}} {
		idx := make([]int, 0, r[1]-r[0])
		for i := r[0]; i < r[1]; i++ {
			idx = append(idx, i)
		}
		b, err := data.NewBatch(ds, hops, idx, 3)
		if err != nil {
			t.Fatal(err)
		}
		ls, os, err := small.Step(b)
		if err != nil {
			t.Fatal(err)
		}
		ln, on, err := none.Step(b)
		if err != nil {
			t.Fatal(err)
		}
		if ls != ln || modeltest.MaxRelDiff(os, on) != 0 {
			t.Fatalf("step %d: cached model loss %v, uncached %v (outputs differ by %g)", step, ls, ln, modeltest.MaxRelDiff(os, on))
		}
		ns, _ := small.CachedGraphs()
		nn0, _ := none.CachedGraphs()
		if ns > 1 || nn0 != 0 {
			t.Fatalf("step %d: %d and %d graphs cached, want ≤ 1 and 0", step, ns, nn0)
		}
	}
	sp, np := small.Params(), none.Params()
	for i := range sp {
		if modeltest.MaxRelDiff(sp[i].G, np[i].G) != 0 {
			t.Fatalf("gradient of %s: cached and uncached models differ", sp[i].Name)
		}
	}
	if small.CacheHits == 0 {
		t.Errorf("no cache hit in consecutive batches of the same padded sizes")
	}
}

// TestThreadIndependence checks that training steps and predictions are
// the same bit for bit with 1 and 3 kernel threads.
func TestThreadIndependence(t *testing.T) {
	_, _, b := modeltest.LayeredBatch(t, 8, 60, 4) // several kernel row chunks
	cfg := modeltest.Config(modelspec.Model{Kind: "spn", K: 4, Layers: 2, Hidden: 16, Dropout: 0.3, Pool: models.PoolSum}, models.TaskClassification, 2, 3, 0)
	var outs [][]float32
	var grads [][]float32
	for _, th := range []int{1, 3} {
		m, err := New(cfg, 2, kernels.CPU{Threads: th})
		if err != nil {
			t.Fatal(err)
		}
		_, out, err := m.Step(b)
		if err != nil {
			t.Fatal(err)
		}
		pred, err := m.Predict(b)
		if err != nil {
			t.Fatal(err)
		}
		outs = append(outs, append(out, pred...))
		var g []float32
		for _, p := range m.Params() {
			g = append(g, p.G...)
		}
		grads = append(grads, g)
	}
	if b.N <= kernels.ChunkRows {
		t.Fatalf("batch of %d nodes fits in one kernel chunk", b.N)
	}
	if modeltest.MaxRelDiff(outs[0], outs[1]) != 0 || modeltest.MaxRelDiff(grads[0], grads[1]) != 0 {
		t.Errorf("results differ between 1 and 3 threads")
	}
}

// TestAlphaInitNormal checks model.alpha_init "normal": the hop-weight
// logits are drawn (not all zero, differing between layers, deterministic
// in the seed), α is then not uniform, and every other parameter equals
// the default initialisation's.
func TestAlphaInitNormal(t *testing.T) {
	be := kernels.CPU{Threads: 1}
	cfg := modeltest.Config(modelspec.Model{Kind: "spn", K: 5, Layers: 3, Hidden: 8, Pool: models.PoolSum}, models.TaskClassification, 2, 3, 0)
	plain, err := New(cfg, 4, be)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Model.AlphaInit = modelspec.AlphaNormal
	drawn, err := New(cfg, 4, be)
	if err != nil {
		t.Fatal(err)
	}
	again, err := New(cfg, 4, be)
	if err != nil {
		t.Fatal(err)
	}
	pp, pd, pa := plain.Params(), drawn.Params(), again.Params()
	logits := 0
	for i := range pp {
		if !slices.Equal(pd[i].W, pa[i].W) {
			t.Fatalf("%s differs between two builds from one seed", pd[i].Name)
		}
		if !strings.HasSuffix(pp[i].Name, ".alpha_logits") {
			if !slices.Equal(pp[i].W, pd[i].W) {
				t.Errorf("%s changed with alpha_init", pp[i].Name)
			}
			continue
		}
		logits++
		if slices.ContainsFunc(pp[i].W, func(v float32) bool { return v != 0 }) {
			t.Errorf("default %s = %v, want zeros", pp[i].Name, pp[i].W)
		}
		if !slices.ContainsFunc(pd[i].W, func(v float32) bool { return v != 0 }) {
			t.Errorf("normal %s = %v, want drawn", pd[i].Name, pd[i].W)
		}
	}
	if logits != 3 {
		t.Fatalf("%d logit parameters, want 3", logits)
	}
	alpha, _ := drawn.HopWeights()
	if alpha[0][0] == alpha[0][1] || slices.Equal(alpha[0], alpha[1]) {
		t.Errorf("α after a normal initialisation = %v", alpha)
	}
	cfg.Model.AlphaInit = "ones"
	if errs := (Kind{}).Check(cfg.Model, schema.DatasetInfo{KMax: 10}); len(errs) == 0 {
		t.Error("alpha_init \"ones\" accepted")
	}
}
