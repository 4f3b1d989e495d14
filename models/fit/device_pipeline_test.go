package fit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/internal/testkit/cudatest"
	"github.com/spn-project/spn/models"
	"github.com/spn-project/spn/models/cuda"
	"github.com/spn-project/spn/models/cuda/engine"
	"github.com/spn-project/spn/models/spn"
	"github.com/spn-project/spn/schema/modelspec"
)

// stepLog is a device model on the rt path that records what Train asks
// of it: each step's outputs as the training loop receives them, which
// way they were taken (Step, or StepAsync and its resolve), and the
// synchronous copies each makes after the first step (ctx's Calls: a
// pipelined step and its resolve make none).
type stepLog struct {
	deviceTrainable
	models.HopWeights
	st    models.Stepper
	as    models.AsyncStepper
	ctx   *cuda.Context
	outs  [][]float32
	steps int // Step calls
	async int // StepAsync calls
	syncs int // synchronous copies in StepAsync and resolve
	// cancelAt, when set, is called with the number of steps taken
	// (Step and StepAsync together) as each step starts.
	cancelAt func(steps int)
}

// started counts a step and calls cancelAt.
func (l *stepLog) started() {
	if l.cancelAt != nil {
		l.cancelAt(l.steps + l.async)
	}
}

func (l *stepLog) Step(b *data.Batch) (float64, []float32, error) {
	l.steps++
	l.started()
	loss, out, err := l.st.Step(b)
	l.outs = append(l.outs, out)
	return loss, out, err
}

func (l *stepLog) StepAsync(b *data.Batch) (func() (float64, []float32, error), error) {
	l.async++
	l.started()
	before := l.ctx.Calls()
	resolve, err := l.as.StepAsync(b)
	// The first step moves the batch norms' running statistics to the
	// device.
	if c := l.ctx.Calls().Sub(before); c.ToDevice+c.ToHost > 0 && l.async > 1 {
		l.syncs++
	}
	if err != nil {
		return nil, err
	}
	return func() (float64, []float32, error) {
		before := l.ctx.Calls()
		loss, out, err := resolve()
		if c := l.ctx.Calls().Sub(before); c.ToDevice+c.ToHost > 0 {
			l.syncs++
		}
		l.outs = append(l.outs, out)
		return loss, out, err
	}, nil
}

// emulatedEngine opens an engine on a fresh emulated device (its library
// built for the test, so that its counts of live objects are the
// test's), returning the opener for those counts and SetReverse.
func emulatedEngine(t *testing.T) (*engine.Opened, cudatest.LibOpener) {
	t.Helper()
	lib := cudatest.Emulator(t)
	r, err := cuda.Probe(lib)
	if err != nil {
		t.Fatal(err)
	}
	o, err := engine.Open(r, 0, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return o, lib
}

// TestTrainPipelined trains SPN (k = 2, dropout, a step schedule, weight
// decay) and GIN for three epochs on the emulated device, pipelined (the
// default: each step and its Adam step enqueued before the step before
// is resolved) and with Options.SyncSteps (Step, the host waiting for
// every step), also with the launches' threads of the pipelined run run
// last to first: the records, the checkpoint bytes and every step's
// outputs, in order, are the same bits; the pipelined run takes every
// step through StepAsync, none of its steps or resolves makes a
// synchronous copy, and the SyncSteps run takes none through StepAsync
// and enqueues no work on the legacy stream (the Context's own);
// after the engine's Close no device memory, page-locked memory, event
// or pending copy is left.
func TestTrainPipelined(t *testing.T) {
	ds, hops := layered(t, 70, 2)
	tr := modelspec.Training{Optimizer: "adam", LR: 0.01, WeightDecay: 1e-4, StepEvery: 2, StepGamma: 0.5,
		BatchSize: 16, Epochs: 3, Selection: SelectBestValLoss}
	reg := models.NewRegistry(spn.Kind{}, spn.Kind{GIN: true})
	s := sets(ds)
	if len(s.Train)%tr.BatchSize == 0 {
		t.Fatalf("%d training graphs: want a last batch smaller than the others", len(s.Train))
	}
	for _, m := range []modelspec.Model{
		{Kind: "spn", K: 2, Layers: 2, Hidden: 8, Pool: "sum", Dropout: 0.5},
		{Kind: "gin", K: 1, Layers: 2, Hidden: 8, Pool: "mean", Eps: 0.1, LearnEps: true},
	} {
		for _, reverse := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s reverse %v", m.Kind, reverse), func(t *testing.T) {
				o, lib := emulatedEngine(t)
				_, build := newModels(t, reg, m, ds, 3)
				prefix := hops.Prefix(m.K)
				run := func(syncSteps bool) (*Result, *stepLog) {
					mod := build()
					l := &stepLog{deviceTrainable: mod.(deviceTrainable), st: mod.(models.Stepper), as: mod.(models.AsyncStepper), ctx: o.Context()}
					l.HopWeights, _ = mod.(models.HopWeights)
					if err := l.UseDevice(o.Engine); err != nil {
						t.Fatal(err)
					}
					var trained models.Model = l
					if l.HopWeights == nil {
						trained = struct {
							deviceTrainable
							models.Stepper
							models.AsyncStepper
						}{l, l, l}
					}
					r, err := Train(context.Background(), trained, ds, prefix, s, Options{Training: tr, Metric: "accuracy", Seed: 3, Host: build(), SyncSteps: syncSteps})
					if err != nil {
						t.Fatal(err)
					}
					return r, l
				}
				legacy := lib.Live(t, 8)
				want, wl := run(true)
				if n := lib.Live(t, 8) - legacy; n != 0 {
					t.Errorf("%d launches, products, asynchronous copies or event records of the SyncSteps run on the legacy stream, want none: the engine's work goes on its Context's stream", n)
				}
				if reverse {
					lib.SetReverse(t, true)
					defer lib.SetReverse(t, false)
				}
				got, gl := run(false)
				steps := tr.Epochs * ((len(s.Train) + tr.BatchSize - 1) / tr.BatchSize)
				if wl.steps != steps || wl.async != 0 || gl.async != steps || gl.steps != 0 {
					t.Errorf("SyncSteps: %d steps, %d asynchronous; pipelined: %d and %d; want %d each way", wl.steps, wl.async, gl.steps, gl.async, steps)
				}
				if gl.syncs != 0 {
					t.Errorf("%d pipelined steps or resolves made a synchronous copy", gl.syncs)
				}
				if !reflect.DeepEqual(got.Epochs, want.Epochs) || got.Best != want.Best {
					t.Errorf("pipelined records %+v (best %d), with SyncSteps %+v (best %d)", got.Epochs, got.Best, want.Epochs, want.Best)
				}
				if !bytes.Equal(got.Checkpoint, want.Checkpoint) {
					t.Error("the pipelined run's checkpoint differs")
				}
				if len(gl.outs) != len(wl.outs) {
					t.Fatalf("%d outputs pipelined, %d with SyncSteps", len(gl.outs), len(wl.outs))
				}
				for i := range wl.outs {
					if !slices.Equal(gl.outs[i], wl.outs[i]) {
						t.Fatalf("step %d: the pipelined outputs differ", i)
					}
				}
				if err := o.Close(); err != nil {
					t.Fatal(err)
				}
				lib.CheckReleased(t)
			})
		}
	}
}

// TestDivergencePipelined trains SPN on the emulated device at a
// learning rate that makes it diverge after its first step, pipelined
// and with Options.SyncSteps: both fail with ErrDiverged and the same
// message, which names the batch whose loss diverged (not the first,
// and not the one enqueued after it when it was resolved).
func TestDivergencePipelined(t *testing.T) {
	ds, hops := layered(t, 60, 2)
	tr := modelspec.Training{Optimizer: "adam", LR: 1e30, BatchSize: 8, Epochs: 2, Selection: SelectBestValLoss}
	m := modelspec.Model{Kind: "spn", K: 2, Layers: 2, Hidden: 8, Pool: "sum"}
	reg := models.NewRegistry(spn.Kind{})
	_, build := newModels(t, reg, m, ds, 1)
	o, _ := emulatedEngine(t)
	t.Cleanup(func() { o.Close() })
	var msgs []string
	for _, syncSteps := range []bool{true, false} {
		mod := build()
		if err := mod.(deviceTrainable).UseDevice(o.Engine); err != nil {
			t.Fatal(err)
		}
		_, err := Train(context.Background(), mod, ds, hops.Prefix(m.K), sets(ds), Options{Training: tr, Metric: "accuracy", Seed: 1, Host: build(), SyncSteps: syncSteps})
		if !errors.Is(err, ErrDiverged) {
			t.Fatalf("SyncSteps %v: %v, want ErrDiverged", syncSteps, err)
		}
		msgs = append(msgs, err.Error())
	}
	if msgs[0] != msgs[1] {
		t.Errorf("pipelined: %q\nwith SyncSteps: %q", msgs[1], msgs[0])
	}
	var epoch, batch int
	var loss, lr float64
	if _, err := fmt.Sscanf(msgs[0][strings.Index(msgs[0], "loss "):], "loss %g at epoch %d batch %d (lr %g)", &loss, &epoch, &batch, &lr); err != nil || epoch == 1 && batch == 0 {
		t.Errorf("%q: want a divergence after the first batch (%v)", msgs[0], err)
	}
	if !math.IsNaN(loss) && !math.IsInf(loss, 0) && math.Abs(loss) <= DivergenceLimit {
		t.Errorf("%q: a loss that did not diverge", msgs[0])
	}
	t.Log(msgs[0])
}

// TestTrainCancelled cancels Train's context during the third step of
// its first epoch, on the CPU, on the emulated device with the host
// waiting for every step (Options.SyncSteps) and pipelined: Train takes
// no fourth step and returns the context's error naming the batch
// (epoch 1 batch 3), not at the end of the epoch; the pipelined run
// waits for its step in flight, and after the engine's Close nothing is
// left on the device.
func TestTrainCancelled(t *testing.T) {
	ds, hops := layered(t, 70, 2)
	tr := modelspec.Training{Optimizer: "adam", LR: 0.01, BatchSize: 8, Epochs: 2, Selection: SelectBestValLoss}
	m := modelspec.Model{Kind: "spn", K: 2, Layers: 2, Hidden: 8, Pool: "sum"}
	s := sets(ds)
	if len(s.Train) <= 4*tr.BatchSize {
		t.Fatalf("%d training graphs: want more than four batches", len(s.Train))
	}
	_, build := newModels(t, models.NewRegistry(spn.Kind{}), m, ds, 3)
	for _, c := range []struct {
		name            string
		device, syncing bool
	}{{"cpu", false, true}, {"device, SyncSteps", true, true}, {"device, pipelined", true, false}} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			cancelAt := func(steps int) {
				if steps == 3 {
					cancel()
				}
			}
			mod := build()
			var trained models.Model
			var o *engine.Opened
			var lib cudatest.LibOpener
			var l *stepLog
			if c.device {
				o, lib = emulatedEngine(t)
				l = &stepLog{deviceTrainable: mod.(deviceTrainable), st: mod.(models.Stepper), as: mod.(models.AsyncStepper), ctx: o.Context(), cancelAt: cancelAt}
				l.HopWeights = mod.(models.HopWeights)
				if err := l.UseDevice(o.Engine); err != nil {
					t.Fatal(err)
				}
				trained = l
			} else {
				l = &stepLog{st: mod.(models.Stepper), cancelAt: cancelAt}
				trained = struct {
					models.Model
					models.Stepper
				}{mod, l}
			}
			opts := Options{Training: tr, Metric: "accuracy", Seed: 3, SyncSteps: c.syncing}
			if c.device {
				opts.Host = build()
			}
			_, err := Train(ctx, trained, ds, hops.Prefix(m.K), s, opts)
			if !errors.Is(err, context.Canceled) || !strings.HasPrefix(err.Error(), "epoch 1 batch 3: ") {
				t.Errorf("Train: %v, want epoch 1 batch 3: context canceled", err)
			}
			if n := l.steps + l.async; n != 3 {
				t.Errorf("%d steps taken, want 3", n)
			}
			if c.device {
				if err := o.Close(); err != nil {
					t.Fatal(err)
				}
				lib.CheckReleased(t)
			}
		})
	}
}
