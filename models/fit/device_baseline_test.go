package fit

import (
	"bytes"
	"context"
	"math"
	"reflect"
	"testing"

	"github.com/spn-project/spn/data/mirrortest"
	"github.com/spn-project/spn/data/tu"
	"github.com/spn-project/spn/models"
	"github.com/spn-project/spn/models/baseline"
	"github.com/spn-project/spn/models/cuda/engine"
	"github.com/spn-project/spn/models/cuda/engine/enginetest"
	"github.com/spn-project/spn/models/kernels"
	"github.com/spn-project/spn/schema/modelspec"
)

// baselineFitTol bounds |device − CPU| of every epoch's losses and
// accuracies relative to 1 + |CPU value|. The baseline has no batch norm
// and no dropout; its device steps differ from the CPU's by the order of
// cuBLAS's products only. Largest seen on the emulated device over three
// epochs: 0 (NCI1: the same bits), 1.7e-7 (ENZYMES).
const baselineFitTol = 1e-4

// TestTrainBaselineOnDevice trains the baseline for three epochs (Adam,
// lr 1e-3, batch 32, best validation loss) on samples of the mirror's
// NCI1 (the fingerprint form over node labels) and ENZYMES
// (DeepMultisets over labels and 18 attributes): 240 training, 60
// validation and 60 test graphs of Errica et al.'s first split, evenly
// spaced, on the emulated device (steps, Adam and evaluation) with a CPU
// host model for the checkpoint, and on the CPU. Every epoch's record
// agrees within baselineFitTol, the selected epoch is the same, a second
// device run gives the same records and checkpoint bytes, and the
// checkpoint reloaded on the device scores the selected epoch's
// validation loss and accuracy bit for bit.
func TestTrainBaselineOnDevice(t *testing.T) { trainBaselineOnDevice(t, enginetest.Emulated(t)) }

// TestGPUTrainBaselineOnDevice is TestTrainBaselineOnDevice on GPU 0 (it
// skips without one).
func TestGPUTrainBaselineOnDevice(t *testing.T) { trainBaselineOnDevice(t, enginetest.GPU(t)) }

func trainBaselineOnDevice(t *testing.T, e *engine.Engine) {
	reg := models.NewRegistry(baseline.Kind{})
	tr := modelspec.Training{Optimizer: "adam", LR: 1e-3, BatchSize: 32, Epochs: 3, Selection: SelectBestValLoss}
	for _, c := range []struct {
		name, form string
	}{{"NCI1", baseline.FormFingerprint}, {"ENZYMES", baseline.FormDeepMultisets}} {
		t.Run(c.name, func(t *testing.T) {
			ds, err := tu.Load(mirrortest.TUZip(t, c.name), mirrortest.Splits(t, c.name))
			if err != nil {
				t.Fatal(err)
			}
			s := ds.Splits[0]
			sets := Sets{Train: spaced(s.Train, 240), Val: spaced(s.Val, 60), Test: spaced(s.Test, 60)}
			m := modelspec.Model{Kind: baseline.Name, Hidden: 32}
			cfg, err := models.ConfigFor(m, ds)
			if err != nil {
				t.Fatal(err)
			}
			if err := reg.CheckDevice(cfg, "cuda:0"); err != nil {
				t.Fatal(err)
			}
			if f := baseline.AgnosticForm(cfg); f != c.form {
				t.Fatalf("%s: form %s, want %s", c.name, f, c.form)
			}
			build := func() *baseline.Model {
				mod, err := baseline.New(cfg, 3, kernels.CPU{Threads: 1})
				if err != nil {
					t.Fatal(err)
				}
				return mod
			}
			o := Options{Training: tr, Metric: "accuracy", Seed: 3}
			cpu, err := Train(context.Background(), build(), ds, nil, sets, o)
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
				r, err := Train(context.Background(), dev, ds, nil, sets, do)
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
			for i, cr := range cpu.Epochs {
				d := r1.Epochs[i]
				for _, v := range [][3]any{
					{"train loss", d.TrainLoss, cr.TrainLoss}, {"train accuracy", d.TrainScore, cr.TrainScore},
					{"validation loss", d.ValLoss, cr.ValLoss}, {"test loss", d.TestLoss, cr.TestLoss},
					{"validation accuracy", d.ValScore, cr.ValScore}, {"test accuracy", d.TestScore, cr.TestScore},
				} {
					dv, cv := v[1].(float64), v[2].(float64)
					diff := math.Abs(dv-cv) / (1 + math.Abs(cv))
					worst = math.Max(worst, diff)
					if diff > baselineFitTol {
						t.Errorf("epoch %d: %s %v on the device, %v on the CPU", cr.Epoch, v[0], dv, cv)
					}
				}
				if !reflect.DeepEqual(r2.Epochs[i], d) {
					t.Errorf("epoch %d: a second device run gives %+v, the first %+v", cr.Epoch, r2.Epochs[i], d)
				}
			}
			if first, last := r1.Epochs[0].TrainLoss, r1.Epochs[len(r1.Epochs)-1].TrainLoss; !(last < first) {
				t.Errorf("the training loss on the device did not fall: %v → %v", first, last)
			}
			if r1.Best != cpu.Best {
				t.Errorf("selected epoch %d on the device, %d on the CPU", r1.Epochs[r1.Best].Epoch, cpu.Epochs[cpu.Best].Epoch)
			}
			if !bytes.Equal(r1.Checkpoint, r2.Checkpoint) {
				t.Error("two device runs give different checkpoints")
			}
			ck, err := models.ReadCheckpoint(bytes.NewReader(r1.Checkpoint), reg, kernels.CPU{Threads: 1})
			if err != nil {
				t.Fatal(err)
			}
			if err := ck.(*baseline.Model).UseDevice(e); err != nil {
				t.Fatal(err)
			}
			best := r1.Epochs[r1.Best]
			vl, vs, err := Evaluate(ck, ds, nil, sets.Val, "accuracy", tr.BatchSize)
			if err != nil {
				t.Fatal(err)
			}
			if vl != best.ValLoss || vs != best.ValScore {
				t.Errorf("the checkpoint on the device scores validation loss %v and accuracy %v, the selected epoch %v and %v", vl, vs, best.ValLoss, best.ValScore)
			}
			t.Logf("%s (%s): train loss %.4f → %.4f on the device, selected epoch's validation accuracy %.4f (CPU %.4f); largest difference from the CPU %.3g (relative to 1 + |value|)",
				c.name, c.form, r1.Epochs[0].TrainLoss, r1.Epochs[len(r1.Epochs)-1].TrainLoss, best.ValScore, cpu.Epochs[cpu.Best].ValScore, worst)
		})
	}
}
