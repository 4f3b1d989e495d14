package predict

import (
	"bytes"
	"context"
	"errors"
	"math"
	"testing"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/data/jsonl"
	"github.com/spn-project/spn/models"
	"github.com/spn-project/spn/models/kernels"
	"github.com/spn-project/spn/models/kinds"
	"github.com/spn-project/spn/schema/modelspec"
)

// FuzzGraphs runs what spn predict runs on any JSONL input: the reader,
// then the hop sets and the model (an SPN with k = 3 over 3 node labels,
// at most 500 hop-set entries per graph; and the same SPN reading N_∞). Whatever the bytes, it must not
// panic; a graph the model cannot take must be a *GraphError naming an
// input graph; otherwise there is one prediction per graph, with finite
// probabilities that sum to 1.
func FuzzGraphs(f *testing.F) {
	f.Add([]byte(`{"nodes":3,"edges":[[0,1],[1,2]],"x":[0,2,1]}`))
	f.Add([]byte("{\"nodes\":1,\"edges\":[],\"x\":[1]}\n{\"nodes\":2,\"edges\":[[0,1]],\"x\":[0,0],\"y\":1}\n"))
	f.Add([]byte(`{"nodes":2,"edges":[[0,1]],"x":[0,7]}`))
	f.Add([]byte(`{"nodes":6,"edges":[[0,1],[0,2],[0,3],[0,4],[0,5],[1,2]],"x":[0,1,2,0,1,2]}`))
	f.Add([]byte(`{"nodes":2,"edges":[[0,1]],"attrs":[[0.5],[1]]}`))
	var mods []models.Model
	for _, unreachable := range []bool{false, true} {
		m := modelspec.Model{Kind: "spn", K: 3, Layers: 2, Hidden: 8, Pool: "mean", Unreachable: unreachable}
		cfg := models.Config{Model: m, NumLabels: 3, Task: models.TaskClassification, Out: 2}
		mod, err := kinds.All().New(cfg, 1, kernels.CPU{Threads: 1})
		if err != nil {
			f.Fatal(err)
		}
		mods = append(mods, mod)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		ds, _, err := jsonl.ReadUnlabelled(bytes.NewReader(b), "fuzz")
		if err != nil {
			return
		}
		if len(ds.Graphs) > 64 {
			return // keep each input quick
		}
		for _, g := range ds.Graphs {
			if g.N == 0 || g.N > 4096 {
				return // spn predict refuses empty graphs before (checkPredictInput)
			}
		}
		for _, mod := range mods {
			check(t, mod, ds.Graphs)
		}
	})
}

// check is FuzzGraphs for one model.
func check(t *testing.T, mod models.Model, graphs []data.Graph) {
	t.Helper()
	preds, err := Graphs(context.Background(), mod, graphs, 1, 500)
	if err != nil {
		var ge *GraphError
		if !errors.As(err, &ge) || ge.Graph < 0 || ge.Graph >= len(graphs) {
			t.Fatalf("error not about an input graph: %v", err)
		}
		return
	}
	if len(preds) != len(graphs) {
		t.Fatalf("%d predictions for %d graphs", len(preds), len(graphs))
	}
	for i, p := range preds {
		sum := 0.0
		for _, q := range p.Probabilities {
			if math.IsNaN(q) || q < 0 || q > 1 {
				t.Fatalf("graph %d: probability %v", i, q)
			}
			sum += q
		}
		if p.Class == nil || len(p.Probabilities) != 2 || math.Abs(sum-1) > 1e-6 {
			t.Fatalf("graph %d: prediction %+v", i, p)
		}
	}
}
