package spn

import (
	"context"
	"math/rand/v2"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/data/sp"
	"github.com/spn-project/spn/data/tu"
	"github.com/spn-project/spn/internal/testkit/mirrortest"
	"github.com/spn-project/spn/models"
	"github.com/spn-project/spn/models/internal/testkit/modeltest"
	"github.com/spn-project/spn/models/internal/testkit/ref"
	"github.com/spn-project/spn/models/kernels"
	"github.com/spn-project/spn/models/param"
	"github.com/spn-project/spn/schema/modelspec"
)

// proteinsEpoch returns the PROTEINS batches of 32 graphs (file order) with
// hop sets up to k = 5, and the model configuration of the benchmark: SPN
// k = 5, 5 layers, hidden 64, sum pooling, dropout 0.5.
func proteinsEpoch(b *testing.B) ([]*data.Batch, models.Config) { return proteinsBatches(b, 32) }

// proteinsBatches returns PROTEINS in batches of size graphs (file order)
// with hop sets up to k = 5, and the benchmark's model configuration.
func proteinsBatches(b testing.TB, size int) ([]*data.Batch, models.Config) {
	b.Helper()
	ds, hops := tuDataset(b, "PROTEINS.zip")
	var batches []*data.Batch
	for lo := 0; lo < len(ds.Graphs); lo += size {
		idx := make([]int, 0, size)
		for i := lo; i < min(lo+size, len(ds.Graphs)); i++ {
			idx = append(idx, i)
		}
		bt, err := data.NewBatch(ds, hops, idx, 5)
		if err != nil {
			b.Fatal(err)
		}
		batches = append(batches, bt)
	}
	return batches, benchConfig(b, ds)
}

// tuDataset loads the TU dataset of the mirror file tu/file with its hop
// sets up to k = 5.
func tuDataset(b testing.TB, file string) (*data.Dataset, *data.Hops) {
	b.Helper()
	ds, err := tu.Load(filepath.Join(mirrortest.Dir(b), "tu", file), "")
	if err != nil {
		b.Fatal(err)
	}
	hops, err := sp.Compute(context.Background(), ds.Graphs, 5, false, 2)
	if err != nil {
		b.Fatal(err)
	}
	return ds, hops
}

// benchConfig is the benchmarks' model on ds: SPN k = 5, 5 layers,
// hidden 64, sum pooling, dropout 0.5.
func benchConfig(b testing.TB, ds *data.Dataset) models.Config {
	b.Helper()
	cfg, err := models.ConfigFor(modelspec.Model{Kind: "spn", K: 5, Layers: 5, Hidden: 64, Pool: models.PoolSum, Dropout: 0.5, LearnEps: true}, ds)
	if err != nil {
		b.Fatal(err)
	}
	return cfg
}

// BenchmarkEpochPROTEINS trains one epoch (35 steps of 32 graphs, Adam)
// per iteration through spn.Model.Step and through the hand-written model,
// and breaks the Gorgonia path down into graph construction (forward,
// loss, gorgonia.Grad), compilation (NewTapeMachine) and execution.
func BenchmarkEpochPROTEINS(b *testing.B) {
	batches, cfg := proteinsEpoch(b)
	be := kernels.CPU{Threads: 2}
	graphs := 0
	for _, bt := range batches {
		graphs += bt.NumGraphs
	}
	// The machine is shared: besides wall-clock graphs/s, report the
	// process CPU time per epoch (all threads), which other processes
	// disturb much less.
	var cpu0 time.Duration
	report := func(b *testing.B) {
		b.ReportMetric(float64(graphs)*float64(b.N)/b.Elapsed().Seconds(), "graphs/s")
		b.ReportMetric((cpuTime()-cpu0).Seconds()*1e3/float64(b.N), "cpu-ms/epoch")
	}
	for _, cached := range []bool{true, false} {
		name := "gorgonia-cached"
		if !cached {
			name = "gorgonia-uncached"
		}
		b.Run(name, func(b *testing.B) {
			m, err := New(cfg, 1, be)
			if err != nil {
				b.Fatal(err)
			}
			if !cached {
				m.LimitCache(0, 0)
			}
			opt := param.NewAdam(m.Params(), 1e-3, 0)
			// Shuffled epochs, as in training: batches of different sizes.
			rng := rand.New(rand.NewPCG(1, 2))
			cpu0 = cpuTime()
			for b.Loop() {
				rng.Shuffle(len(batches), func(i, j int) { batches[i], batches[j] = batches[j], batches[i] })
				for _, bt := range batches {
					if _, _, err := m.Step(bt); err != nil {
						b.Fatal(err)
					}
					opt.Step()
				}
			}
			report(b)
			b.ReportMetric(float64(m.CacheHits)/float64(max(1, m.CacheHits+m.CacheMisses)), "cache-hit-rate")
			ng, nb := m.CachedGraphs()
			b.ReportMetric(float64(nb)/float64(max(ng, 1))/(1<<20), "MB/cached-graph")
		})
	}
	// The models.Model adaptor as models/fit drives it today: Forward,
	// the loss outside the graph, Backward (a second graph that repeats the
	// forward).
	b.Run("gorgonia-adaptor", func(b *testing.B) {
		m, err := New(cfg, 1, be)
		if err != nil {
			b.Fatal(err)
		}
		opt := param.NewAdam(m.Params(), 1e-3, 0)
		rng := rand.New(rand.NewPCG(1, 2))
		cpu0 = cpuTime()
		for b.Loop() {
			rng.Shuffle(len(batches), func(i, j int) { batches[i], batches[j] = batches[j], batches[i] })
			for _, bt := range batches {
				out, err := m.Forward(bt, true)
				if err != nil {
					b.Fatal(err)
				}
				_, grad, _ := modeltest.CE(out, bt.Y, cfg.Out)
				m.Backward(grad)
				opt.Step()
			}
		}
		report(b)
	})
	b.Run("handwritten", func(b *testing.B) {
		m, err := ref.NewSPN(cfg, 1)
		if err != nil {
			b.Fatal(err)
		}
		opt := param.NewAdam(m.Params(), 1e-3, 0)
		cpu0 = cpuTime()
		for b.Loop() {
			for _, bt := range batches {
				out, err := m.Forward(bt, true)
				if err != nil {
					b.Fatal(err)
				}
				_, grad, _ := modeltest.CE(out, bt.Y, cfg.Out)
				m.Backward(grad)
				opt.Step()
			}
		}
		report(b)
	})
}

// cpuTime returns the user+system CPU time of the process so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkPredictPROTEINS evaluates all of PROTEINS per iteration in
// batches of 256 graphs through spn.Model.Predict
// and through the hand-written model. After the first iteration the
// compiled evaluation graphs come from the cache.
func BenchmarkPredictPROTEINS(b *testing.B) {
	batches, cfg := proteinsBatches(b, 256)
	graphs := 0
	for _, bt := range batches {
		graphs += bt.NumGraphs
	}
	be := kernels.CPU{Threads: 2}
	var cpu0 time.Duration
	report := func(b *testing.B) {
		b.ReportMetric(float64(graphs)*float64(b.N)/b.Elapsed().Seconds(), "graphs/s")
		b.ReportMetric((cpuTime()-cpu0).Seconds()*1e3/float64(b.N), "cpu-ms/pass")
	}
	b.Run("gorgonia", func(b *testing.B) {
		m, err := New(cfg, 1, be)
		if err != nil {
			b.Fatal(err)
		}
		cpu0 = cpuTime()
		for b.Loop() {
			for _, bt := range batches {
				if _, err := m.Predict(bt); err != nil {
					b.Fatal(err)
				}
			}
		}
		report(b)
	})
	b.Run("handwritten", func(b *testing.B) {
		m, err := ref.NewSPN(cfg, 1)
		if err != nil {
			b.Fatal(err)
		}
		cpu0 = cpuTime()
		for b.Loop() {
			for _, bt := range batches {
				if _, err := m.Forward(bt, false); err != nil {
					b.Fatal(err)
				}
			}
		}
		report(b)
	})
}
