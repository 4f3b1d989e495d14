package kinds

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"

	"gorgonia.org/tensor"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/internal/testkit/synth"
	"github.com/spn-project/spn/models"
	"github.com/spn-project/spn/models/espn"
	"github.com/spn-project/spn/models/gat"
	"github.com/spn-project/spn/models/gcn"
	"github.com/spn-project/spn/models/graphormer"
	"github.com/spn-project/spn/models/internal/testkit/modeltest"
	"github.com/spn-project/spn/models/kernels"
	"github.com/spn-project/spn/models/rspn"
)

// stressEnv names the environment variable that makes TestStressCompile
// long: its value is the number of rounds (default 1).
const stressEnv = "SPN_STRESS_ROUNDS"

// TestStressCompile compiles and runs many Gorgonia graphs of every model
// kind at once, as spn run --jobs N does with train stages: each job
// trains on batches of ever new sizes (so it compiles a graph per batch
// while the others run theirs) and then predicts in evaluation mode. Every
// loss and every output must equal, bit for bit, what the job computes
// alone, while another goroutine returns tensors to gorgonia/tensor's pool
// twice, as Gorgonia's UnbindAllNonInputs does with shared values. Run it
// under -race; SPN_STRESS_ROUNDS=N repeats the concurrent round N times.
func TestStressCompile(t *testing.T) {
	rounds := 1
	if v := os.Getenv(stressEnv); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("%s=%q: want a positive number of rounds", stressEnv, v)
		}
		rounds = n
	}
	rel := modeltest.NewTypedTask(t, synth.Relational, 48, 3)
	edge := modeltest.NewTypedTask(t, synth.EdgeFeatures, 48, 3)
	type job struct {
		kind string
		k    int
		pool string
		task modeltest.TypedTask
	}
	jobs := []job{
		{rspn.Name, 3, "mean", rel}, {"spn", 3, "sum", rel}, {"gin", 1, "mean", rel}, {espn.Name, 2, "mean", edge},
		{gcn.Name, 1, "mean", rel}, {gat.Name, 1, "mean", rel}, {graphormer.Name, 3, "mean", rel}, {rspn.Name, 1, "sum", rel},
	}
	run := func(j job) ([]float64, error) {
		cfg := modeltest.TypedConfig(j.kind, j.k, j.pool, j.task.DS)
		switch j.kind {
		case gat.Name:
			cfg.Model.Heads = 2
		case graphormer.Name:
			cfg.Model.Heads, cfg.Model.MaxDist = 2, 3
		}
		m, err := All().New(cfg, 11, kernels.CPU{})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", j.kind, err)
		}
		st := m.(models.Stepper)
		got, err := stepGrowing(st, j.task, j.kind, j.k)
		if err != nil {
			return nil, err
		}
		for size, lo := 3, 0; lo < len(j.task.Test); size, lo = size+2, lo+size {
			b, err := data.NewBatch(j.task.DS, j.task.Hops, j.task.Test[lo:min(lo+size, len(j.task.Test))], j.k)
			if err != nil {
				return nil, err
			}
			out, err := m.Forward(b, false)
			if err != nil {
				return nil, fmt.Errorf("%s k=%d evaluation at %d: %w", j.kind, j.k, lo, err)
			}
			for _, v := range out {
				got = append(got, float64(v))
			}
		}
		return got, nil
	}
	want := make([][]float64, len(jobs))
	for i, j := range jobs {
		w, err := run(j)
		if err != nil {
			t.Fatal(err)
		}
		want[i] = w
	}
	for r := range rounds {
		got := make([][]float64, 2*len(jobs))
		errs := make([]error, len(got))
		done := make(chan struct{})
		var polluter sync.WaitGroup
		polluter.Add(1)
		go func() {
			defer polluter.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				x := tensor.New(tensor.WithShape(2), tensor.WithBacking([]float32{1, 2}))
				tensor.ReturnTensor(x)
				tensor.ReturnTensor(x)
				runtime.Gosched()
			}
		}()
		var wg sync.WaitGroup
		for i := range got {
			wg.Add(1)
			go func() {
				defer wg.Done()
				got[i], errs[i] = run(jobs[i%len(jobs)])
			}()
		}
		wg.Wait()
		close(done)
		polluter.Wait()
		for i := range got {
			j := jobs[i%len(jobs)]
			if errs[i] != nil {
				t.Fatalf("round %d: %v", r, errs[i])
			}
			w := want[i%len(jobs)]
			if len(got[i]) != len(w) {
				t.Fatalf("round %d, %s k=%d: %d values, alone %d", r, j.kind, j.k, len(got[i]), len(w))
			}
			for s := range w {
				if got[i][s] != w[s] {
					t.Fatalf("round %d, %s k=%d value %d: %v, alone %v", r, j.kind, j.k, s, got[i][s], w[s])
				}
			}
		}
	}
}

// TestNoUnbind: spn never calls Gorgonia's ExprGraph.UnbindAll or
// UnbindAllNonInputs, which return values shared by several nodes to
// Gorgonia's pools once per node (see models/op's pool.go).
func TestNoUnbind(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, call := range []string{".UnbindAll(", ".UnbindAllNonInputs("} {
			if strings.Contains(string(b), call) {
				t.Errorf("%s calls %s", p, call)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
