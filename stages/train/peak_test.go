package train

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/models"
	"github.com/spn-project/spn/models/kinds"
	"github.com/spn-project/spn/stages"
	"github.com/spn-project/spn/stages/plan"
)

// TestGrowingThreadsSameBits: a stage given more threads between epochs
// (Env.ThreadsNow) asks for them after each epoch and writes the same
// result and model bytes as one that keeps its threads.
func TestGrowingThreadsSameBits(t *testing.T) {
	in := inputs(t)
	p := stages.TrainParams{Role: stages.RoleHoldout, Point: point("spn", 3), Metric: "accuracy", Seed: 1, Run: 0}
	files := func(j *stages.Job) []string {
		var out []string
		for _, f := range []string{stages.FileResult, stages.FileModel} {
			b, err := os.ReadFile(filepath.Join(j.Dir, f))
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, string(b))
		}
		return out
	}
	fixed := job(t, p, in)
	fixed.Env.Threads = 1
	if err := (Kind{}).Run(context.Background(), fixed); err != nil {
		t.Fatal(err)
	}
	grown := job(t, p, in)
	grown.Env.Threads = 1
	asked := 0
	grown.Env.ThreadsNow = func() int { asked++; return 1 + asked } // 2, 3, 4 threads
	if err := (Kind{}).Run(context.Background(), grown); err != nil {
		t.Fatal(err)
	}
	if asked != 4 {
		t.Errorf("ThreadsNow read %d times, want once per epoch (4)", asked)
	}
	if !slices.Equal(files(fixed), files(grown)) {
		t.Fatal("a stage whose threads grew wrote other bytes than one on one thread")
	}
	if !(Kind{}).GrowsThreads() {
		t.Error("train stages should grow")
	}
}

// TestPeakEstimate checks the estimate against the formula, its growth
// with the batch and the width, and that a dataset is read once.
func TestPeakEstimate(t *testing.T) {
	in := inputs(t)
	est := NewPeakEstimator(Kind{}.Registry())
	peak := func(batch, hidden int) uint64 {
		t.Helper()
		pt := point("spn", 3)
		pt.Training.BatchSize = batch
		pt.Model.Hidden = hidden
		raw, err := json.Marshal(stages.TrainParams{Role: stages.RoleHoldout, Point: pt, Metric: "accuracy"})
		if err != nil {
			t.Fatal(err)
		}
		b, err := est.PeakBytes(raw, in)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	ds, err := data.ReadDatasetFile(filepath.Join(in[0].Dir, stages.FileDataset))
	if err != nil {
		t.Fatal(err)
	}
	var sizes []int
	for _, g := range ds.Graphs {
		sizes = append(sizes, g.N)
	}
	slices.Sort(sizes)
	slices.Reverse(sizes)
	nmax := 0
	for _, n := range sizes[:8] {
		nmax += n
	}
	nmax = (nmax + 63) / 64 * 64
	dsInfo, _ := os.Stat(filepath.Join(in[0].Dir, stages.FileDataset))
	hopsInfo, _ := os.Stat(filepath.Join(in[1].Dir, stages.FileHops))
	buffers := 2 * 2 * (3 + 2) // 2·L·(k+2)
	pt := point("spn", 3)
	pt.Model.Hidden = 8
	cfg, err := models.ConfigFor(pt.Model, ds)
	if err != nil {
		t.Fatal(err)
	}
	params := kinds.All()["spn"].ParamCount(cfg)
	if params < 8*8*2*2 { // two layers of two 8×8 maps at least
		t.Fatalf("the model of the estimate has %d parameter values", params)
	}
	// The hop sets packed: the file's bytes and 12 bytes of index for
	// each of the k + 1 sets of every graph.
	hops := float64(hopsInfo.Size()) + 12*float64(len(ds.Graphs)*(3+1))
	live := 2*float64(dsInfo.Size()) + hops +
		1.25*float64(buffers*4*8*nmax) + 1<<20 + compiledGraphBytes + 16*float64(params)
	if got, want := peak(8, 8), uint64(1.3*live); got != want {
		t.Fatalf("estimate %d, want %d", got, want)
	}
	if !(peak(8, 8) < peak(32, 8) && peak(8, 8) < peak(8, 64)) {
		t.Error("the estimate does not grow with the batch and the width")
	}
	// The node counts are remembered: the dataset is not read again.
	if err := os.Remove(filepath.Join(in[0].Dir, stages.FileDataset)); err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(stages.TrainParams{Role: stages.RoleHoldout, Point: point("spn", 3), Metric: "accuracy"})
	if got, err := est.PeakBytes(raw, in); err != nil || got != peak(8, 8) {
		t.Errorf("estimate without the dataset file: %d, %v; want the remembered one", got, err)
	}
	if _, err := NewPeakEstimator(Kind{}.Registry()).PeakBytes(raw, in[1:]); err == nil {
		t.Error("no generate input: want an error")
	}
}

// planMemoryCase returns the inputs and parameters of a train stage and
// its estimate by a PeakEstimator of its own.
func planMemoryCase(t *testing.T) ([]stages.Input, []byte, uint64) {
	t.Helper()
	in := inputs(t)
	raw, err := json.Marshal(stages.TrainParams{Role: stages.RoleHoldout, Point: point("spn", 3), Metric: "accuracy"})
	if err != nil {
		t.Fatal(err)
	}
	want, err := NewPeakEstimator(Kind{}.Registry()).PeakBytes(raw, in)
	if err != nil || want == 0 {
		t.Fatalf("estimate %d, %v", want, err)
	}
	return in, raw, want
}

// TestPlanMemory: a train node gets its PeakEstimator estimate, other
// kinds and parameters that do not decode 0.
func TestPlanMemory(t *testing.T) {
	in, raw, want := planMemoryCase(t)
	mem := PlanMemory(Kind{}.Registry())
	for _, tc := range []struct {
		name string
		node plan.Node
		want uint64
	}{
		{"train", plan.Node{Kind: stages.KindTrain, JSON: raw}, want},
		{"evaluate", plan.Node{Kind: stages.KindEvaluate, JSON: raw}, 0},
		{"bad params", plan.Node{Kind: stages.KindTrain, JSON: []byte("{")}, 0},
	} {
		if got := mem(&tc.node, in); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
}

// TestPlanMemoryConcurrent: a run's scheduler asks PlanMemory from the
// goroutines of the stages it starts; every caller gets the estimate, and
// under -race the estimator's dataset memo shows no race.
func TestPlanMemoryConcurrent(t *testing.T) {
	in, raw, want := planMemoryCase(t)
	mem := PlanMemory(Kind{}.Registry())
	node := plan.Node{Kind: stages.KindTrain, JSON: raw}
	got := make([]uint64, 8)
	var wg sync.WaitGroup
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i] = mem(&node, in)
		}()
	}
	wg.Wait()
	for i, g := range got {
		if g != want {
			t.Errorf("caller %d: %d, want %d", i, g, want)
		}
	}
}
