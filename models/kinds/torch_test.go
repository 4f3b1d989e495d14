package kinds

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"gonum.org/v1/gonum/floats"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/data/ogb"
	"github.com/spn-project/spn/data/qm9"
	"github.com/spn-project/spn/data/sp"
	"github.com/spn-project/spn/data/tu"
	"github.com/spn-project/spn/internal/testkit/mirrortest"
	"github.com/spn-project/spn/models"
	"github.com/spn-project/spn/models/cuda/engine"
	"github.com/spn-project/spn/models/internal/testkit/enginetest"
	"github.com/spn-project/spn/models/internal/testkit/modeltest"
	"github.com/spn-project/spn/models/kernels"
	"github.com/spn-project/spn/models/param"
	"github.com/spn-project/spn/models/rt"
	"github.com/spn-project/spn/schema/modelspec"
)

// pythonEnv names the Python interpreter of TestSameGradientsAsPyTorch.
const pythonEnv = "SPN_PYTHON"

// pythonWithTorch returns a Python interpreter that imports torch:
// $SPN_PYTHON, else python3 on the PATH, else /usr/bin/python3 (Debian's
// python3-torch installs there, and a pyenv python3 may come first on
// the PATH). Without one the test skips, or fails under CI=true (CI
// installs python3-torch).
func pythonWithTorch(t *testing.T) string {
	t.Helper()
	cands := []string{"python3", "/usr/bin/python3"}
	if p := os.Getenv(pythonEnv); p != "" {
		cands = []string{p}
	}
	for _, p := range cands {
		if exec.Command(p, "-c", "import torch").Run() == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("no Python that imports torch among %v (CI installs python3-torch)", cands)
	}
	t.Skipf("no Python that imports torch among %v (apt-get install python3-torch, or set %s)", cands, pythonEnv)
	return ""
}

// Tolerances of TestSameGradientsAsPyTorch.
//
// ReLU's derivative jumps at 0 (LeakyReLU's too): where an input lies
// within float32 rounding of 0, spn's and PyTorch's may fall on either
// side, and their gradients then differ by that node's whole term (on
// one GAT batch an input at 1.4e-7 of its root mean square moves some
// gradients by 0.3 %). torch_grads.py reports the closest input ("kink");
// a batch with one closer than torchKink has its loss compared but not
// its gradients, and at least torchMinChecked batches of each model must
// have theirs compared.
//
// The reference is PyTorch's float64 figures. spn computes in float32,
// whose rounding a batch's figures suffer more or less (a batch norm
// divides by a feature's spread over the batch: on one of the NCI1
// batches PyTorch's own float32 gradients of the first layer are 0.5 %
// from its float64 ones). PyTorch's float32 error on the batch, e32, is the yardstick:
// spn's loss must be within torchTol·(1 + |loss|) + torchErrFactor·e32
// of the reference, and each parameter's gradient within
// torchTol·‖reference‖ + 1e-6·(the largest gradient norm) +
// torchErrFactor·e32 (Euclidean norms). The biases of the linear maps
// that feed a batch norm have gradient zero in exact arithmetic (the
// norm subtracts the mean): spn's must be rounding noise, below
// torchNoiseTol·‖its map's weight gradient‖.
const (
	torchTol        = 1e-5
	torchErrFactor  = 4
	torchNoiseTol   = 1e-3
	torchKink       = 1e-6
	torchMinChecked = 15
)

// torchCase is one model of TestSameGradientsAsPyTorch and its data.
type torchCase struct {
	kind, data string
	k          int
	load       func(t *testing.T, mirror string) *data.Dataset
	// linear, heads and maxDist are model.linear, model.heads (GCN,
	// GAT, Graphormer) and model.max_dist (Graphormer); global and gated
	// model.global_readout and model.gated_readout.
	linear, global, gated bool
	heads, maxDist        int
	// pool is model.pool ("" for sum), dropout model.dropout.
	pool    string
	dropout float64
	// unreachable is model.unreachable (N_∞), layerNorm model.layer_norm.
	unreachable, layerNorm bool
	// conv, weights, delay and cap are DRew's model.conv,
	// model.weights, model.delay and model.k (0: no cap); its models
	// have 3 layers (hops up to 3, k the hop sets computed).
	conv, weights string
	delay         modelspec.Delay
	cap           int
}

// drewCase is a DRew case of torchCases on NCI1 (conv gin and gcn) or
// tox21 (conv gine), with mean pooling (the residual sums grow with depth).
func drewCase(conv, weights string, delay modelspec.Delay, cap int) torchCase {
	c := torchCase{kind: "drew", data: "NCI1", k: 3, load: loadTU("NCI1.zip"), pool: models.PoolMean, conv: conv, weights: weights, delay: delay, cap: cap}
	if conv == modelspec.ConvGINE {
		c.data, c.load = "tox21", loadTox21
	}
	return c
}

// torchCases: the baseline's two forms (NCI1: labels; ENZYMES: labels
// and attributes), SPN (k = 3), GIN, GCN and GAT (each variant) and
// Graphormer (max_dist = 3, some graphs disconnected) on NCI1
// (classification), R-SPN (k = 3; also with Table 4's gated readout) on
// QM9's valid file (13 regression targets, 4 bond types), E-SPN (k = 3)
// on OGB's tox21 (12 binary tasks with missing labels); SPN, R-SPN and
// E-SPN also with the global readout, SPN also with mean and max pooling,
// SPN, GAT and E-SPN also with dropout (the masks spn draws, given to
// PyTorch); SPN, R-SPN and E-SPN also with N_∞ (model.unreachable; some
// of NCI1's and tox21's graphs are disconnected, QM9's are not); SPN,
// GIN and E-SPN also with the readout's layer norms (model.layer_norm;
// SPN's with mean pooling and dropout, E-SPN's with dropout, as the
// MoleculeNet table's model); DRew (3 layers, mean pooling) with
// ν = 1, 2 and ∞ and equal and learned weights, conv gin on NCI1 (also
// with its hops capped at k = 2) and conv gine on tox21.
var torchCases = []torchCase{
	{kind: "baseline", data: "NCI1", k: 1, load: loadTU("NCI1.zip")},
	{kind: "baseline", data: "ENZYMES", k: 1, load: loadTU("ENZYMES.zip")},
	{kind: "spn", data: "NCI1", k: 3, load: loadTU("NCI1.zip")},
	{kind: "spn", data: "NCI1", k: 3, load: loadTU("NCI1.zip"), global: true},
	{kind: "spn", data: "NCI1", k: 3, load: loadTU("NCI1.zip"), pool: models.PoolMean},
	{kind: "spn", data: "NCI1", k: 3, load: loadTU("NCI1.zip"), pool: models.PoolMax},
	{kind: "spn", data: "NCI1", k: 3, load: loadTU("NCI1.zip"), dropout: 0.5},
	{kind: "gin", data: "NCI1", k: 1, load: loadTU("NCI1.zip")},
	{kind: "gcn", data: "NCI1", k: 1, load: loadTU("NCI1.zip")},
	{kind: "gcn", data: "NCI1", k: 1, load: loadTU("NCI1.zip"), linear: true},
	{kind: "gat", data: "NCI1", k: 1, load: loadTU("NCI1.zip"), heads: 4},
	{kind: "gat", data: "NCI1", k: 1, load: loadTU("NCI1.zip"), heads: 4, dropout: 0.3},
	{kind: "gat", data: "NCI1", k: 1, load: loadTU("NCI1.zip"), heads: 2, linear: true},
	{kind: "graphormer", data: "NCI1", k: 3, load: loadTU("NCI1.zip"), heads: 2, maxDist: 3},
	{kind: "rspn", data: "QM9-valid", k: 3, load: loadQM9},
	{kind: "rspn", data: "QM9-valid", k: 3, load: loadQM9, gated: true},
	{kind: "rspn", data: "QM9-valid", k: 3, load: loadQM9, global: true},
	{kind: "espn", data: "tox21", k: 3, load: loadTox21},
	{kind: "espn", data: "tox21", k: 3, load: loadTox21, global: true},
	{kind: "espn", data: "tox21", k: 3, load: loadTox21, dropout: 0.5},
	{kind: "spn", data: "NCI1", k: 3, load: loadTU("NCI1.zip"), unreachable: true},
	{kind: "rspn", data: "QM9-valid", k: 3, load: loadQM9, unreachable: true},
	{kind: "espn", data: "tox21", k: 3, load: loadTox21, unreachable: true},
	{kind: "spn", data: "NCI1", k: 3, load: loadTU("NCI1.zip"), layerNorm: true, pool: models.PoolMean, dropout: 0.5},
	{kind: "gin", data: "NCI1", k: 1, load: loadTU("NCI1.zip"), layerNorm: true},
	{kind: "espn", data: "tox21", k: 3, load: loadTox21, layerNorm: true, pool: models.PoolMean, dropout: 0.5},
	drewCase(modelspec.ConvGIN, modelspec.WeightsEqual, 1, 0),
	drewCase(modelspec.ConvGIN, modelspec.WeightsLearned, 1, 0),
	drewCase(modelspec.ConvGIN, modelspec.WeightsEqual, 2, 0),
	drewCase(modelspec.ConvGIN, modelspec.WeightsLearned, 2, 0),
	drewCase(modelspec.ConvGIN, modelspec.WeightsEqual, modelspec.DelayNone, 0),
	drewCase(modelspec.ConvGIN, modelspec.WeightsLearned, modelspec.DelayNone, 0),
	drewCase(modelspec.ConvGIN, modelspec.WeightsLearned, 1, 2),
	drewCase(modelspec.ConvGINE, modelspec.WeightsLearned, 1, 0),
	drewCase(modelspec.ConvGINE, modelspec.WeightsEqual, 2, 0),
	drewCase(modelspec.ConvGINE, modelspec.WeightsLearned, modelspec.DelayNone, 0),
	drewCase(modelspec.ConvGCN, modelspec.WeightsLearned, 1, 0),
	drewCase(modelspec.ConvGCN, modelspec.WeightsEqual, 2, 0),
	drewCase(modelspec.ConvGCN, modelspec.WeightsLearned, modelspec.DelayNone, 0),
	drewCase(modelspec.ConvGCN, modelspec.WeightsEqual, 1, 2),
}

func loadQM9(t *testing.T, mirror string) *data.Dataset {
	ds, err := qm9.LoadN(filepath.Join(mirror, "qm9", "valid.jsonl.gz"), "QM9-valid", torchGraphs)
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

func loadTox21(t *testing.T, mirror string) *data.Dataset {
	ds, err := ogb.Load(filepath.Join(mirror, "ogb", "tox21.zip"), "tox21")
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

// loadTU returns the loader of the mirror's TU dataset file.
func loadTU(file string) func(t *testing.T, mirror string) *data.Dataset {
	return func(t *testing.T, mirror string) *data.Dataset {
		ds, err := tu.Load(filepath.Join(mirror, "tu", file), "")
		if err != nil {
			t.Fatal(err)
		}
		return ds
	}
}

// The batches of TestSameGradientsAsPyTorch: 20 of 16 of a dataset's
// first 320 graphs, shuffled (NCI1's file lists its classes one after
// the other).
const (
	torchGraphs  = 320
	torchBatch   = 16
	torchBatches = 20
)

// TestSameGradientsAsPyTorch computes the loss and every parameter's
// gradient of every kind: spn's SPN, GIN, GCN and GAT (both variants),
// Graphormer, R-SPN, E-SPN, DRew and the baseline (2 layers, DRew 3,
// hidden 16, sum pooling unless a case says; torchCases) on 20 batches of 16 graphs, and PyTorch's for the same
// models (scripts/bench/torch_grads.py: for SPN and GIN the model of
// scripts/bench/torch_spn.py, which the speed comparison times; the
// others written there from the equations of docs/models.md), with the
// same parameters on the same batches. The two
// share no code: PyTorch's BatchNorm1d, index_add_, embeddings, softmax,
// losses and autograd against spn's ops, its padded batches and its
// batch norm over the real nodes only. The parameters are drawn away
// from their initial values (α logits, ε, the batch and layer norms'
// scale and shift, Graphormer's spatial bias), so that a term the initial
// values hide (α_i in another order, ε's sign, a distance bucket) shows.
//
// It compares gradients at fixed parameters, not training runs: Adam's
// first step moves every parameter by ±lr whatever the size of its
// gradient, so a component that cancels to rounding noise in both (one
// of GIN's label embeddings on these batches) sends two equally right
// implementations 2·lr apart, and training amplifies that.
func TestSameGradientsAsPyTorch(t *testing.T) { sameGradientsAsPyTorch(t, nil) }

// TestSameGradientsAsPyTorchOnDevice is TestSameGradientsAsPyTorch with
// spn's models on the emulated device (Graphormer, which has no device
// math, skips).
func TestSameGradientsAsPyTorchOnDevice(t *testing.T) {
	sameGradientsAsPyTorch(t, enginetest.Emulated(t))
}

// TestGPUSameGradientsAsPyTorch is TestSameGradientsAsPyTorch with spn's
// models on GPU 0 (it skips without one).
func TestGPUSameGradientsAsPyTorch(t *testing.T) {
	sameGradientsAsPyTorch(t, enginetest.GPU(t))
}

// sameGradientsAsPyTorch runs TestSameGradientsAsPyTorch with spn's models
// on the CPU (e nil) or on e's device.
func sameGradientsAsPyTorch(t *testing.T, e *engine.Engine) {
	py := pythonWithTorch(t)
	// The scripts are inputs of the test: reading them here makes go
	// test's result cache see an edit of them (it does not see what the
	// Python process reads).
	for _, f := range []string{"torch_grads.py", "torch_spn.py"} {
		if _, err := os.ReadFile(filepath.Join(torchScripts, f)); err != nil {
			t.Fatal(err)
		}
	}
	mirror := mirrortest.Dir(t)
	// Each dataset is read once and its first torchGraphs graphs shared
	// by its cases (which only read them).
	loaded := map[string]*data.Dataset{}
	for _, c := range torchCases {
		name := c.kind
		for _, o := range []struct {
			on   bool
			name string
		}{{c.conv != "", "-" + c.conv}, {c.weights != "", "-" + c.weights}, {c.kind == "drew", "-nu" + c.delay.String()}, {c.cap > 0, fmt.Sprintf("-k%d", c.cap)}, {c.linear, "-linear"}, {c.global, "-global"}, {c.gated, "-gated"}, {c.pool != "", "-" + c.pool}, {c.dropout > 0, "-dropout"}, {c.unreachable, "-unreachable"}, {c.layerNorm, "-layernorm"}} {
			if o.on {
				name += o.name
			}
		}
		t.Run(name+"/"+c.data, func(t *testing.T) {
			ds, ok := loaded[c.data]
			if !ok {
				ds = c.load(t, mirror)
				ds.Graphs = ds.Graphs[:torchGraphs]
				loaded[c.data] = ds
			}
			gradientsAsPyTorch(t, e, py, c, ds)
		})
	}
}

// torchScripts is the folder of torch_grads.py and torch_spn.py.
const torchScripts = "../../scripts/bench"

// torchBatchOut is one line of torch_grads.py's output.
type torchBatchOut struct {
	Batch     int                  `json:"batch"`
	Loss      float64              `json:"loss"`
	LossErr32 float64              `json:"loss_err32"`
	Grads     map[string][]float64 `json:"grads"`
	GradErr32 map[string]float64   `json:"grad_err32"`
	Kink      *float64             `json:"kink"`
}

// torchEvalOut is one line of torch_grads.py's evaluation-mode output.
type torchEvalOut struct {
	EvalBatch *int      `json:"eval_batch"`
	Out       []float64 `json:"out"`
	OutErr32  float64   `json:"out_err32"`
}

// torchGraph is a graph as torch_grads.py reads it.
type torchGraph struct {
	N        int         `json:"n"`
	Adj      [][2]int32  `json:"adj"`
	EdgeType []int32     `json:"edge_type,omitempty"`
	EdgeFeat [][]int32   `json:"edge_feat,omitempty"`
	X        []int32     `json:"x,omitempty"`
	Attrs    [][]float32 `json:"attrs,omitempty"`
	NodeCat  [][]int32   `json:"node_cat,omitempty"`
	Y        *int        `json:"y,omitempty"`
	Target   []*float64  `json:"target,omitempty"`
}

// torchGraphOf writes g of ds as torch_grads.py reads it.
func torchGraphOf(ds *data.Dataset, g *data.Graph) torchGraph {
	rows := func(v []int32, w int) [][]int32 {
		var out [][]int32
		for i := 0; w > 0 && i < len(v); i += w {
			out = append(out, v[i:i+w])
		}
		return out
	}
	tg := torchGraph{N: g.N, Adj: [][2]int32{}, EdgeType: g.EdgeType, X: g.Labels,
		EdgeFeat: rows(g.EdgeFeat, len(ds.EdgeFeatVocab)), NodeCat: rows(g.NodeCat, len(ds.NodeCatVocab))}
	for u := 0; u < g.N; u++ {
		for _, v := range g.Adj.Row(u) {
			tg.Adj = append(tg.Adj, [2]int32{int32(u), v})
		}
		if ds.AttrDim > 0 {
			tg.Attrs = append(tg.Attrs, g.Attrs[u*ds.AttrDim:(u+1)*ds.AttrDim])
		}
	}
	if ds.NumClasses > 0 {
		tg.Y = &g.Y
	}
	for _, v := range g.Target {
		if math.IsNaN(v) {
			tg.Target = append(tg.Target, nil)
		} else {
			tg.Target = append(tg.Target, &v)
		}
	}
	return tg
}

// gradientsAsPyTorch is sameGradientsAsPyTorch for one case, on ds's
// torchGraphs graphs.
func gradientsAsPyTorch(t *testing.T, e *engine.Engine, py string, c torchCase, ds *data.Dataset) {
	hops, err := sp.Compute(context.Background(), ds.Graphs, c.k, c.unreachable, 2)
	if err != nil {
		t.Fatal(err)
	}
	spec := modelspec.Model{Kind: c.kind, K: c.k, Layers: 2, Hidden: 16, Pool: cmp.Or(c.pool, models.PoolSum), Linear: c.linear, Heads: c.heads, MaxDist: c.maxDist,
		GlobalReadout: c.global, GatedReadout: c.gated, Dropout: c.dropout, Unreachable: c.unreachable, LayerNorm: c.layerNorm}
	spec.LearnEps = c.kind == "spn" || c.kind == "gin" || c.kind == "rspn" || c.kind == "espn"
	if c.kind == "drew" {
		spec.Layers, spec.K, spec.Conv, spec.Weights, spec.Delay = 3, c.cap, c.conv, c.weights, c.delay
	}
	cfg, err := models.ConfigFor(spec, ds)
	if err != nil {
		t.Fatal(err)
	}
	if e != nil {
		if err := All().CheckDevice(cfg, "cuda:0"); err != nil {
			t.Skip(err)
		}
	}
	kind, err := All().Lookup(c.kind)
	if err != nil {
		t.Fatal(err)
	}
	m, err := kind.New(cfg, 1, kernels.CPU{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	step, predict := stepsOf(m)
	rng := rand.New(rand.NewPCG(3, 4))
	for _, p := range m.Params() {
		switch {
		case strings.HasSuffix(p.Name, ".alpha_logits"):
			p.Normal(rng)
		case strings.HasSuffix(p.Name, ".eps"):
			p.Uniform(rng, 0.5)
		case strings.HasSuffix(p.Name, ".gamma"):
			for i := range p.W {
				p.W[i] = float32(0.5 + rng.Float64())
			}
		case strings.HasSuffix(p.Name, ".beta"):
			p.Uniform(rng, 0.2)
		case strings.HasSuffix(p.Name, ".spatial_bias"):
			p.Normal(rng)
		}
	}
	var ck bytes.Buffer
	if err := models.WriteCheckpoint(&ck, m); err != nil {
		t.Fatal(err)
	}
	if e != nil {
		if err := m.(interface{ UseDevice(*engine.Engine) error }).UseDevice(e); err != nil {
			t.Fatal(err)
		}
	}
	graphs := make([]torchGraph, len(ds.Graphs))
	for i := range ds.Graphs {
		graphs[i] = torchGraphOf(ds, &ds.Graphs[i])
	}
	order := rand.New(rand.NewPCG(1, 2)).Perm(torchGraphs)
	batches := make([][]int, torchBatches)
	for i := range batches {
		batches[i] = order[i*torchBatch : (i+1)*torchBatch]
	}
	// The dropout masks spn's steps draw, in step order (none when
	// dropout is off): one per readout term, the input's and each
	// layer's.
	var masks [][][]float32
	if c.dropout > 0 {
		rng := param.MaskStream(1)
		for _, gs := range batches {
			masks = append(masks, rt.DrawMasks(rng, c.dropout, spec.Layers+1, len(gs), cfg.Out))
		}
	}
	want, wantEval := runTorchGrads(t, py, torchInputs{graphs: graphs, checkpoint: ck.Bytes(), batches: batches, masks: masks})
	bts := make([]*data.Batch, len(batches))
	for i, gs := range batches {
		if bts[i], err = data.NewBatchWith(ds, hops, gs, models.BatchOptions(m)); err != nil {
			t.Fatal(err)
		}
	}

	var worstLoss, worstGrad float64
	checked := 0
	for i, bt := range bts {
		for _, p := range m.Params() {
			p.ZeroGrad()
		}
		loss, err := step(bt)
		if err != nil {
			t.Fatal(err)
		}
		w := want[i]
		d := math.Abs(loss - w.Loss)
		worstLoss = max(worstLoss, d/(1+math.Abs(w.Loss)))
		if !(d <= torchTol*(1+math.Abs(w.Loss))+torchErrFactor*w.LossErr32) {
			t.Errorf("batch %d: spn's loss %.7f, PyTorch's %.7f (float64; its float32 one is %.1e from it)", i, loss, w.Loss, w.LossErr32)
		}
		if w.Kink != nil && *w.Kink < torchKink {
			t.Logf("batch %d: a ReLU input at %.1e of its root mean square from 0: gradients not compared", i, *w.Kink)
			continue
		}
		checked++
		scale := 0.0
		for _, g := range w.Grads {
			scale = max(scale, floats.Norm(g, 2))
		}
		for _, p := range m.Params() {
			g, ok := w.Grads[p.Name]
			if !ok || len(g) != len(p.G) {
				t.Fatalf("batch %d: PyTorch has no gradient of %s %v", i, p.Name, p.Shape)
			}
			if base, ok := preNormBias(p.Name); ok {
				if b, bound := floats.Norm(to64(p.G), 2), torchNoiseTol*floats.Norm(w.Grads[base+".w"], 2); !(b <= bound) {
					t.Errorf("batch %d: %s, before a batch norm: gradient norm %.3g, want rounding noise below %.3g", i, p.Name, b, bound)
				}
				continue
			}
			diff, ref, e32 := floats.Distance(g, to64(p.G), 2), floats.Norm(g, 2), w.GradErr32[p.Name]
			if ref >= 1e-2*scale {
				worstGrad = max(worstGrad, diff/ref)
			}
			if !(diff <= torchTol*ref+1e-6*scale+torchErrFactor*e32) {
				t.Errorf("batch %d: %s: spn's gradient %.3g from PyTorch's (float64, of norm %.3g; its float32 one is %.3g from it)", i, p.Name, diff, ref, e32)
			}
		}
	}
	// Evaluation mode: the batch norms' running statistics of the 20
	// training-mode passes above (momentum, the unbiased variance).
	var worstOut float64
	for i, bt := range bts {
		got, err := predict(bt)
		if err != nil {
			t.Fatal(err)
		}
		w := wantEval[i]
		if len(got) != len(w.Out) {
			t.Fatalf("evaluation, batch %d: spn has %d outputs, PyTorch %d", i, len(got), len(w.Out))
		}
		for j, v := range w.Out {
			d := math.Abs(float64(got[j]) - v)
			worstOut = max(worstOut, d/(1+math.Abs(v)))
			if !(d <= torchTol*(1+math.Abs(v))+torchErrFactor*w.OutErr32) {
				t.Errorf("evaluation, batch %d: output %d is %.7g, PyTorch's %.7g (float64; its float32 ones are up to %.1e from them)", i, j, got[j], v, w.OutErr32)
				break
			}
		}
	}
	if checked < torchMinChecked {
		t.Errorf("the gradients of %d batches compared, want at least %d", checked, torchMinChecked)
	}
	t.Logf("%d batches (gradients of %d): largest difference from PyTorch's float64 figures: loss %.1e of 1 + |loss|, a gradient (of norm ≥ 1 %% of the largest) %.1e of its norm, an evaluation output %.1e of 1 + |output|", torchBatches, checked, worstLoss, worstGrad, worstOut)
}

// torchInputs are what torch_grads.py reads: the graphs, the checkpoint,
// the batches (graph indices) and the dropout masks spn draws for them
// (nil without dropout).
type torchInputs struct {
	graphs     []torchGraph
	checkpoint []byte
	batches    [][]int
	masks      [][][]float32
}

// runTorchGrads runs torch_grads.py with py on in and returns its lines:
// one per batch in training mode, then one per batch in evaluation mode.
func runTorchGrads(t *testing.T, py string, in torchInputs) ([]torchBatchOut, []torchEvalOut) {
	t.Helper()
	dir := t.TempDir()
	write := func(name string, v any) string {
		b, ok := v.([]byte)
		if !ok {
			var err error
			if b, err = json.Marshal(v); err != nil {
				t.Fatal(err)
			}
		}
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	args := []string{filepath.Join(torchScripts, "torch_grads.py"),
		write("graphs.json", in.graphs), write("model.json", in.checkpoint), write("batches.json", in.batches)}
	if in.masks != nil {
		args = append(args, "--masks", write("masks.json", in.masks))
	}
	cmd := exec.Command(py, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("torch_grads.py: %v\n%s", err, stderr.Bytes())
	}
	n := len(in.batches)
	var want []torchBatchOut
	var wantEval []torchEvalOut
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<24)
	for no := 1; sc.Scan(); no++ {
		if len(want) < n {
			var b torchBatchOut
			if err := json.Unmarshal(sc.Bytes(), &b); err != nil || b.Batch != len(want) {
				t.Fatalf("torch_grads.py: line %d: want {\"batch\": %d, \"loss\": x, \"grads\": {...}, ...} (%v)", no, len(want), err)
			}
			want = append(want, b)
			continue
		}
		var b torchEvalOut
		if err := json.Unmarshal(sc.Bytes(), &b); err != nil || b.EvalBatch == nil || *b.EvalBatch != len(wantEval) {
			t.Fatalf("torch_grads.py: line %d: want {\"eval_batch\": %d, \"out\": [...], ...} (%v)", no, len(wantEval), err)
		}
		wantEval = append(wantEval, b)
	}
	if len(want) != n || len(wantEval) != n {
		t.Fatalf("torch_grads.py printed %d batches and %d in evaluation mode, want %d of each", len(want), len(wantEval), n)
	}
	return want, wantEval
}

// stepsOf returns a training-mode step of m (its loss; the gradients are
// added to the parameters' G) and its evaluation-mode outputs: m's own
// Step and Predict where it has them, else Forward and Backward with the
// cross-entropy (the baseline, a classifier).
func stepsOf(m models.Model) (step func(*data.Batch) (float64, error), predict func(*data.Batch) ([]float32, error)) {
	if g, ok := m.(gorgonia); ok {
		step = func(b *data.Batch) (float64, error) {
			loss, _, err := g.Step(b)
			return loss, err
		}
		return step, g.Predict
	}
	step = func(b *data.Batch) (float64, error) {
		out, err := m.Forward(b, true)
		if err != nil {
			return 0, err
		}
		loss, grad, _ := modeltest.CE(out, b.Y, m.Config().Out)
		m.Backward(grad)
		return loss, nil
	}
	return step, func(b *data.Batch) ([]float32, error) { return m.Forward(b, false) }
}

// preNormBias reports whether the parameter called name is the bias of a
// linear map that feeds a batch norm (an MLP's layerL.lin1.b or
// layerL.lin2.b, R-SPN's stacked layerL.mlps.lin1.b and lin2.b: every MLP
// is Linear, BatchNorm, ReLU, Linear, BatchNorm, ReLU; not linear GCN's
// layerL.lin.b), and returns the map's name.
func preNormBias(name string) (string, bool) {
	base, ok := strings.CutSuffix(name, ".b")
	return base, ok && strings.HasPrefix(base, "layer") && (strings.HasSuffix(base, ".lin1") || strings.HasSuffix(base, ".lin2"))
}

// to64 returns v as float64 values.
func to64(v []float32) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(x)
	}
	return out
}
