package spn

import (
	"math/rand/v2"
	"testing"

	"github.com/spn-project/spn/models/internal/devicetest"
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
func BenchmarkDeviceStepHostPROTEINS(b *testing.B) { deviceStepHost(b, false) }

// BenchmarkDeviceStepHostPROTEINSPipelined is
// BenchmarkDeviceStepHostPROTEINS with fit's pipelined steps: StepAsync
// and Adam for a batch, then resolving the batch before. Besides the
// other's figures it reports the synchronous copies per step (none).
func BenchmarkDeviceStepHostPROTEINSPipelined(b *testing.B) { deviceStepHost(b, true) }

func deviceStepHost(b *testing.B, pipelined bool) {
	batches, cfg := proteinsEpoch(b)
	m, err := New(cfg, 1, kernels.CPU{Threads: 1})
	if err != nil {
		b.Fatal(err)
	}
	e, opt := devicetest.NoExecDevice(b, m)
	rng := rand.New(rand.NewPCG(1, 2))
	epoch := func() {
		rng.Shuffle(len(batches), func(i, j int) { batches[i], batches[j] = batches[j], batches[i] })
		// resolve is the pipelined step before, nil with Step.
		var resolve func() (float64, []float32, error)
		for _, bt := range batches {
			var next func() (float64, []float32, error)
			var err error
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
	graphs := 0
	for _, bt := range batches {
		graphs += bt.NumGraphs
	}
	calls0 := e.Context().Calls()
	for b.Loop() {
		epoch()
	}
	steps := float64(b.N * len(batches))
	c := e.Context().Calls().Sub(calls0)
	devicetest.ReportSteps(b, c, steps)
	b.ReportMetric(float64(graphs)*float64(b.N)/b.Elapsed().Seconds(), "graphs/s")
	if pipelined {
		b.ReportMetric(float64(c.ToDevice+c.ToHost)/steps, "sync-copies/step")
	}
}
