package predict

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/internal/testkit/synth"
	"github.com/spn-project/spn/models"
	"github.com/spn-project/spn/models/fit"
	"github.com/spn-project/spn/models/internal/testkit/refkind"
	"github.com/spn-project/spn/models/kernels"
	"github.com/spn-project/spn/models/kinds"
	"github.com/spn-project/spn/schema/modelspec"
)

// Tolerance is the largest difference allowed between the class
// probabilities of a graph and of its relabelled copy: relabelling changes
// only the order of float32 sums (neighbours, pooling), so the outputs
// agree to float32 rounding.
const Tolerance = 1e-5

// permuted returns g with node u renamed perm[u].
func permuted(t *testing.T, g data.Graph, perm []int) data.Graph {
	t.Helper()
	var edges [][2]int
	for _, e := range g.Edges() {
		edges = append(edges, [2]int{perm[e[0]], perm[e[1]]})
	}
	h, err := data.FromEdges(g.N, edges)
	if err != nil {
		t.Fatal(err)
	}
	h.Labels = make([]int32, g.N)
	for u, l := range g.Labels {
		h.Labels[perm[u]] = l
	}
	return h
}

func TestRelabellingInvariance(t *testing.T) {
	ds, hops, err := synth.Layered(5, 80, 2, [2]int{3, 6}, [2]int{2, 4}, 4)
	if err != nil {
		t.Fatal(err)
	}
	// Both the Gorgonia models (what spn trains and predicts with) and the
	// hand-written reference models.
	for _, path := range []struct {
		name string
		reg  models.Registry
	}{{"gorgonia", kinds.All()}, {"handwritten", refkind.HandWritten()}} {
		for _, kind := range []string{"spn", "gin"} {
			for _, pool := range []string{"sum", "mean", "max"} {
				m := modelspec.Model{Kind: kind, K: 4, Layers: 3, Hidden: 16, Pool: pool, Dropout: 0.5}
				if kind == "gin" {
					m.K = 1
				}
				cfg, _ := models.ConfigFor(m, ds)
				mod, err := path.reg.New(cfg, 3, kernels.CPU{Threads: 2})
				if err != nil {
					t.Fatal(err)
				}
				// A few epochs so batch-norm statistics and weights are not at
				// their initial values.
				s := ds.Splits[0]
				if _, err := fit.Train(context.Background(), mod, ds, hops, fit.Sets{Train: s.Train, Val: s.Val},
					fit.Options{Training: modelspec.Training{LR: 0.01, BatchSize: 16, Epochs: 3}, Metric: "accuracy"}); err != nil {
					t.Fatal(err)
				}
				rng := rand.New(rand.NewPCG(1, 1))
				var orig, perm []data.Graph
				for _, gi := range s.Test {
					g := ds.Graphs[gi]
					orig = append(orig, g)
					perm = append(perm, permuted(t, g, rng.Perm(g.N)))
				}
				p1, err := Graphs(context.Background(), mod, orig, 2, 0)
				if err != nil {
					t.Fatal(err)
				}
				p2, err := Graphs(context.Background(), mod, perm, 2, 0)
				if err != nil {
					t.Fatal(err)
				}
				worst := 0.0
				for i := range p1 {
					for j := range p1[i].Probabilities {
						worst = math.Max(worst, math.Abs(p1[i].Probabilities[j]-p2[i].Probabilities[j]))
					}
					if *p1[i].Class != *p2[i].Class && worst > Tolerance {
						t.Errorf("%s %s/%s graph %d: class %d vs %d after relabelling", path.name, kind, pool, i, *p1[i].Class, *p2[i].Class)
					}
				}
				if worst > Tolerance {
					t.Errorf("%s %s/%s: probabilities differ by %g after relabelling (tolerance %g)", path.name, kind, pool, worst, Tolerance)
				}
			}
		}
	}
}

func TestInputErrors(t *testing.T) {
	cfg := models.Config{Model: modelspec.Model{Kind: "spn", K: 2, Layers: 1, Hidden: 4, Pool: "sum"}, NumLabels: 3, Task: models.TaskClassification, Out: 2}
	mod, err := refkind.HandWritten().New(cfg, 1, kernels.CPU{})
	if err != nil {
		t.Fatal(err)
	}
	g, _ := data.FromEdges(3, [][2]int{{0, 1}, {1, 2}})
	if _, err := Graphs(context.Background(), mod, []data.Graph{g}, 1, 0); err == nil {
		t.Fatal("a graph without labels should fail for a labelled model")
	}
	g.Labels = []int32{0, 5, 1}
	if _, err := Graphs(context.Background(), mod, []data.Graph{g}, 1, 0); err == nil {
		t.Fatal("a label outside the vocabulary should fail")
	}
	// The path 0-1-2 has 4 entries in N_1 and 2 in N_2.
	g.Labels = []int32{0, 2, 1}
	one, _ := data.FromEdges(1, nil)
	one.Labels = []int32{1}
	if _, err := Graphs(context.Background(), mod, []data.Graph{one, g}, 1, 6); err != nil {
		t.Fatalf("hop sets of 6 entries, at most 6 allowed: %v", err)
	}
	_, err = Graphs(context.Background(), mod, []data.Graph{one, g}, 1, 5)
	var ge *GraphError
	if !errors.As(err, &ge) || ge.Graph != 1 || !strings.Contains(err.Error(), "more than 5 entries") {
		t.Fatalf("hop sets of 6 entries, at most 5 allowed: got %v, want a GraphError for graph 1", err)
	}
}

// TestUnreachable: a model that reads N_∞ (model.unreachable) gets it
// from Graphs, counted against the hop-entry limit. With k = 1 it tells
// C6 from two triangles, which an SPN over N_1 alone (1-WL) cannot.
func TestUnreachable(t *testing.T) {
	c6, _ := data.FromEdges(6, [][2]int{{0, 1}, {1, 2}, {2, 3}, {3, 4}, {4, 5}, {5, 0}})
	c3c3, _ := data.FromEdges(6, [][2]int{{0, 1}, {1, 2}, {2, 0}, {3, 4}, {4, 5}, {5, 3}})
	for _, g := range []*data.Graph{&c6, &c3c3} {
		g.Labels = make([]int32, g.N)
	}
	diff := func(unreachable bool, limit int64) (float64, error) {
		cfg := models.Config{Model: modelspec.Model{Kind: "spn", K: 1, Layers: 2, Hidden: 8, Pool: "sum", Unreachable: unreachable},
			NumLabels: 1, Task: models.TaskRegression, Out: 1}
		m, err := kinds.All().New(cfg, 1, kernels.CPU{})
		if err != nil {
			t.Fatal(err)
		}
		if got := models.BatchOptions(m); got != (data.BatchOptions{K: 1, Unreachable: unreachable}) {
			t.Errorf("BatchOptions = %+v, want k 1, N_∞ %v", got, unreachable)
		}
		p, err := Graphs(context.Background(), m, []data.Graph{c6, c3c3}, 1, limit)
		if err != nil {
			return 0, err
		}
		return math.Abs(p[0].Values[0] - p[1].Values[0]), nil
	}
	if d, err := diff(false, 0); err != nil || d > 1e-5 {
		t.Errorf("without N_∞: outputs differ by %g (%v); want the same (1-WL cannot tell them apart)", d, err)
	}
	if d, err := diff(true, 0); err != nil || d < 1e-3 {
		t.Errorf("with N_∞: outputs differ by %g (%v); want them told apart", d, err)
	}
	// Two triangles: 12 entries in N_1 and 18 in N_∞.
	if _, err := diff(true, 30); err != nil {
		t.Errorf("30 entries, at most 30 allowed: %v", err)
	}
	_, err := diff(true, 29)
	var ge *GraphError
	if !errors.As(err, &ge) || ge.Graph != 1 || !strings.Contains(err.Error(), "hop sets N_1 and N_∞ have more than 29 entries") {
		t.Errorf("30 entries, at most 29 allowed: got %v, want a GraphError for graph 1 naming N_∞", err)
	}
}
