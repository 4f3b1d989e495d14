package fit

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"reflect"
	"testing"

	"github.com/spn-project/spn/models"
	"github.com/spn-project/spn/models/cuda/engine"
	"github.com/spn-project/spn/models/cuda/engine/enginetest"
	"github.com/spn-project/spn/models/kernels"
	"github.com/spn-project/spn/models/spn"
	"github.com/spn-project/spn/schema/modelspec"
)

// deviceFitTol bounds |device − CPU| of every epoch's losses and scores,
// relative to 1 + |CPU value|. The steps agree within models/spn's
// deviceTol, and the differences grow over the epochs; for one, the biases that feed a batch norm have an exact gradient
// of 0 and hold rounding noise that Adam scales up to steps of the order
// of the learning rate, differently on each device; in training mode the
// batch norm cancels them, in evaluation mode the running mean trails
// them. With sum pooling, whose outputs are large, the validation and
// test losses of three epochs differ by up to 0.4% on the emulated
// device (mean pooling: 2e-5).
const deviceFitTol = 1e-2

// TestTrainOnDevice trains SPN (k = 2, dropout, a step schedule and
// weight decay) and GIN for three epochs on the emulated device with a
// CPU host model, and the same models on the CPU: every epoch's record
// agrees within deviceFitTol, a second device run gives the same records
// and checkpoint bytes, and the checkpoint is the host model's (the
// device's parameters and batch-norm statistics after the selected
// epoch).
func TestTrainOnDevice(t *testing.T) { trainOnDevice(t, enginetest.Emulated(t)) }

// TestGPUTrainOnDevice is TestTrainOnDevice on GPU 0 (it skips without one).
func TestGPUTrainOnDevice(t *testing.T) { trainOnDevice(t, enginetest.GPU(t)) }

func trainOnDevice(t *testing.T, e *engine.Engine) {
	ds, hops := layered(t, 60, 2)
	tr := modelspec.Training{Optimizer: "adam", LR: 0.01, WeightDecay: 1e-4, StepEvery: 2, StepGamma: 0.5,
		BatchSize: 16, Epochs: 3, Selection: SelectBestValLoss}
	for _, m := range []modelspec.Model{
		{Kind: "spn", K: 2, Layers: 2, Hidden: 8, Pool: "sum", Dropout: 0.5},
		{Kind: "spn", K: 2, Layers: 2, Hidden: 8, Pool: "sum"},
		{Kind: "spn", K: 2, Layers: 2, Hidden: 8, Pool: "mean", Dropout: 0.5},
		{Kind: "gin", K: 1, Layers: 2, Hidden: 8, Pool: "sum", Eps: 0.1, LearnEps: true},
		{Kind: "gin", K: 1, Layers: 2, Hidden: 8, Pool: "mean", Eps: 0.1, LearnEps: true},
	} {
		t.Run(fmt.Sprintf("%s pool %s dropout %v", m.Kind, m.Pool, m.Dropout), func(t *testing.T) {
			cfg, err := models.ConfigFor(m, ds)
			if err != nil {
				t.Fatal(err)
			}
			build := func() *spn.Model {
				mod, err := spn.New(cfg, 3, kernels.CPU{Threads: 1})
				if err != nil {
					t.Fatal(err)
				}
				return mod
			}
			o := Options{Training: tr, Metric: "accuracy", Seed: 3}
			cpu, err := Train(context.Background(), build(), ds, hops.Prefix(m.K), sets(ds), o)
			if err != nil {
				t.Fatal(err)
			}
			onDevice := func() *Result {
				dev := build()
				if err := dev.UseDevice(e); err != nil {
					t.Fatal(err)
				}
				do := o
				do.Host = build()
				r, err := Train(context.Background(), dev, ds, hops.Prefix(m.K), sets(ds), do)
				if err != nil {
					t.Fatal(err)
				}
				return r
			}
			r1, r2 := onDevice(), onDevice()
			if len(r1.Epochs) != len(cpu.Epochs) {
				t.Fatalf("%d epochs on the device, %d on the CPU", len(r1.Epochs), len(cpu.Epochs))
			}
			worst := 0.0
			for i, c := range cpu.Epochs {
				d := r1.Epochs[i]
				if d.LR != c.LR {
					t.Errorf("epoch %d: learning rate %v on the device, %v on the CPU", c.Epoch, d.LR, c.LR)
				}
				for _, v := range [][3]any{
					{"train loss", d.TrainLoss, c.TrainLoss}, {"validation loss", d.ValLoss, c.ValLoss},
					{"test loss", d.TestLoss, c.TestLoss}, {"validation accuracy", d.ValScore, c.ValScore},
					{"test accuracy", d.TestScore, c.TestScore},
				} {
					dv, cv := v[1].(float64), v[2].(float64)
					diff := math.Abs(dv-cv) / (1 + math.Abs(cv))
					worst = math.Max(worst, diff)
					if diff > deviceFitTol {
						t.Errorf("epoch %d: %s %v on the device, %v on the CPU", c.Epoch, v[0], dv, cv)
					}
				}
				if !reflect.DeepEqual(r2.Epochs[i], d) {
					t.Errorf("epoch %d: a second device run gives %+v, the first %+v", c.Epoch, r2.Epochs[i], d)
				}
			}
			if r1.Best != cpu.Best {
				t.Errorf("selected epoch %d on the device, %d on the CPU", r1.Epochs[r1.Best].Epoch, cpu.Epochs[cpu.Best].Epoch)
			}
			if !bytes.Equal(r1.Checkpoint, r2.Checkpoint) {
				t.Error("two device runs give different checkpoints")
			}
			// The checkpoint evaluates as the record says: reload it on
			// the CPU and score the validation set.
			reg := models.NewRegistry(spn.Kind{}, spn.Kind{GIN: true})
			ck, err := models.ReadCheckpoint(bytes.NewReader(r1.Checkpoint), reg, kernels.CPU{Threads: 1})
			if err != nil {
				t.Fatal(err)
			}
			vl, vs, err := Evaluate(ck, ds, hops.Prefix(m.K), ds.Splits[0].Val, "accuracy", tr.BatchSize)
			if err != nil {
				t.Fatal(err)
			}
			best := r1.Epochs[r1.Best]
			if vl != best.ValLoss || vs != best.ValScore {
				t.Errorf("the checkpoint scores validation loss %v and accuracy %v, the selected epoch %v and %v", vl, vs, best.ValLoss, best.ValScore)
			}
			t.Logf("%s: largest difference from the CPU %.3g (relative to 1 + |value|)", m.Kind, worst)
		})
	}
}
