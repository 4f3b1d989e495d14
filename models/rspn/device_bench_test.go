package rspn

import (
	"testing"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/models"
	"github.com/spn-project/spn/models/internal/testkit/devicetest"
	"github.com/spn-project/spn/models/internal/testkit/modeltest"
	"github.com/spn-project/spn/models/kernels"
	"github.com/spn-project/spn/schema/modelspec"
)

// BenchmarkDeviceStepHostQM9 trains R-SPN at Table 4's size (k = 10,
// T = 8 layers, hidden 128, sum pooling, no dropout, batch 128, Adam on
// the device) on the first 1 024 molecules of QM9's validation file, 8
// steps per iteration, on the emulated device with its launches and
// products doing nothing (cudatest.LibOpener.SetNoExec): the host's
// side of an R-SPN device step, the time a GPU step cannot go below
// however fast the GPU. It reports µs/step, launches/step (kernels and
// cuBLAS products) and allocs/step.
func BenchmarkDeviceStepHostQM9(b *testing.B) {
	const k, batch = 10, 128
	ds := modeltest.QM9U0(b, 1024)
	hops := modeltest.HopsOf(b, ds, k)
	var batches []*data.Batch
	for lo := 0; lo < len(ds.Graphs); lo += batch {
		idx := make([]int, 0, batch)
		for i := lo; i < lo+batch; i++ {
			idx = append(idx, i)
		}
		bt, err := data.NewBatch(ds, hops, idx, k)
		if err != nil {
			b.Fatal(err)
		}
		batches = append(batches, bt)
	}
	cfg, err := models.ConfigFor(modelspec.Model{Kind: Name, K: k, Layers: 8, Hidden: 128, Pool: models.PoolSum}, ds)
	if err != nil {
		b.Fatal(err)
	}
	m, err := New(cfg, 1, kernels.CPU{Threads: 1})
	if err != nil {
		b.Fatal(err)
	}
	e, opt := devicetest.NoExecDevice(b, m)
	epoch := func() {
		for _, bt := range batches {
			if _, _, err := m.Step(bt); err != nil {
				b.Fatal(err)
			}
			if err := opt.Step(); err != nil {
				b.Fatal(err)
			}
		}
	}
	epoch() // every batch shape once, and the pool
	calls0 := e.Context().Calls()
	for b.Loop() {
		epoch()
	}
	devicetest.ReportSteps(b, e.Context().Calls().Sub(calls0), float64(b.N*len(batches)))
}
