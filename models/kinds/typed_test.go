package kinds

import (
	"bytes"
	"context"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/data/mirrortest"
	"github.com/spn-project/spn/data/ogb"
	"github.com/spn-project/spn/data/qm9"
	"github.com/spn-project/spn/data/sp"
	"github.com/spn-project/spn/models"
	"github.com/spn-project/spn/models/espn"
	"github.com/spn-project/spn/models/kernels"
	"github.com/spn-project/spn/models/metric"
	"github.com/spn-project/spn/models/nn"
	"github.com/spn-project/spn/models/predict"
	"github.com/spn-project/spn/models/rspn"
	"github.com/spn-project/spn/models/synth"
	"github.com/spn-project/spn/schema"
)

// typedTask is a synthetic dataset with its hop sets and split.
type typedTask struct {
	ds          *data.Dataset
	hops        *data.Hops
	train, test []int
}

func newTypedTask(t testing.TB, gen func(seed uint64, n, kmax int) (*data.Dataset, *data.Hops, error), graphs, kmax int) typedTask {
	t.Helper()
	ds, hops, err := gen(11, graphs, kmax)
	if err != nil {
		t.Fatal(err)
	}
	s := ds.Splits[0]
	return typedTask{ds: ds, hops: hops, train: s.Train, test: append(append([]int(nil), s.Val...), s.Test...)}
}

// fitTyped trains m with Adam and returns its outputs on the test graphs
// and the test batch.
func fitTyped(t *testing.T, m gorgonia, task typedTask, epochs int, lr float64) ([]float32, *data.Batch) {
	t.Helper()
	opt := nn.NewAdam(m.Params(), lr, 0)
	rng := rand.New(rand.NewPCG(5, 5))
	idx := append([]int(nil), task.train...)
	for ep := 0; ep < epochs; ep++ {
		rng.Shuffle(len(idx), func(i, j int) { idx[i], idx[j] = idx[j], idx[i] })
		for lo := 0; lo < len(idx); lo += 32 {
			b, err := data.NewBatch(task.ds, task.hops, idx[lo:min(lo+32, len(idx))], m.Hops())
			if err != nil {
				t.Fatal(err)
			}
			if _, _, err := m.Step(b); err != nil {
				t.Fatal(err)
			}
			opt.Step()
		}
	}
	b, err := data.NewBatch(task.ds, task.hops, task.test, m.Hops())
	if err != nil {
		t.Fatal(err)
	}
	out, err := m.Predict(b)
	if err != nil {
		t.Fatal(err)
	}
	return out, b
}

func typedConfig(kind string, k int, pool string, ds *data.Dataset) models.Config {
	cfg, err := models.ConfigFor(schema.Model{Kind: kind, K: k, Layers: 2, Hidden: 32, Pool: pool}, ds)
	if err != nil {
		panic(err)
	}
	return cfg
}

// TestRSPNLearnsRelations regresses, per graph, the mean over nodes u of
// the number of label-1 neighbours along relation r_1 minus those along
// r_2: a target only relation-aware messages can compute. R-SPN's test MAE
// must fall well below that of predicting the training mean.
func TestRSPNLearnsRelations(t *testing.T) {
	task := newTypedTask(t, synth.Relational, 600, 2)
	m, err := newModel(typedConfig(rspn.Name, 2, nn.PoolMean, task.ds), 7, kernels.CPU{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	out, b := fitTyped(t, m, task, 20, 1e-2)
	mae, baseMAE := maeAgainstMean(task, out, b)
	t.Logf("rspn: test MAE %.4f, predicting the training mean %.4f", mae, baseMAE)
	if mae > 0.5*baseMAE {
		t.Errorf("rspn test MAE %.4f, want ≤ half of the mean predictor's %.4f", mae, baseMAE)
	}
}

// TestESPNLearnsEdgeFeatures classifies two binary tasks over edge
// features (a quarter of the labels missing): task 1, more edges with
// feature 0 = 2 than = 0; task 2, an edge with feature 1 = 1 between two
// nodes whose categorical feature 1 is 2. E-SPN's mean test ROC-AUC must
// be well above chance (0.5).
func TestESPNLearnsEdgeFeatures(t *testing.T) {
	task := newTypedTask(t, synth.EdgeFeatures, 600, 2)
	m, err := newModel(typedConfig(espn.Name, 2, nn.PoolSum, task.ds), 7, kernels.CPU{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	out, b := fitTyped(t, m, task, 30, 3e-3)
	auc, err := metric.MeanROCAUC(out, b.Target, 2)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("espn: mean test ROC-AUC %.3f", auc)
	// 0.855 in the default (gonum) build, 0.839 with -tags openblas: the
	// bar must hold for both GEMM builds' bits.
	if auc < 0.8 {
		t.Errorf("espn mean test ROC-AUC %.3f, want ≥ 0.8", auc)
	}
}

// TestGlobalReadout: with global_readout the layers of every SPN kind get
// a d×d map whose gradient is not zero, without it they have none, and
// switching it on leaves every other parameter's initialisation alone.
func TestGlobalReadout(t *testing.T) {
	task := newTypedTask(t, synth.Relational, 40, 2)
	for _, kind := range []string{"spn", "gin", rspn.Name, espn.Name} {
		var initial map[string][]float32
		for _, on := range []bool{false, true} {
			cfg := typedConfig(kind, 2, nn.PoolMean, task.ds)
			if kind == "gin" {
				cfg.Model.K = 1
			}
			cfg.Model.GlobalReadout = on
			m, err := All().New(cfg, 1, kernels.CPU{})
			if err != nil {
				t.Fatal(err)
			}
			if initial == nil {
				initial = map[string][]float32{}
				for _, p := range m.Params() {
					initial[p.Name] = append([]float32(nil), p.W...)
				}
			} else {
				for _, p := range m.Params() {
					if w, ok := initial[p.Name]; ok && !slices.Equal(w, p.W) {
						t.Errorf("%s: global_readout changes the initialisation of %s", kind, p.Name)
					}
				}
			}
			b, err := data.NewBatch(task.ds, task.hops, task.train[:8], 2)
			if err != nil {
				t.Fatal(err)
			}
			if _, _, err := m.(models.Stepper).Step(b); err != nil {
				t.Fatal(err)
			}
			var found int
			for _, p := range m.Params() {
				if !strings.Contains(p.Name, "global_readout") {
					continue
				}
				found++
				var norm float64
				for _, g := range p.G {
					norm += float64(g) * float64(g)
				}
				if norm == 0 {
					t.Errorf("%s: %s has a zero gradient", kind, p.Name)
				}
			}
			if want := map[bool]int{false: 0, true: 2}[on]; found != want {
				t.Errorf("%s global_readout=%v: %d readout maps, want %d", kind, on, found, want)
			}
		}
	}
}

// TestRSPNLearnsQM9 trains R-SPN (k = 3, mean pooling, 4 epochs) on the first 1000
// molecules of QM9's validation file (the mirror's; 800 for training),
// regressing U0 (z-scored; an extensive property) over the 4 bond types; its
// test MAE must fall well below that of predicting the training mean.
func TestRSPNLearnsQM9(t *testing.T) {
	if testing.Short() {
		t.Skip("trains on QM9")
	}
	ds, err := qm9.LoadN(filepath.Join(mirrortest.Dir(t), "qm9", "valid.jsonl.gz"), "valid", 1000)
	if err != nil {
		t.Fatal(err)
	}
	u0, err := qm9.TargetIndex("U0")
	if err != nil {
		t.Fatal(err)
	}
	ds.NumTargets = 1
	for j := range ds.Graphs {
		ds.Graphs[j].Target = ds.Graphs[j].Target[u0 : u0+1]
	}
	task := typedTask{ds: ds, hops: hopsOf(t, ds, 3)}
	for j := range ds.Graphs {
		if j%5 == 0 {
			task.test = append(task.test, j)
		} else {
			task.train = append(task.train, j)
		}
	}
	m, err := newModel(typedConfig(rspn.Name, 3, nn.PoolMean, ds), 7, kernels.CPU{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	out, b := fitTyped(t, m, task, 4, 1e-3)
	mae, baseMAE := maeAgainstMean(task, out, b)
	t.Logf("rspn on QM9 U0 (800 train molecules): test MAE %.4f, predicting the training mean %.4f", mae, baseMAE)
	if mae > 0.5*baseMAE {
		t.Errorf("rspn test MAE %.4f, want ≤ half of the mean predictor's %.4f", mae, baseMAE)
	}
}

// hopsOf computes the hop sets N_1..N_kmax of ds.
func hopsOf(t testing.TB, ds *data.Dataset, kmax int) *data.Hops {
	t.Helper()
	hops, err := sp.Compute(context.Background(), ds.Graphs, kmax, false, 2)
	if err != nil {
		t.Fatal(err)
	}
	return hops
}

// TestESPNLearnsBACE trains E-SPN (k = 3) briefly on OGB's bace (the
// mirror's zip; 1513 molecules, scaffold split, 9 atom and 3 bond
// features); its validation ROC-AUC must be well above chance (0.5).
func TestESPNLearnsBACE(t *testing.T) {
	if testing.Short() {
		t.Skip("trains on bace")
	}
	ds, err := ogb.Load(filepath.Join(mirrortest.Dir(t), "ogb", "bace.zip"), "bace")
	if err != nil {
		t.Fatal(err)
	}
	s := ds.Splits[0]
	task := typedTask{ds: ds, hops: hopsOf(t, ds, 3), train: s.Train, test: s.Val}
	m, err := newModel(typedConfig(espn.Name, 3, nn.PoolMean, ds), 7, kernels.CPU{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	out, b := fitTyped(t, m, task, 8, 3e-3)
	auc, err := metric.MeanROCAUC(out, b.Target, ds.NumTargets)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("espn on bace (%d train molecules, 8 epochs): validation ROC-AUC %.3f", len(s.Train), auc)
	// 0.678 in the default (gonum) build, 0.649 with -tags openblas; more
	// epochs do not raise it reliably (15 epochs: 0.506 / 0.591), so the bar
	// is "clearly above chance" for both builds, not a tuned score.
	if auc < 0.6 {
		t.Errorf("espn validation ROC-AUC %.3f on bace, want ≥ 0.6", auc)
	}
}

// TestTypedPredict: spn predict's path (hop sets computed on the fly, the
// dataset's vocabularies from the model's configuration) gives the
// model's own outputs, as σ(logit) per task for a binary task.
func TestTypedPredict(t *testing.T) {
	for _, gen := range []func(uint64, int, int) (*data.Dataset, *data.Hops, error){synth.Relational, synth.EdgeFeatures} {
		task := newTypedTask(t, gen, 30, 2)
		kind := rspn.Name
		if task.ds.Task == data.TaskBinary {
			kind = espn.Name
		}
		m, err := newModel(typedConfig(kind, 2, nn.PoolMean, task.ds), 1, kernels.CPU{})
		if err != nil {
			t.Fatal(err)
		}
		b, err := data.NewBatch(task.ds, task.hops, task.test, 2)
		if err != nil {
			t.Fatal(err)
		}
		want, err := m.Predict(b)
		if err != nil {
			t.Fatal(err)
		}
		var graphs []data.Graph
		for _, j := range task.test {
			graphs = append(graphs, task.ds.Graphs[j])
		}
		preds, err := predict.Graphs(context.Background(), m, graphs, 1)
		if err != nil {
			t.Fatal(err)
		}
		c := task.ds.NumTargets
		for i, p := range preds {
			vals := p.Values
			if kind == espn.Name {
				vals = p.TaskProbabilities
			}
			if len(vals) != c {
				t.Fatalf("%s graph %d: %d values, want %d", kind, i, len(vals), c)
			}
			for j, v := range vals {
				w := float64(want[i*c+j])
				if kind == espn.Name {
					w = 1 / (1 + math.Exp(-w))
				}
				if math.Abs(v-w) > 1e-6 {
					t.Fatalf("%s graph %d value %d: predict %v, model %v", kind, i, j, v, w)
				}
			}
		}
	}
}

// BenchmarkTypedStep is one training step of SPN, R-SPN and E-SPN (k = 3,
// hidden 64, 4 layers) on a batch of 32 typed graphs of 8..14 nodes.
func BenchmarkTypedStep(b *testing.B) {
	for _, kind := range []string{"spn", rspn.Name, espn.Name} {
		b.Run(kind, func(b *testing.B) {
			ds, hops, err := synth.Relational(1, 32, 3)
			if err != nil {
				b.Fatal(err)
			}
			idx := make([]int, 32)
			for i := range idx {
				idx[i] = i
			}
			batch, err := data.NewBatch(ds, hops, idx, 3)
			if err != nil {
				b.Fatal(err)
			}
			cfg, err := models.ConfigFor(schema.Model{Kind: kind, K: 3, Layers: 4, Hidden: 64, Pool: nn.PoolMean}, ds)
			if err != nil {
				b.Fatal(err)
			}
			m, err := All().New(cfg, 1, kernels.CPU{Threads: 1})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := m.(models.Stepper).Step(batch); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestTypedCheckpoint: a trained R-SPN and E-SPN (with global readout)
// come back from a checkpoint through the registry with the same outputs.
func TestTypedCheckpoint(t *testing.T) {
	for _, kind := range []string{rspn.Name, espn.Name} {
		task := newTypedTask(t, synth.Relational, 40, 2)
		cfg := typedConfig(kind, 2, nn.PoolMean, task.ds)
		cfg.Model.GlobalReadout = true
		m, err := newModel(cfg, 3, kernels.CPU{})
		if err != nil {
			t.Fatal(err)
		}
		fitTyped(t, m, task, 1, 1e-2)
		b, err := data.NewBatch(task.ds, task.hops, task.test, 2)
		if err != nil {
			t.Fatal(err)
		}
		want, err := m.Predict(b)
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := models.WriteCheckpoint(&buf, m); err != nil {
			t.Fatal(err)
		}
		back, err := models.ReadCheckpoint(&buf, All(), kernels.CPU{})
		if err != nil {
			t.Fatal(err)
		}
		got, err := back.(gorgonia).Predict(b)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("%s: outputs after the checkpoint differ", kind)
		}
	}
}

// maeAgainstMean returns the test MAE of out (the outputs on batch b of
// task.test, one target) and that of predicting the training targets' mean.
func maeAgainstMean(task typedTask, out []float32, b *data.Batch) (mae, meanMAE float64) {
	var mean float64
	for _, j := range task.train {
		mean += task.ds.Graphs[j].Target[0]
	}
	mean /= float64(len(task.train))
	base := make([]float32, len(b.Target))
	for i := range base {
		base[i] = float32(mean)
	}
	mae, _ = metric.MAEOf(out, b.Target)
	meanMAE, _ = metric.MAEOf(base, b.Target)
	return mae, meanMAE
}
