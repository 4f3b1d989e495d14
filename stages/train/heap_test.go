package train

import (
	"context"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/models/synth"
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
// process and requires the live heap to come back to where it was after
// the first run: a stage's compiled graphs, machines and arenas must die
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
			pt.Model.Hidden, pt.Training.Epochs = 64, 1
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
			train()
			train()
			after := heapAfterGC()
			t.Logf("live heap %d KB before, %d KB after two more stages", base>>10, after>>10)
			if after > base+2<<20 {
				t.Errorf("live heap grew from %d KB to %d KB over two train stages", base>>10, after>>10)
			}
		})
	}
}
