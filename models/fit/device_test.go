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
// weight decay) and GIN for three epochs on the emulated device (steps,
// Adam and evaluation) with a CPU host model for the checkpoint, and the
// same models on the CPU: every epoch's record agrees within
// deviceFitTol, a second device run gives the same records and
// checkpoint bytes, the model is copied to the host once per newly
// selected epoch and never otherwise, and the checkpoint holds the
// selected epoch's parameters and batch-norm statistics: reloaded on the
// device it scores the record's validation loss and accuracy bit for
// bit, and on the CPU within 1e-5·(1 + |value|).
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
				dev := &syncCounter{Model: build()}
				if err := dev.UseDevice(e); err != nil {
					t.Fatal(err)
				}
				do := o
				do.Host = build()
				r, err := Train(context.Background(), dev, ds, hops.Prefix(m.K), sets(ds), do)
				if err != nil {
					t.Fatal(err)
				}
				// One copy to the host per newly selected epoch.
				selected := 0
				for i := range r.Epochs {
					best := -1
					for j := 0; j < i; j++ {
						if best < 0 || better(SelectBestValLoss, "accuracy", r.Epochs[j], r.Epochs[best]) {
							best = j
						}
					}
					if best < 0 || better(SelectBestValLoss, "accuracy", r.Epochs[i], r.Epochs[best]) {
						selected++
					}
				}
				if dev.syncs != selected {
					t.Errorf("the model was copied to the host %d times for %d newly selected epochs", dev.syncs, selected)
				}
				t.Logf("%d of %d epochs selected in turn", selected, len(r.Epochs))
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
				// α and ε, copied from the device each epoch.
				if len(d.Alpha) != len(c.Alpha) || len(d.Eps) != len(c.Eps) || len(c.Eps) != m.Layers {
					t.Fatalf("epoch %d: hop weights of %d and %d layers on the device, %d and %d on the CPU", c.Epoch, len(d.Alpha), len(d.Eps), len(c.Alpha), len(c.Eps))
				}
				for l := range c.Eps {
					hw := [][2]float64{{d.Eps[l], c.Eps[l]}}
					for j := range c.Alpha[l] {
						hw = append(hw, [2]float64{d.Alpha[l][j], c.Alpha[l][j]})
					}
					for _, v := range hw {
						if math.Abs(v[0]-v[1]) > deviceFitTol*(1+math.Abs(v[1])) {
							t.Errorf("epoch %d layer %d: hop weights α %v ε %v on the device, α %v ε %v on the CPU", c.Epoch, l+1, d.Alpha[l], d.Eps[l], c.Alpha[l], c.Eps[l])
						}
					}
					if init := float64(float32(m.Eps)); d.Eps[l] == init && c.Eps[l] != init {
						t.Errorf("epoch %d layer %d: ε on the device is its initial value", c.Epoch, l+1)
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
			// the device and on the CPU and score the validation set.
			reg := models.NewRegistry(spn.Kind{}, spn.Kind{GIN: true})
			best := r1.Epochs[r1.Best]
			for _, onDev := range []bool{true, false} {
				ck, err := models.ReadCheckpoint(bytes.NewReader(r1.Checkpoint), reg, kernels.CPU{Threads: 1})
				if err != nil {
					t.Fatal(err)
				}
				tol := 1e-5
				if onDev {
					if err := ck.(*spn.Model).UseDevice(e); err != nil {
						t.Fatal(err)
					}
					tol = 0
				}
				vl, vs, err := Evaluate(ck, ds, hops.Prefix(m.K), ds.Splits[0].Val, "accuracy", tr.BatchSize)
				if err != nil {
					t.Fatal(err)
				}
				if math.Abs(vl-best.ValLoss) > tol*(1+math.Abs(best.ValLoss)) || vs != best.ValScore {
					t.Errorf("the checkpoint (on the device: %v) scores validation loss %v and accuracy %v, the selected epoch %v and %v", onDev, vl, vs, best.ValLoss, best.ValScore)
				}
			}
			t.Logf("%s: largest difference from the CPU %.3g (relative to 1 + |value|)", m.Kind, worst)
		})
	}
}

// syncCounter is a device model that counts the copies of the whole
// model to the host (SyncHost).
type syncCounter struct {
	*spn.Model
	syncs int
}

func (s *syncCounter) SyncHost() error {
	s.syncs++
	return s.Model.SyncHost()
}
