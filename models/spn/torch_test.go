package spn

import (
	"bufio"
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/data/jsonl"
	"github.com/spn-project/spn/models"
	"github.com/spn-project/spn/models/cuda/engine"
	"github.com/spn-project/spn/models/cuda/engine/enginetest"
	"github.com/spn-project/spn/models/kernels"
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

// Tolerances of TestSameGradientsAsPyTorch. The reference is PyTorch's
// float64 figures; spn computes in float32, whose rounding a batch's
// figures suffer more or less (a batch norm divides by a feature's
// spread over the batch: on one of the NCI1 batches PyTorch's own
// float32 gradients of the first layer are 0.5 % from its float64
// ones). PyTorch's float32 error on the batch, e32, is the yardstick:
// spn's loss must be within torchTol·(1 + |loss|) + torchErrFactor·e32
// of the reference, and each parameter's gradient within
// torchTol·‖reference‖ + 1e-6·(the largest gradient norm) +
// torchErrFactor·e32 (Euclidean norms). The biases of the linear maps
// that feed a batch norm have gradient zero in exact arithmetic (the
// norm subtracts the mean): spn's must be rounding noise, below
// torchNoiseTol·‖its map's weight gradient‖.
const (
	torchTol       = 1e-5
	torchErrFactor = 4
	torchNoiseTol  = 1e-3
)

// TestSameGradientsAsPyTorch computes the loss and every parameter's
// gradient of spn's SPN (k = 3, 2 layers, hidden 16, sum pooling, no
// dropout) and of GIN on 20 batches of 16 NCI1 graphs, and PyTorch's
// for the SPN of scripts/bench/torch_spn.py (the model the speed
// comparison times), with the same parameters on the same batches
// (scripts/bench/torch_grads.py). The two share no code: PyTorch's
// BatchNorm1d, index_add_, softmax and cross-entropy, and its autograd,
// against spn's ops, its padded batches and its batch norm over the real
// nodes only. The parameters are drawn away from their initial values
// (α logits, ε, the batch norms' scale and shift), so that a term of the
// update the initial values hide (α_i in another order, ε's sign) shows.
//
// It compares gradients at fixed parameters, not training trajectories:
// Adam's first step moves every parameter by ±lr whatever the size of
// its gradient, so a component that cancels to rounding noise in both
// (one of GIN's label embeddings on these batches) moves two equally
// right implementations apart by 2·lr, and training amplifies that.
func TestSameGradientsAsPyTorch(t *testing.T) { sameGradientsAsPyTorch(t, nil) }

// TestSameGradientsAsPyTorchOnDevice is TestSameGradientsAsPyTorch with
// spn's model on the emulated device.
func TestSameGradientsAsPyTorchOnDevice(t *testing.T) {
	sameGradientsAsPyTorch(t, enginetest.Emulated(t))
}

// TestGPUSameGradientsAsPyTorch is TestSameGradientsAsPyTorch with spn's
// model on GPU 0 (it skips without one).
func TestGPUSameGradientsAsPyTorch(t *testing.T) {
	sameGradientsAsPyTorch(t, enginetest.GPU(t))
}

// sameGradientsAsPyTorch runs TestSameGradientsAsPyTorch with spn's model
// on the CPU (e nil) or on e's device.
func sameGradientsAsPyTorch(t *testing.T, e *engine.Engine) {
	py := pythonWithTorch(t)
	ds, hops := tuDataset(t, "NCI1.zip")
	for _, c := range []struct {
		kind string
		k    int
	}{{"spn", 3}, {"gin", 1}} {
		t.Run(c.kind, func(t *testing.T) { gradientsAsPyTorch(t, e, py, ds, hops, c.kind, c.k) })
	}
}

// torchBatch is one line of torch_grads.py's output.
type torchBatch struct {
	Batch     int                  `json:"batch"`
	Loss      float64              `json:"loss"`
	LossErr32 float64              `json:"loss_err32"`
	Grads     map[string][]float64 `json:"grads"`
	GradErr32 map[string]float64   `json:"grad_err32"`
}

// gradientsAsPyTorch is sameGradientsAsPyTorch for one model kind with k
// hops.
func gradientsAsPyTorch(t *testing.T, e *engine.Engine, py string, ds *data.Dataset, hops *data.Hops, kind string, k int) {
	const graphs, size, nbatch = 320, 16, 20
	cfg, err := models.ConfigFor(modelspec.Model{Kind: kind, K: k, Layers: 2, Hidden: 16, Pool: models.PoolSum, LearnEps: true}, ds)
	if err != nil {
		t.Fatal(err)
	}
	m, err := New(cfg, 1, kernels.CPU{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
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
		}
	}
	dir := t.TempDir()
	var ck bytes.Buffer
	if err := models.WriteCheckpoint(&ck, m); err != nil {
		t.Fatal(err)
	}
	if e != nil {
		if err := m.UseDevice(e); err != nil {
			t.Fatal(err)
		}
	}
	sub := &data.Dataset{Name: ds.Name, Graphs: ds.Graphs[:graphs], NumLabels: ds.NumLabels, NumClasses: ds.NumClasses}
	var lines bytes.Buffer
	if err := jsonl.Write(&lines, sub); err != nil {
		t.Fatal(err)
	}
	// NCI1's file lists its classes one after the other: shuffled
	// batches hold both.
	order := rand.New(rand.NewPCG(1, 2)).Perm(graphs)
	batches := make([][]int, nbatch)
	for i := range batches {
		batches[i] = order[i*size : (i+1)*size]
	}
	idx, err := json.Marshal(batches)
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{"graphs.jsonl": lines.Bytes(), "model.json": ck.Bytes(), "batches.json": idx} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	cmd := exec.Command(py, filepath.Join("..", "..", "scripts", "bench", "torch_grads.py"),
		filepath.Join(dir, "graphs.jsonl"), filepath.Join(dir, "model.json"), filepath.Join(dir, "batches.json"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("torch_grads.py: %v\n%s", err, stderr.Bytes())
	}
	var want []torchBatch
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var b torchBatch
		if err := json.Unmarshal(sc.Bytes(), &b); err != nil || b.Batch != len(want) {
			t.Fatalf("torch_grads.py: line %d: want {\"batch\": %d, \"loss\": x, \"grads\": {...}} (%v)", len(want)+1, len(want), err)
		}
		want = append(want, b)
	}
	if len(want) != nbatch {
		t.Fatalf("torch_grads.py printed %d batches, want %d", len(want), nbatch)
	}

	var worstLoss, worstGrad float64
	for i, gs := range batches {
		bt, err := data.NewBatch(ds, hops, gs, k)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range m.Params() {
			p.ZeroGrad()
		}
		loss, _, err := m.Step(bt)
		if err != nil {
			t.Fatal(err)
		}
		w := want[i]
		d := math.Abs(loss - w.Loss)
		worstLoss = max(worstLoss, d/(1+math.Abs(w.Loss)))
		if !(d <= torchTol*(1+math.Abs(w.Loss))+torchErrFactor*w.LossErr32) {
			t.Errorf("batch %d: spn's loss %.7f, PyTorch's %.7f (float64; its float32 one is %.1e from it)", i, loss, w.Loss, w.LossErr32)
		}
		scale := 0.0
		for _, g := range w.Grads {
			scale = max(scale, norm(g, nil))
		}
		for _, p := range m.Params() {
			g, ok := w.Grads[p.Name]
			if !ok || len(g) != len(p.G) {
				t.Fatalf("batch %d: PyTorch has no gradient of %s %v", i, p.Name, p.Shape)
			}
			if base, ok := preNormBias(p.Name); ok {
				if b, bound := norm32(p.G), torchNoiseTol*norm(w.Grads[base+".w"], nil); !(b <= bound) {
					t.Errorf("batch %d: %s, before a batch norm: gradient norm %.3g, want rounding noise below %.3g", i, p.Name, b, bound)
				}
				continue
			}
			diff, ref, e32 := norm(g, p.G), norm(g, nil), w.GradErr32[p.Name]
			worstGrad = max(worstGrad, diff/max(ref, 1e-6*scale))
			if !(diff <= torchTol*ref+1e-6*scale+torchErrFactor*e32) {
				t.Errorf("batch %d: %s: spn's gradient %.3g from PyTorch's (float64, of norm %.3g; its float32 one is %.3g from it)", i, p.Name, diff, ref, e32)
			}
		}
	}
	t.Logf("%d batches: largest difference from PyTorch's float64 figures: loss %.1e of 1 + |loss|, a gradient %.1e of its norm", nbatch, worstLoss, worstGrad)
}

// preNormBias reports whether the parameter called name is the bias of a
// linear map that feeds a batch norm (layerL.linI.b: the MLP is Linear,
// BatchNorm, ReLU, Linear, BatchNorm, ReLU), and returns the map's name.
func preNormBias(name string) (string, bool) {
	base, ok := strings.CutSuffix(name, ".b")
	return base, ok && strings.HasPrefix(base, "layer") && strings.Contains(base, ".lin")
}

// norm32 returns ‖a‖₂.
func norm32(a []float32) float64 {
	s := 0.0
	for _, v := range a {
		s += float64(v) * float64(v)
	}
	return math.Sqrt(s)
}

// norm returns ‖a − b‖₂, or ‖a‖₂ for nil b.
func norm(a []float64, b []float32) float64 {
	s := 0.0
	for i, v := range a {
		if b != nil {
			v -= float64(b[i])
		}
		s += v * v
	}
	return math.Sqrt(s)
}
