package baseline

import (
	"context"
	"github.com/spn-project/spn/models/internal/testkit/modeltest"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/models"
	"github.com/spn-project/spn/models/fit"
	"github.com/spn-project/spn/models/kernels"
	"github.com/spn-project/spn/schema/modelspec"
)

func TestAgnosticForm(t *testing.T) {
	for _, tc := range []struct {
		labels, attrs int
		form          string
		params        []string
	}{
		{3, 0, FormFingerprint, []string{"mlp1.w", "mlp1.b", "mlp2.w", "mlp2.b"}},
		{3, 18, FormDeepMultisets, []string{"vertex.w", "vertex.b", "global1.w", "global1.b", "global2.w", "global2.b"}},
		{0, 4, FormDeepMultisets, []string{"vertex.w", "vertex.b", "global1.w", "global1.b", "global2.w", "global2.b"}},
	} {
		ds := modeltest.AgnDataset(t, 1, 4, 5, max(tc.labels, 2), tc.attrs)
		ds.NumLabels = tc.labels
		m, err := New(modeltest.AgnConfig(ds, 8), 1, kernels.CPU{Threads: 1})
		if err != nil {
			t.Fatal(err)
		}
		if m.Form() != tc.form {
			t.Errorf("labels %d attrs %d: form %s, want %s", tc.labels, tc.attrs, m.Form(), tc.form)
		}
		var names []string
		for _, p := range m.Params() {
			names = append(names, p.Name)
		}
		if strings.Join(names, ",") != strings.Join(tc.params, ",") {
			t.Errorf("%s params %v, want %v", tc.form, names, tc.params)
		}
		if m.Hops() != 0 {
			t.Errorf("Hops() = %d, want 0 (structure-agnostic)", m.Hops())
		}
	}
}

func TestAgnosticConfigErrors(t *testing.T) {
	ds := modeltest.AgnDataset(t, 1, 4, 5, 3, 0)
	for _, tc := range []struct {
		edit func(*models.Config)
		want string
	}{
		{func(c *models.Config) { c.Model.Dropout = 0.5 }, "model.dropout = 0.5: the baseline has no dropout"},
		{func(c *models.Config) { c.Model.Hidden = 0 }, "model.hidden = 0"},
		{func(c *models.Config) { c.Task = models.TaskRegression }, "graph classifier"},
		{func(c *models.Config) { c.NumLabels, c.AttrDim = 0, 0 }, "needs node inputs"},
		{func(c *models.Config) { c.Model.Kind = "spn" }, `model.kind "spn"`},
	} {
		cfg := modeltest.AgnConfig(ds, 8)
		tc.edit(&cfg)
		_, err := New(cfg, 1, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error %v, want it to contain %q", err, tc.want)
		}
	}
}

// The fingerprint form is exactly ReLU(W₂·ReLU(W₁·Σx + b₁) + b₂): checked
// against a direct float64 evaluation, and independent of the node order
// and of the edges.
func TestAgnosticFingerprintValues(t *testing.T) {
	ds := modeltest.AgnDataset(t, 2, 5, 9, 4, 0)
	m, err := New(modeltest.AgnConfig(ds, 6), 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	idx := []int{0, 1, 2, 3, 4}
	out, err := m.Forward(modeltest.AgnBatch(t, ds, idx), false)
	if err != nil {
		t.Fatal(err)
	}
	l1, l2 := m.lins[0], m.lins[1]
	for j, gi := range idx {
		x := make([]float64, 4)
		for _, l := range ds.Graphs[gi].Labels {
			x[l]++
		}
		h := make([]float64, 6)
		for o := range h {
			s := float64(l1.B.W[o])
			for i := range x {
				s += x[i] * float64(l1.W.W[i*6+o])
			}
			h[o] = math.Max(s, 0)
		}
		for c := 0; c < 2; c++ {
			s := float64(l2.B.W[c])
			for o := range h {
				s += h[o] * float64(l2.W.W[o*2+c])
			}
			if got, want := float64(out[j*2+c]), math.Max(s, 0); math.Abs(got-want) > 1e-4*(1+math.Abs(want)) {
				t.Errorf("graph %d class %d: %v, want %v", j, c, got, want)
			}
		}
	}
	// Reversing node order and dropping edges changes nothing.
	g := ds.Graphs[0]
	rev := data.Graph{N: g.N, Adj: data.CSR{Ptr: make([]int32, g.N+1)}, Y: g.Y}
	for u := g.N - 1; u >= 0; u-- {
		rev.Labels = append(rev.Labels, g.Labels[u])
	}
	ds2 := &data.Dataset{Name: "rev", NumLabels: 4, NumClasses: 2, Graphs: []data.Graph{rev}}
	out2, err := m.Forward(modeltest.AgnBatch(t, ds2, []int{0}), false)
	if err != nil {
		t.Fatal(err)
	}
	for c := 0; c < 2; c++ {
		if out2[c] != out[c] {
			t.Errorf("permuted, edgeless graph: output %v, want %v", out2[:2], out[:2])
		}
	}
}

// Finite-difference check of Backward: the gradient of ⟨out, s⟩ with
// respect to every parameter entry, for both forms, on a batch whose sizes
// need padding.
func TestAgnosticGradient(t *testing.T) {
	for _, tc := range []struct {
		name   string
		attrs  int
		hidden int
	}{
		{"fingerprint", 0, 5},
		{"deepmultisets", 3, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ds := modeltest.AgnDataset(t, 4, 6, 7, 3, tc.attrs)
			cfg := modeltest.AgnConfig(ds, tc.hidden)
			cfg.Out = 3
			m, err := New(cfg, 5, nil)
			if err != nil {
				t.Fatal(err)
			}
			b := modeltest.AgnBatch(t, ds, []int{0, 1, 2, 3, 4, 5})
			rng := rand.New(rand.NewPCG(9, 9))
			s := make([]float32, b.NumGraphs*cfg.Out)
			for i := range s {
				s[i] = float32(rng.NormFloat64())
			}
			loss := func() float64 {
				out, err := m.Forward(b, false)
				if err != nil {
					t.Fatal(err)
				}
				var l float64
				for i, v := range out {
					l += float64(v) * float64(s[i])
				}
				return l
			}
			if _, err := m.Forward(b, true); err != nil {
				t.Fatal(err)
			}
			m.Backward(s)
			if _, err := m.Forward(b, false); err != nil {
				t.Fatalf("backward failed: %v", err)
			}
			// Central differences; an entry whose one-sided differences
			// disagree sits at a ReLU kink within ±h and is skipped.
			const h = 1e-3
			l0 := loss()
			checked, kinks := 0, 0
			for _, p := range m.Params() {
				for i := range p.W {
					w := p.W[i]
					p.W[i] = w + h
					lp := loss()
					p.W[i] = w - h
					lm := loss()
					p.W[i] = w
					fwd, bwd := (lp-l0)/h, (l0-lm)/h
					num := (lp - lm) / (2 * h)
					if math.Abs(fwd-bwd) > 1e-2*(1+math.Abs(num)) {
						kinks++
						continue
					}
					if d := math.Abs(num - float64(p.G[i])); d > 1e-2*(1+math.Abs(num)) {
						t.Errorf("%s[%d]: analytic %v, numeric %v", p.Name, i, p.G[i], num)
					}
					checked++
				}
			}
			if checked < 10*kinks || checked == 0 {
				t.Fatalf("checked %d entries, %d skipped at kinks", checked, kinks)
			}
		})
	}
}

func TestAgnosticBackwardErrors(t *testing.T) {
	ds := modeltest.AgnDataset(t, 1, 4, 5, 3, 0)
	m, err := New(modeltest.AgnConfig(ds, 4), 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	b := modeltest.AgnBatch(t, ds, []int{0, 1})
	m.Backward(make([]float32, 4))
	if _, err := m.Forward(b, false); err == nil || !strings.Contains(err.Error(), "Backward without a training-mode Forward") {
		t.Errorf("error %v", err)
	}
	if _, err := m.Forward(b, true); err != nil {
		t.Fatal(err)
	}
	m.Backward(make([]float32, 3))
	if _, err := m.Forward(b, false); err == nil || !strings.Contains(err.Error(), "output gradient has 3 values") {
		t.Errorf("error %v", err)
	}
	bad := *b
	bad.Labels = append([]int32(nil), b.Labels...)
	bad.Labels[0] = 7
	if _, err := m.Forward(&bad, false); err == nil || !strings.Contains(err.Error(), "label 7 outside") {
		t.Errorf("error %v", err)
	}
}

// Both forms learn the label-count task through the project's training
// loop, and the same seed gives the same run.
func TestAgnosticLearns(t *testing.T) {
	for _, attrs := range []int{0, 2} {
		ds := modeltest.AgnDataset(t, 7, 400, 12, 3, attrs)
		var train, val []int
		for i := range ds.Graphs {
			if i < 300 {
				train = append(train, i)
			} else {
				val = append(val, i)
			}
		}
		run := func() *fit.Result {
			m, err := New(modeltest.AgnConfig(ds, 16), 11, kernels.CPU{Threads: 1})
			if err != nil {
				t.Fatal(err)
			}
			r, err := fit.Train(context.Background(), m, ds, nil, fit.Sets{Train: train, Val: val},
				fit.Options{Training: modelspec.Training{Optimizer: "adam", LR: 1e-2, BatchSize: 32, Epochs: 40, Selection: "best_val_metric"},
					Metric: "accuracy", Seed: 3})
			if err != nil {
				t.Fatal(err)
			}
			return r
		}
		r := run()
		best := r.Epochs[r.Best]
		if best.ValScore < 0.9 {
			t.Errorf("attrs %d: best validation accuracy %.3f, want ≥ 0.9", attrs, best.ValScore)
		}
		if r2 := run(); r2.Epochs[r2.Best].ValScore != best.ValScore || r2.Epochs[len(r2.Epochs)-1].TrainLoss != r.Epochs[len(r.Epochs)-1].TrainLoss {
			t.Errorf("attrs %d: two runs from the same seed differ", attrs)
		}
	}
}
