package kinds

import (
	"context"
	"testing"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/data/prox"
	"github.com/spn-project/spn/data/sp"
	"github.com/spn-project/spn/models"
	"github.com/spn-project/spn/models/kernels"
	"github.com/spn-project/spn/schema/modelspec"
)

// stepper is the fast training path of the Gorgonia models.
type stepper interface {
	Step(b *data.Batch) (float64, []float32, error)
}

// BenchmarkTrainProx3 measures training throughput (graphs/s: forward,
// loss and backward of one batch, without the optimiser step) of every
// model kind of Table 2 on 3-Prox graphs of the paper's size (15–24
// levels of 3–9 nodes, about 120 nodes per graph), batch 32, hidden 64,
// mean pooling, dropout 0.5, 2 threads. Depths: T = 3 for GCN, GAT and
// SPN (k = 1) (T = h), L = 2 and 5 for SPN (k = 5), 2 for Graphormer.
//
//	go test ./models/kinds -run '^$' -bench TrainProx3 -benchtime 20x
func BenchmarkTrainProx3(b *testing.B) {
	ds, err := prox.Generate(context.Background(), prox.Config{H: 3, Graphs: 320, Seed: 2, Threads: 2})
	if err != nil {
		b.Fatal(err)
	}
	hops, err := sp.Compute(context.Background(), ds.Graphs, 5, false, 2)
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		m    modelspec.Model
	}{
		{"gcn_L3", modelspec.Model{Kind: "gcn", K: 1, Layers: 3}},
		{"gat_L3", modelspec.Model{Kind: "gat", K: 1, Layers: 3, Heads: 4}},
		{"spn_k1_L3", modelspec.Model{Kind: "spn", K: 1, Layers: 3}},
		{"spn_k5_L2", modelspec.Model{Kind: "spn", K: 5, Layers: 2}},
		{"spn_k5_L5", modelspec.Model{Kind: "spn", K: 5, Layers: 5}},
		{"graphormer_L2", modelspec.Model{Kind: "graphormer", K: 1, Layers: 2, Heads: 4, MaxDist: 5}},
	} {
		b.Run(c.name, func(b *testing.B) {
			c.m.Hidden, c.m.Pool, c.m.Dropout = 64, models.PoolMean, 0.5
			cfg, err := models.ConfigFor(c.m, ds)
			if err != nil {
				b.Fatal(err)
			}
			m, err := All().New(cfg, 1, kernels.CPU{Threads: 2})
			if err != nil {
				b.Fatal(err)
			}
			st, ok := m.(stepper)
			if !ok {
				b.Fatalf("%s: %T has no Step", c.name, m)
			}
			var batches []*data.Batch
			for lo := 0; lo < len(ds.Graphs); lo += 32 {
				idx := make([]int, 32)
				for i := range idx {
					idx[i] = lo + i
				}
				bt, err := data.NewBatch(ds, hops, idx, m.Hops())
				if err != nil {
					b.Fatal(err)
				}
				batches = append(batches, bt)
			}
			// Warm-up: compile the graphs of every batch size bucket.
			for _, bt := range batches {
				if _, _, err := st.Step(bt); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, _, err := st.Step(batches[i%len(batches)]); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(32*b.N)/b.Elapsed().Seconds(), "graphs/s")
		})
	}
}
