package predict

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/spn-project/spn/internal/testkit/synth"
	"github.com/spn-project/spn/models"
	"github.com/spn-project/spn/models/cuda/engine"
	"github.com/spn-project/spn/models/fit"
	"github.com/spn-project/spn/models/internal/testkit/devicetest"
	"github.com/spn-project/spn/models/internal/testkit/enginetest"
	"github.com/spn-project/spn/models/kernels"
	"github.com/spn-project/spn/models/kinds"
	"github.com/spn-project/spn/schema/modelspec"
)

// deviceTol bounds the difference of a class probability predicted on
// the device and on the CPU: the device's products (cuBLAS) and its exp
// round differently from the CPU's (models/spn's deviceTol for the
// outputs). On a GPU it is gpuTol: cuBLAS blocks its products and fuses
// their multiply-adds, so each product rounds differently from the CPU's
// by a few units in the last place, and the layers add them up.
const (
	deviceTol = 1e-5
	gpuTol    = 1e-4
)

// TestPredictOnDevice trains SPN and GIN (sum and mean pooling, dropout)
// on the CPU, reloads the checkpoint as a model on the emulated device
// and predicts the test graphs (new graphs: hop sets computed on the fly)
// in batches larger than training's: every class probability agrees with
// the CPU model's within deviceTol and every class is the same (but for
// a graph whose two likeliest classes on the CPU are within twice the
// tolerance of each other: the device may break that near tie the other
// way). A failure names the largest difference and where it is.
func TestPredictOnDevice(t *testing.T) { predictOnDevice(t, enginetest.Emulated(t), deviceTol) }

// TestGPUPredictOnDevice is TestPredictOnDevice on GPU 0 within gpuTol
// (it skips without one).
func TestGPUPredictOnDevice(t *testing.T) { predictOnDevice(t, enginetest.GPU(t), gpuTol) }

func predictOnDevice(t *testing.T, e *engine.Engine, tol float64) {
	ds, hops, err := synth.Layered(5, 300, 2, [2]int{3, 6}, [2]int{2, 4}, 4)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []modelspec.Model{
		{Kind: "spn", K: 4, Layers: 3, Hidden: 16, Pool: "sum", Dropout: 0.5},
		{Kind: "spn", K: 2, Layers: 2, Hidden: 16, Pool: "mean", Dropout: 0.5},
		{Kind: "gin", K: 1, Layers: 3, Hidden: 16, Pool: "sum", Eps: 0.1, LearnEps: true},
	} {
		t.Run(fmt.Sprintf("%s k %d pool %s", m.Kind, m.K, m.Pool), func(t *testing.T) {
			cfg, err := models.ConfigFor(m, ds)
			if err != nil {
				t.Fatal(err)
			}
			be := kernels.CPU{Threads: 1}
			cpu, err := kinds.All().New(cfg, 3, be)
			if err != nil {
				t.Fatal(err)
			}
			s := ds.Splits[0]
			if _, err := fit.Train(context.Background(), cpu, ds, hops.Prefix(m.K), fit.Sets{Train: s.Train, Val: s.Val},
				fit.Options{Training: modelspec.Training{LR: 0.01, BatchSize: 16, Epochs: 3}, Metric: "accuracy"}); err != nil {
				t.Fatal(err)
			}
			var ck bytes.Buffer
			if err := models.WriteCheckpoint(&ck, cpu); err != nil {
				t.Fatal(err)
			}
			dev, err := models.ReadCheckpoint(&ck, kinds.All(), be)
			if err != nil {
				t.Fatal(err)
			}
			if err := dev.(interface{ UseDevice(*engine.Engine) error }).UseDevice(e); err != nil {
				t.Fatal(err)
			}
			var graphs = ds.Graphs[:0:0]
			for _, gi := range s.Test {
				graphs = append(graphs, ds.Graphs[gi])
			}
			cp, err := Graphs(context.Background(), cpu, graphs, 2, 0)
			if err != nil {
				t.Fatal(err)
			}
			dp, err := Graphs(context.Background(), dev, graphs, 2, 0)
			if err != nil {
				t.Fatalf("predicting on the device: %v", err)
			}
			if len(dp) != len(cp) || len(cp) == 0 {
				t.Fatalf("%d predictions on the device, %d on the CPU", len(dp), len(cp))
			}
			var worst devicetest.Diff // absolute: a probability is at most 1
			over, flips := 0, 0
			for i := range cp {
				for j, p := range cp[i].Probabilities {
					d := math.Abs(dp[i].Probabilities[j] - p)
					if d > tol || math.IsNaN(d) {
						over++
					}
					if worst.At == "" || d > worst.Rel || math.IsNaN(d) {
						worst = devicetest.Diff{Rel: d, At: fmt.Sprintf("graph %d class %d", i, j), Dev: dp[i].Probabilities[j], CPU: p}
					}
				}
				if *dp[i].Class != *cp[i].Class {
					if margin(cp[i].Probabilities) > 2*tol {
						flips++
					}
					t.Logf("graph %d: class %d on the device, %d on the CPU (probabilities %v, %v)", i, *dp[i].Class, *cp[i].Class, dp[i].Probabilities, cp[i].Probabilities)
				}
			}
			t.Logf("%d graphs: largest difference of a class probability from the CPU's %v", len(cp), worst)
			if over > 0 || flips > 0 {
				t.Errorf("%d class probabilities differ from the CPU's by more than %g (the largest %v), %d graphs' classes differ", over, tol, worst, flips)
			}
		})
	}
}

// margin returns the difference of the two largest of ps (+Inf for fewer
// than two).
func margin(ps []float64) float64 {
	a, b := math.Inf(-1), math.Inf(-1)
	for _, p := range ps {
		if p > a {
			a, b = p, a
		} else if p > b {
			b = p
		}
	}
	return a - b
}
