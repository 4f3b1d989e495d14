package train

import (
	"context"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/internal/testkit/synth"
	"github.com/spn-project/spn/models"
	"github.com/spn-project/spn/models/fit"
	"github.com/spn-project/spn/models/kernels"
	"github.com/spn-project/spn/stages"
)

// heapAfterGC returns the live heap after two forced collections (the
// second one frees what finalizers queued in the first released).
func heapAfterGC() uint64 {
	runtime.GC()
	runtime.GC()
	var s runtime.MemStats
	runtime.ReadMemStats(&s)
	return s.HeapAlloc
}

// TestHeapReturnsAfterStage trains the same stage several times in one
// process and requires the live heap to come back, after each stage, to
// within 512 KB of where it was after the first run: a stage's compiled graphs, machines and arenas must die
// with the stage. (Gorgonia's tape machines carry a finalizer; a graph
// whose Read targets point back at the struct holding the machine forms a
// cycle the collector never frees, about 30 MB per stage here.)
func TestHeapReturnsAfterStage(t *testing.T) {
	ds, hops, err := synth.Layered(2, 200, 2, [2]int{20, 40}, [2]int{2, 4}, 3)
	if err != nil {
		t.Fatal(err)
	}
	gen, pre := t.TempDir(), t.TempDir()
	if err := data.WriteDatasetFile(filepath.Join(gen, stages.FileDataset), ds); err != nil {
		t.Fatal(err)
	}
	if err := data.WriteHopsFile(filepath.Join(pre, stages.FileHops), hops); err != nil {
		t.Fatal(err)
	}
	in := []stages.Input{{Kind: stages.KindGenerate, Dir: gen}, {Kind: stages.KindPrecompute, Dir: pre}}
	for _, kind := range []string{"spn", "gcn", "baseline"} {
		t.Run(kind, func(t *testing.T) {
			pt := point(kind, 1)
			pt.Model.Hidden, pt.Training.Epochs = 64, 2
			if kind == "baseline" {
				pt.Model.Dropout = 0
			}
			p := stages.TrainParams{Role: stages.RoleHoldout, Point: pt, Metric: "accuracy", Seed: 1}
			train := func() {
				if err := (Kind{}).Run(context.Background(), job(t, p, in)); err != nil {
					t.Fatal(err)
				}
			}
			train() // warm-up: one-off allocations of the process
			base := heapAfterGC()
			for i := 1; i <= 3; i++ {
				train()
				after := heapAfterGC()
				t.Logf("live heap %d KB before, %d KB after stage %d", base>>10, after>>10, i)
				if after > base+512<<10 {
					t.Errorf("live heap grew from %d KB to %d KB after train stage %d", base>>10, after>>10, i)
				}
			}
		})
	}
}

// TestHeapBoundedAcrossEpochs trains one model for several epochs over
// graphs of very different sizes (so batches take new padded shapes in
// later epochs) and checks that what the live heap gains after the first
// epoch is what the arena grew (only when a batch takes more than every
// batch before it) and the compiled graphs added, each well below 1 MB
// here, and that the arena stays within its bound of the largest run.
func TestHeapBoundedAcrossEpochs(t *testing.T) {
	ds, hops, err := synth.Layered(3, 240, 2, [2]int{4, 40}, [2]int{2, 6}, 3)
	if err != nil {
		t.Fatal(err)
	}
	pt := point("spn", 3)
	pt.Model.Hidden, pt.Training.Epochs, pt.Training.BatchSize = 32, 6, 16
	cfg, err := models.ConfigFor(pt.Model, ds)
	if err != nil {
		t.Fatal(err)
	}
	m, err := Kind{}.Registry().New(cfg, 1, kernels.CPU{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	type engine interface {
		ArenaBytes() (held, run int64)
		CachedGraphs() (int, int64)
	}
	e, ok := m.(engine)
	if !ok {
		t.Fatalf("%T has no arena", m)
	}
	type epoch struct {
		heap, arena, run uint64
		graphs           int
	}
	var ep []epoch
	sp := ds.Splits[0]
	_, err = fit.Train(context.Background(), m, ds, hops.Prefix(m.Hops()), fit.Sets{Train: sp.Train, Val: sp.Val, Test: sp.Test}, fit.Options{
		Training: pt.Training, Metric: "accuracy", Seed: 1, Stream: 1,
		Progress: func(int, int) {
			h := heapAfterGC()
			held, run := e.ArenaBytes()
			n, _ := e.CachedGraphs()
			ep = append(ep, epoch{h, uint64(held), uint64(run), n})
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	const perGraph, slack = 1 << 20, 256 << 10
	first := ep[0]
	for i, x := range ep {
		t.Logf("epoch %d: live heap %d KB, arena %d KB (largest run %d KB), %d compiled graphs", i+1, x.heap>>10, x.arena>>10, x.run>>10, x.graphs)
		if allowed := first.heap + (x.arena - first.arena) + uint64(x.graphs-first.graphs)*perGraph + slack; x.heap > allowed {
			t.Errorf("epoch %d: live heap %d KB, above %d KB (epoch 1 plus the arena's and the cache's growth)", i+1, x.heap>>10, allowed>>10)
		}
		if bound := x.run*5/4 + 8<<20; x.arena > bound {
			t.Errorf("epoch %d: arena holds %d KB for runs of at most %d KB", i+1, x.arena>>10, x.run>>10)
		}
	}
}
