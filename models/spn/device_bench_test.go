package spn

import (
	"iter"
	"math/rand/v2"
	"testing"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/models"
	"github.com/spn-project/spn/models/internal/testkit/devicetest"
	"github.com/spn-project/spn/models/kernels"
)

// BenchmarkDeviceStepHostPROTEINS trains one epoch of PROTEINS (35 steps
// of 32 graphs; SPN k = 5, 5 layers, hidden 64, Adam on the device) per
// iteration on the emulated device with its launches and products doing
// nothing (cudatest.LibOpener.SetNoExec): what is left is the host's side
// of a device step (Gorgonia's tape, each op's launches through the
// driver API, the batch's packed copy, the loss's and the outputs'
// download), the time a GPU step cannot go below however fast the GPU:
// it reports µs/step, the bound 32 graphs / that time as graphs/s, and
// launches/step. It takes the steps with Step, the host waiting for each
// (fit's --sync-steps); BenchmarkDeviceStepHostPROTEINSPipelined as
// fit.Train does (StepAsync).
func BenchmarkDeviceStepHostPROTEINS(b *testing.B) {
	batches, cfg := proteinsEpoch(b)
	deviceStepHost(b, cfg, prebuilt(batches), false)
}

// BenchmarkDeviceStepHostPROTEINSPipelined is
// BenchmarkDeviceStepHostPROTEINS with fit's pipelined steps: StepAsync
// and Adam for a batch, then resolving the batch before. Besides the
// other's figures it reports the synchronous copies per step (none).
func BenchmarkDeviceStepHostPROTEINSPipelined(b *testing.B) {
	batches, cfg := proteinsEpoch(b)
	deviceStepHost(b, cfg, prebuilt(batches), true)
}

// BenchmarkDeviceStepHostDD is BenchmarkDeviceStepHostPROTEINSPipelined
// on D&D (batches of 32 of its 1 178 graphs, about 9 000 nodes and
// 700 000 hop set entries a batch: the largest graphs of the speed
// table), building the batches as fit.Train does, one ahead on another
// goroutine (data.Batches), so that µs/step is the host's time per step
// of an epoch.
func BenchmarkDeviceStepHostDD(b *testing.B) {
	ds, hops := tuDataset(b, "DD.zip")
	cfg := benchConfig(b, ds)
	var idx [][]int
	for lo := 0; lo < len(ds.Graphs); lo += 32 {
		var gs []int
		for i := lo; i < min(lo+32, len(ds.Graphs)); i++ {
			gs = append(gs, i)
		}
		idx = append(idx, gs)
	}
	deviceStepHost(b, cfg, batchSource{n: len(idx), epoch: func(order []int) iter.Seq2[*data.Batch, error] {
		groups := make([][]int, len(order))
		for i, o := range order {
			groups[i] = idx[o]
		}
		return data.Batches(ds, hops, groups, data.BatchOptions{K: 5})
	}}, true)
}

// batchSource is the batches of a host-step benchmark's epochs: n
// batches, which epoch yields in the order order (a permutation of
// 0..n-1).
type batchSource struct {
	n     int
	epoch func(order []int) iter.Seq2[*data.Batch, error]
}

// prebuilt is the batchSource of batches built before the benchmark.
func prebuilt(batches []*data.Batch) batchSource {
	return batchSource{n: len(batches), epoch: func(order []int) iter.Seq2[*data.Batch, error] {
		return func(yield func(*data.Batch, error) bool) {
			for _, i := range order {
				if !yield(batches[i], nil) {
					return
				}
			}
		}
	}}
}

func deviceStepHost(b *testing.B, cfg models.Config, src batchSource, pipelined bool) {
	m, err := New(cfg, 1, kernels.CPU{Threads: 1})
	if err != nil {
		b.Fatal(err)
	}
	e, opt := devicetest.NoExecDevice(b, m)
	rng := rand.New(rand.NewPCG(1, 2))
	order := make([]int, src.n)
	for i := range order {
		order[i] = i
	}
	graphs := 0
	epoch := func() {
		rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		// resolve is the pipelined step before, nil with Step.
		var resolve func() (float64, []float32, error)
		graphs = 0
		for bt, err := range src.epoch(order) {
			if err != nil {
				b.Fatal(err)
			}
			graphs += bt.NumGraphs
			var next func() (float64, []float32, error)
			if pipelined {
				next, err = m.StepAsync(bt)
			} else {
				_, _, err = m.Step(bt)
			}
			if err != nil {
				b.Fatal(err)
			}
			if err := opt.Step(); err != nil {
				b.Fatal(err)
			}
			if resolve != nil {
				if _, _, err := resolve(); err != nil {
					b.Fatal(err)
				}
			}
			resolve = next
		}
		if resolve != nil {
			if _, _, err := resolve(); err != nil {
				b.Fatal(err)
			}
		}
	}
	epoch() // the graphs of every batch shape, and the pool
	calls0, misses0 := e.Context().Calls(), m.CacheMisses
	for b.Loop() {
		epoch()
	}
	steps := float64(b.N * src.n)
	c := e.Context().Calls().Sub(calls0)
	devicetest.ReportSteps(b, c, steps)
	b.ReportMetric(float64(m.CacheMisses-misses0)/steps, "compiles/step")
	b.ReportMetric(float64(graphs)*float64(b.N)/b.Elapsed().Seconds(), "graphs/s")
	if pipelined {
		b.ReportMetric(float64(c.ToDevice+c.ToHost)/steps, "sync-copies/step")
	}
}
