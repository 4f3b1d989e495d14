package kinds

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/spn-project/spn/models/gat"
	"github.com/spn-project/spn/models/gcn"
	"github.com/spn-project/spn/models/graphormer"
	"github.com/spn-project/spn/models/internal/testkit/modeltest"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/data/prox"
	"github.com/spn-project/spn/data/sp"
	"github.com/spn-project/spn/models"
	"github.com/spn-project/spn/models/kernels"
	"github.com/spn-project/spn/models/param"
	"github.com/spn-project/spn/schema/modelspec"

	"github.com/spn-project/spn/internal/testkit/golden"
)

// proxTask is a reduced h-Proximity set (small layered graphs) with its
// hop sets and fold 0.
type proxTask struct {
	ds    *data.Dataset
	hops  *data.Hops
	split data.Split
}

func newProxTask(t testing.TB, h, graphs, kmax int) proxTask {
	t.Helper()
	ds, err := prox.Generate(context.Background(), prox.Config{H: h, Graphs: graphs, Levels: [2]int{5, 8}, Width: [2]int{3, 5}, Seed: 1, Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	hops, err := sp.Compute(context.Background(), ds.Graphs, kmax, false, 2)
	if err != nil {
		t.Fatal(err)
	}
	return proxTask{ds: ds, hops: hops, split: ds.Splits[0]}
}

func competitorConfig(kind string, layers, hidden, heads, maxDist int, numLabels int) models.Config {
	return models.Config{
		Model:     modelspec.Model{Kind: kind, K: 1, Layers: layers, Hidden: hidden, Dropout: 0, Pool: models.PoolMean, Heads: heads, MaxDist: maxDist},
		NumLabels: numLabels, Task: models.TaskClassification, Out: 2,
	}
}

// trainCompetitor trains m with Adam for epochs over the task's training
// graphs in shuffled batches and returns the accuracy on the training and
// test graphs.
func trainCompetitor(t *testing.T, m gorgonia, task proxTask, epochs, batch int, lr float64) (train, test float64) {
	t.Helper()
	opt := param.NewAdam(m.Params(), lr, 0)
	rng := rand.New(rand.NewPCG(5, 5))
	idx := append([]int(nil), task.split.Train...)
	k := m.Hops()
	for ep := 0; ep < epochs; ep++ {
		rng.Shuffle(len(idx), func(i, j int) { idx[i], idx[j] = idx[j], idx[i] })
		for lo := 0; lo < len(idx); lo += batch {
			b, err := data.NewBatch(task.ds, task.hops, idx[lo:min(lo+batch, len(idx))], k)
			if err != nil {
				t.Fatal(err)
			}
			if _, _, err := m.Step(b); err != nil {
				t.Fatal(err)
			}
			opt.Step()
		}
	}
	acc := func(set []int) float64 {
		b, err := data.NewBatch(task.ds, task.hops, set, k)
		if err != nil {
			t.Fatal(err)
		}
		out, err := m.Predict(b)
		if err != nil {
			t.Fatal(err)
		}
		ok := 0
		for j, y := range b.Y {
			pred := int32(0)
			if out[2*j+1] > out[2*j] {
				pred = 1
			}
			if pred == y {
				ok++
			}
		}
		return float64(ok) / float64(len(b.Y))
	}
	return acc(task.split.Train), acc(task.split.Test)
}

// learnCase trains one competitor kind on reduced 1-Prox and requires test
// accuracy well above chance (50 %).
func learnCase(t *testing.T, kind string, layers, heads, maxDist, epochs int, lr, want float64) {
	t.Helper()
	task := newProxTask(t, 1, 400, max(maxDist, 1))
	m, err := newModel(competitorConfig(kind, layers, 32, heads, maxDist, task.ds.NumLabels), 3, kernels.CPU{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	tr, te := trainCompetitor(t, m, task, epochs, 32, lr)
	t.Logf("%s on 1-Prox (%d graphs): train accuracy %.3f, test accuracy %.3f after %d epochs", kind, len(task.ds.Graphs), tr, te, epochs)
	if te < want {
		t.Errorf("%s: test accuracy %.3f on 1-Prox, want ≥ %.2f", kind, te, want)
	}
}

func TestGCNLearns(t *testing.T) { learnCase(t, gcn.Name, 2, 0, 0, 80, 3e-3, 0.75) }

// TestCompetitorErrorsGolden renders the errors of bad configurations and
// bad batches of the competitor kinds and compares them with
// testdata/competitor_errors.golden (go test -update rewrites it).
func TestCompetitorErrorsGolden(t *testing.T) {
	be := kernels.CPU{Threads: 1}
	var sb strings.Builder
	for _, tc := range []struct {
		name string
		edit func(c *models.Config)
	}{
		{"unknown kind", func(c *models.Config) { c.Model.Kind = "nope" }},
		{"gcn k=2", func(c *models.Config) { c.Model.K = 2 }},
		{"gat k=3", func(c *models.Config) { c.Model.Kind, c.Model.K = gat.Name, 3 }},
		{"gat heads 5", func(c *models.Config) { c.Model.Kind, c.Model.Heads = gat.Name, 5 }},
		{"negative heads", func(c *models.Config) { c.Model.Kind, c.Model.Heads = gat.Name, -1 }},
		{"no layers", func(c *models.Config) { c.Model.Layers = 0 }},
		{"no width", func(c *models.Config) { c.Model.Hidden = 0 }},
		{"dropout 1", func(c *models.Config) { c.Model.Dropout = 1 }},
		{"unknown pooling", func(c *models.Config) { c.Model.Pool = "median" }},
		{"no outputs", func(c *models.Config) { c.Out = 0 }},
		{"unknown task", func(c *models.Config) { c.Task = "ranking" }},
		{"graphormer max_dist -1", func(c *models.Config) { c.Model.Kind, c.Model.MaxDist = graphormer.Name, -1 }},
	} {
		c := competitorConfig(gcn.Name, 2, 32, 0, 0, 3)
		tc.edit(&c)
		_, err := newModel(c, 1, be)
		fmt.Fprintf(&sb, "New, %s: %v\n", tc.name, err)
	}
	_, err := newModel(competitorConfig(gcn.Name, 2, 32, 0, 0, 3), 1, nil)
	fmt.Fprintf(&sb, "New, nil backend: %v\n", err)
	task := newProxTask(t, 3, 20, 2)
	gph, err := newModel(competitorConfig(graphormer.Name, 1, 8, 2, 5, task.ds.NumLabels), 1, be)
	if err != nil {
		t.Fatal(err)
	}
	short, err := data.NewBatch(task.ds, task.hops, task.split.Train[:4], 2)
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = gph.Step(short)
	fmt.Fprintf(&sb, "Step, graphormer (max_dist 5) on a batch with 2 hop sets: %v\n", err)
	gat, err := newModel(competitorConfig(gat.Name, 1, 8, 2, 0, task.ds.NumLabels), 1, be)
	if err != nil {
		t.Fatal(err)
	}
	b, err := data.NewBatch(task.ds, task.hops, task.split.Train[:4], 0)
	if err != nil {
		t.Fatal(err)
	}
	// Drop one direction of the first edge: the adjacency is no longer
	// symmetric (a valid CSR, so only the GAT reverse-edge map notices).
	b.Adj = dropFirstEdge(b.Adj)
	_, _, err = gat.Step(b)
	fmt.Fprintf(&sb, "Step, gat on an asymmetric adjacency: %v\n", err)
	gcn, err := newModel(competitorConfig(gcn.Name, 1, 8, 0, 0, task.ds.NumLabels), 1, be)
	if err != nil {
		t.Fatal(err)
	}
	_, err = gcn.Predict(b)
	fmt.Fprintf(&sb, "Predict, gcn on an asymmetric adjacency: %v\n", err)
	var mm models.Model = gat
	mm.Backward([]float32{1})
	_, err = mm.Forward(b, true)
	fmt.Fprintf(&sb, "Forward after Backward without a training-mode Forward: %v\n", err)

	golden.CheckString(t, "testdata/competitor_errors.golden", sb.String())
}

// dropFirstEdge returns a copy of a without the first entry of its first
// non-empty row.
func dropFirstEdge(a data.CSR) data.CSR {
	c := data.CSR{Ptr: append([]int32(nil), a.Ptr...), Idx: nil}
	dropped := false
	for u := 0; u < a.Len(); u++ {
		row := a.Row(u)
		if !dropped && len(row) > 0 {
			row = row[1:]
			dropped = true
		}
		c.Idx = append(c.Idx, row...)
		c.Ptr[u+1] = int32(len(c.Idx))
	}
	return c
}

// TestCompetitorAdaptorMatchesStep checks, for every competitor kind, that
// the models.Model adaptor (Forward, then Backward of the cross-entropy
// gradient) accumulates the gradients Step computes, and that one and two
// threads give bit-identical outputs and gradients.
func TestCompetitorAdaptorMatchesStep(t *testing.T) {
	task := newProxTask(t, 3, 60, 5)
	for _, kind := range []string{gcn.Name, gat.Name, graphormer.Name} {
		cfg := competitorConfig(kind, 2, 16, 4, 5, task.ds.NumLabels)
		cfg.Model.Dropout = 0.5
		mk := func(threads int) gorgonia {
			m, err := newModel(cfg, 9, kernels.CPU{Threads: threads})
			if err != nil {
				t.Fatal(err)
			}
			return m
		}
		step, adapt, serial := mk(2), mk(2), mk(1)
		b, err := data.NewBatch(task.ds, task.hops, task.split.Train[:24], step.Hops())
		if err != nil {
			t.Fatal(err)
		}
		_, out, err := step.Step(b)
		if err != nil {
			t.Fatal(err)
		}
		if _, out1, err := serial.Step(b); err != nil {
			t.Fatal(err)
		} else if d := modeltest.MaxRelDiff(out1, out); d != 0 {
			t.Errorf("%s: outputs with 1 and 2 threads differ by %.3g", kind, d)
		}
		var mm models.Model = adapt
		o2, err := mm.Forward(b, true)
		if err != nil {
			t.Fatal(err)
		}
		if d := modeltest.MaxRelDiff(o2, out); d > 1e-6 {
			t.Errorf("%s: adaptor outputs differ from Step's by %.3g", kind, d)
		}
		_, grad, _ := modeltest.CE(o2, b.Y, cfg.Out)
		mm.Backward(grad)
		if _, err := mm.Forward(b, false); err != nil {
			t.Fatal(err)
		}
		ps, pa, p1 := step.Params(), adapt.Params(), serial.Params()
		for i := range ps {
			if d := modeltest.MaxRelDiff(pa[i].G, ps[i].G); d > 1e-4 {
				t.Errorf("%s: gradient of %s: adaptor differs from Step by %.3g", kind, ps[i].Name, d)
			}
			if d := modeltest.MaxRelDiff(p1[i].G, ps[i].G); d != 0 {
				t.Errorf("%s: gradient of %s differs between 1 and 2 threads by %.3g", kind, ps[i].Name, d)
			}
		}
	}
}
