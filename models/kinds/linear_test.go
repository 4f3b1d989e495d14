package kinds

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/models"
	"github.com/spn-project/spn/models/gat"
	"github.com/spn-project/spn/models/gcn"
	"github.com/spn-project/spn/models/internal/testkit/modeltest"
	"github.com/spn-project/spn/models/kernels"
	"github.com/spn-project/spn/schema"
)

// TestLinearGCNAffine checks that the official code's GCN (model.linear)
// is affine in its input attributes up to the readout,
// f(a·x + (1−a)·y) = a·f(x) + (1−a)·f(y), and that the MLP GCN is not
// (so the test can tell them apart).
func TestLinearGCNAffine(t *testing.T) {
	ds := modeltest.AgnDataset(t, 4, 8, 12, 3, 5)
	idx := []int{0, 1, 2, 3, 4, 5, 6, 7}
	rng := rand.New(rand.NewPCG(8, 8))
	with := func(attrs func(g int, a []float32)) *data.Batch {
		c := *ds
		c.Graphs = append([]data.Graph(nil), ds.Graphs...)
		for i := range c.Graphs {
			c.Graphs[i].Attrs = append([]float32(nil), ds.Graphs[i].Attrs...)
			attrs(i, c.Graphs[i].Attrs)
		}
		b, err := data.NewBatch(&c, nil, idx, 0)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	ys := make([][]float32, len(ds.Graphs))
	for i := range ys {
		ys[i] = modeltest.RandFloats(rng, len(ds.Graphs[i].Attrs), 2)
	}
	const a = 0.3
	bx := with(func(int, []float32) {})
	by := with(func(g int, x []float32) { copy(x, ys[g]) })
	bm := with(func(g int, x []float32) {
		for j := range x {
			x[j] = a*x[j] + (1-a)*ys[g][j]
		}
	})
	for _, linear := range []bool{true, false} {
		cfg := models.Config{
			Model:     schema.Model{Kind: gcn.Name, K: 1, Layers: 3, Hidden: 16, Pool: models.PoolMean, Linear: linear},
			NumLabels: ds.NumLabels, AttrDim: ds.AttrDim, Task: models.TaskClassification, Out: 2,
		}
		m, err := newModel(cfg, 2, kernels.CPU{Threads: 2})
		if err != nil {
			t.Fatal(err)
		}
		var outs [3][]float32
		for i, b := range []*data.Batch{bx, by, bm} {
			if outs[i], err = m.Predict(b); err != nil {
				t.Fatal(err)
			}
		}
		worst := 0.0
		for j := range outs[2] {
			want := a*float64(outs[0][j]) + (1-a)*float64(outs[1][j])
			worst = max(worst, math.Abs(float64(outs[2][j])-want)/(1+math.Abs(want)))
		}
		if linear && worst > 1e-5 {
			t.Errorf("linear GCN: f(a·x+(1−a)·y) differs from a·f(x)+(1−a)·f(y) by %.3g", worst)
		}
		if !linear && worst < 1e-3 {
			t.Errorf("MLP GCN: affine within %.3g; the test cannot tell the two apart", worst)
		}
	}
}

// TestLinearGradients checks the whole-model gradients of the linear GCN
// and the one-head linear GAT against central differences of the loss
// Step computes, on a reduced 1-Prox batch.
func TestLinearGradients(t *testing.T) {
	task := newProxTask(t, 1, 40, 1)
	for _, tc := range []struct {
		kind  string
		heads int
	}{{gcn.Name, 0}, {gat.Name, 1}} {
		cfg := competitorConfig(tc.kind, 2, 8, tc.heads, 0, task.ds.NumLabels)
		cfg.Model.Linear = true
		m, err := newModel(cfg, 5, kernels.CPU{Threads: 2})
		if err != nil {
			t.Fatal(err)
		}
		b, err := data.NewBatch(task.ds, task.hops, task.split.Train[:16], 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := m.Step(b); err != nil {
			t.Fatal(err)
		}
		ps := m.Params()
		grads := make([][]float32, len(ps))
		for i, p := range ps {
			grads[i] = append([]float32(nil), p.G...)
		}
		if n := len(m.Buffers()); n != 0 {
			t.Errorf("%s linear: %d buffers, want none (no batch norm)", tc.kind, n)
		}
		rng := rand.New(rand.NewPCG(1, 2))
		const h = 1e-2
		for i, p := range ps {
			for trial := 0; trial < 3; trial++ {
				j := rng.IntN(len(p.W))
				w := p.W[j]
				loss := func(v float32) float64 {
					p.W[j] = v
					l, _, err := m.Step(b)
					if err != nil {
						t.Fatal(err)
					}
					return l
				}
				fd := (loss(w+h) - loss(w-h)) / (2 * h)
				p.W[j] = w
				if g := float64(grads[i][j]); math.Abs(g-fd) > 2e-3+0.05*math.Abs(fd) {
					t.Errorf("%s linear: d loss / d %s[%d] = %.5g, central difference %.5g", tc.kind, p.Name, j, g, fd)
				}
			}
		}
	}
}
