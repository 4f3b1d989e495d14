package kinds

import (
	"fmt"
	"sync"
	"testing"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/internal/testkit/synth"
	"github.com/spn-project/spn/models"
	"github.com/spn-project/spn/models/espn"
	"github.com/spn-project/spn/models/internal/testkit/modeltest"
	"github.com/spn-project/spn/models/kernels"
	"github.com/spn-project/spn/models/rspn"
)

// TestConcurrentModels: models trained at the same time in one process
// (spn run --jobs N runs train stages in goroutines) compute exactly what
// each computes alone. Every batch has another size, so the models compile
// graphs while the others run theirs.
func TestConcurrentModels(t *testing.T) {
	rel := modeltest.NewTypedTask(t, synth.Relational, 60, 3)
	edge := modeltest.NewTypedTask(t, synth.EdgeFeatures, 60, 3)
	type job struct {
		kind string
		k    int
		task modeltest.TypedTask
	}
	jobs := []job{{rspn.Name, 1, rel}, {rspn.Name, 3, rel}, {"spn", 3, rel}, {espn.Name, 2, edge}, {"gin", 1, rel}, {rspn.Name, 2, rel}}
	run := func(j job) ([]float64, error) {
		cfg := modeltest.TypedConfig(j.kind, j.k, "mean", j.task.DS)
		m, err := All().New(cfg, 7, kernels.CPU{})
		if err != nil {
			return nil, err
		}
		st := m.(models.Stepper)
		return stepGrowing(st, j.task, j.kind, j.k)
	}
	want := make([][]float64, len(jobs))
	for i, j := range jobs {
		l, err := run(j)
		if err != nil {
			t.Fatal(err)
		}
		want[i] = l
	}
	for rep := 0; rep < 3; rep++ {
		got := make([][]float64, len(jobs))
		errs := make([]error, len(jobs))
		var wg sync.WaitGroup
		for i, j := range jobs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				got[i], errs[i] = run(j)
			}()
		}
		wg.Wait()
		for i := range jobs {
			if errs[i] != nil {
				t.Fatalf("concurrent run %d: %v", rep, errs[i])
			}
			for s := range want[i] {
				if got[i][s] != want[i][s] {
					t.Fatalf("concurrent run %d, %s k=%d step %d: loss %v, alone %v", rep, jobs[i].kind, jobs[i].k, s, got[i][s], want[i][s])
				}
			}
		}
	}
}

// stepGrowing trains st on task's training graphs in batches of 1, 2, 3,
// ... graphs (every batch shape differs, so every step compiles a graph)
// and returns the losses.
func stepGrowing(st models.Stepper, task modeltest.TypedTask, kind string, k int) ([]float64, error) {
	var losses []float64
	idx := task.Train
	for size, lo := 1, 0; lo < len(idx); size, lo = size+1, lo+size {
		b, err := data.NewBatch(task.DS, task.Hops, idx[lo:min(lo+size, len(idx))], k)
		if err != nil {
			return nil, err
		}
		loss, _, err := st.Step(b)
		if err != nil {
			return nil, fmt.Errorf("%s k=%d batch at %d: %w", kind, k, lo, err)
		}
		losses = append(losses, loss)
	}
	return losses, nil
}
