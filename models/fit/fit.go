// Package fit trains a models.Model on a dataset split: seeded shuffling,
// mini-batches, Adam with optional L2 and a step or reduce-on-plateau
// learning-rate schedule (schedule.go), per-epoch evaluation of the train, validation and test sets, and model
// selection (best validation loss, best validation metric, early stopping).
//
// A model on a device (models/rt's device path) trains with the same loop
// (Options.Host): its steps, Adam and the evaluation of the validation
// and test sets run on the device, and its parameters and batch-norm
// running statistics are copied to a CPU model of the same configuration
// only for the checkpoint of a newly selected epoch.
package fit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/models"
	"github.com/spn-project/spn/models/curve"
	"github.com/spn-project/spn/models/kernels"
	"github.com/spn-project/spn/models/metric"
	"github.com/spn-project/spn/models/param"
	"github.com/spn-project/spn/models/rt"
	"github.com/spn-project/spn/schema/modelspec"
)

// Selection rules (modelspec.Training.Selection).
const (
	SelectBestValLoss   = "best_val_loss"
	SelectBestValMetric = "best_val_metric"
	SelectEarlyStopping = "early_stopping"
)

// DivergenceLimit is the batch loss above which training counts as diverged.
const DivergenceLimit = 1e8

// ErrDiverged is wrapped by the errors of a training run whose loss or
// weights became non-finite or exploded.
var ErrDiverged = errors.New("training diverged")

// Sets are the graph indices of one training run.
type Sets struct {
	Train, Val, Test []int
}

// Options configure one training run.
type Options struct {
	Training modelspec.Training
	// Metric is a models/metric name, e.g. "accuracy", "mae", "rocauc" or
	// "film_error".
	Metric string
	// Factors are the per-target normalising factors of "film_error"
	// (metric.Outputs.Factors); ignored by the other metrics.
	Factors []float64
	// Seed and Stream seed the PCG generator that shuffles the training set.
	Seed, Stream uint64
	// EvalBatch is the number of graphs per evaluation batch (default the
	// training batch size, so that evaluating needs no larger activations
	// than a training step); evaluation outputs do not depend on it.
	EvalBatch int
	// Log, if not nil, receives one line per epoch.
	Log hclog.Logger
	// Progress, if not nil, is called after every epoch.
	Progress func(done, total int)
	// Host, when not nil, makes Train a device run: the model trained is
	// on a device (a DeviceModel after UseDevice), its steps, a
	// DeviceAdam (the learning-rate schedule and weight decay of
	// param.Adam) and the evaluation of the validation and test sets run
	// there, and Host, a CPU model of the same configuration, receives
	// the device's parameters and batch-norm running statistics when an
	// epoch is selected and gives the checkpoint.
	Host models.Model
	// SyncSteps makes a device run take every training step
	// synchronously (the model's Step): the host waits for every step;
	// for measuring what the pipelining gains. By default a
	// device run of a models.AsyncStepper pipelines its steps
	// (trainEpoch), with the same results, bit for bit.
	SyncSteps bool
}

// DeviceModel is a model whose training steps and evaluation run on a
// device (models/rt's Net after UseDevice).
type DeviceModel interface {
	models.Model
	NewDeviceAdam(params []*param.Param, lr, weightDecay float64) (*rt.DeviceAdam, error)
	// SyncHost copies the parameters and running statistics to the
	// host, SyncHopWeights only ε and the α logits (models.HopWeights).
	SyncHost() error
	SyncHopWeights() error
}

// blocksOf returns the backend of m (models.Backed) as a param.Blocks, one
// ForEachChunk chunk per block, so that the optimiser step and the
// finiteness check run on the model's threads; nil (serially) for a model
// without one. The results are the same either way.
func blocksOf(m models.Model) param.Blocks {
	bm, ok := m.(models.Backed)
	if !ok {
		return nil
	}
	be := bm.Backend()
	return func(n int, f func(b int)) {
		be.ForEachChunk(n*kernels.ChunkRows, func(ch, _, _ int) { f(ch) })
	}
}

// Result is the outcome of a run.
type Result struct {
	// Epochs are the per-epoch records (1-based Epoch).
	Epochs []curve.EpochRecord
	// Best is the index into Epochs of the selected epoch.
	Best int
	// Checkpoint is the model at the selected epoch (models.WriteCheckpoint).
	Checkpoint []byte
	// EpochSeconds is the wall time of every epoch (timing, not
	// deterministic, unlike everything else here).
	EpochSeconds []float64
	// TrainSeconds is the wall time of every epoch's training steps alone
	// (EpochSeconds less the epoch's scoring; timing, not deterministic).
	TrainSeconds []float64
	// GraphsPerSecond is the mean training throughput (timing, not
	// deterministic).
	GraphsPerSecond float64
}

// step runs one training step on b: forward, loss and backward, with the
// gradients added to m's parameters. A models.Stepper (the Gorgonia models,
// whose graph holds the loss) does it in one pass; other models go through
// Forward, Loss and Backward.
func step(m models.Model, cfg models.Config, b *data.Batch) (float64, []float32, error) {
	if s, ok := m.(models.Stepper); ok {
		return s.Step(b)
	}
	out, err := m.Forward(b, true)
	if err != nil {
		return 0, nil, err
	}
	loss, grad, err := Loss(cfg, out, b)
	if err != nil {
		return 0, nil, err
	}
	if !math.IsNaN(loss) && !math.IsInf(loss, 0) {
		m.Backward(grad)
	}
	return loss, out, nil
}

// Train trains m on ds with the hop sets hops (nil if m.Hops() == 0): per
// epoch, one pass of Adam steps over the shuffled training set
// (trainEpoch), then the epoch's scores (recordEpoch) and the selection
// of the best epoch so far, whose checkpoint the Result keeps.
func Train(ctx context.Context, m models.Model, ds *data.Dataset, hops *data.Hops, sets Sets, o Options) (*Result, error) {
	sel, err := checkOptions(m, sets, &o)
	if err != nil {
		return nil, err
	}
	tr := o.Training
	t := &trainer{ctx: ctx, m: m, cfg: m.Config(), ds: ds, hops: hops, sets: sets, o: o,
		opt:     param.NewAdam(m.Params(), tr.LR, tr.WeightDecay),
		blocks:  blocksOf(m),
		rng:     rand.New(rand.NewPCG(o.Seed, o.Stream)),
		order:   append([]int(nil), sets.Train...),
		ck:      m,
		plateau: PlateauFor(tr, o.Metric),
	}
	if o.Host != nil {
		if err := t.useDevice(); err != nil {
			return nil, err
		}
	}
	res := &Result{Best: -1}
	var trainGraphs int
	sinceBest := 0
	for epoch := 1; epoch <= tr.Epochs; epoch++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		start := time.Now()
		seen, err := t.trainEpoch(epoch)
		if err != nil {
			return nil, err
		}
		trainGraphs += len(t.order)
		res.TrainSeconds = append(res.TrainSeconds, time.Since(start).Seconds())
		rec, err := t.recordEpoch(epoch, seen)
		if err != nil {
			return nil, err
		}
		res.EpochSeconds = append(res.EpochSeconds, time.Since(start).Seconds())
		res.Epochs = append(res.Epochs, rec)
		t.stepPlateau(rec)
		if res.Best < 0 || better(sel, o.Metric, rec, res.Epochs[res.Best]) {
			res.Best = len(res.Epochs) - 1
			if t.dev != nil {
				if err := t.syncHost(epoch); err != nil {
					return nil, err
				}
			}
			var buf bytes.Buffer
			if err := models.WriteCheckpoint(&buf, t.ck); err != nil {
				return nil, fmt.Errorf("epoch %d: %w", epoch, err)
			}
			res.Checkpoint = buf.Bytes()
			sinceBest = 0
		} else {
			sinceBest++
		}
		if o.Log != nil {
			o.Log.Debug("epoch", "epoch", epoch, "lr", rec.LR, "train_loss", rec.TrainLoss, "train", rec.TrainScore,
				"val_loss", rec.ValLoss, "val", rec.ValScore, "test", rec.TestScore)
		}
		if o.Progress != nil {
			o.Progress(epoch, tr.Epochs)
		}
		if sel == SelectEarlyStopping && sinceBest >= tr.Patience {
			break
		}
	}
	trainTime := 0.0
	for _, s := range res.TrainSeconds {
		trainTime += s
	}
	if trainTime > 0 {
		res.GraphsPerSecond = float64(trainGraphs) / trainTime
	}
	return res, nil
}

// checkOptions checks o.Training, the training set and o.Metric for m,
// fills o.EvalBatch's default and returns the selection rule.
func checkOptions(m models.Model, sets Sets, o *Options) (string, error) {
	tr := o.Training
	if tr.Optimizer != "" && tr.Optimizer != "adam" {
		return "", fmt.Errorf("training.optimizer %q is not supported (only adam)", tr.Optimizer)
	}
	switch {
	case tr.Epochs < 1:
		return "", fmt.Errorf("training.epochs = %d: need at least 1", tr.Epochs)
	case tr.BatchSize < 1:
		return "", fmt.Errorf("training.batch_size = %d: need at least 1", tr.BatchSize)
	case tr.LR <= 0:
		return "", fmt.Errorf("training.lr = %v: need a positive learning rate", tr.LR)
	case len(sets.Train) == 0:
		return "", fmt.Errorf("empty training set")
	}
	sel := tr.Selection
	if sel == "" {
		sel = SelectBestValLoss
	}
	if sel != SelectBestValLoss && sel != SelectBestValMetric && sel != SelectEarlyStopping {
		return "", fmt.Errorf("training.selection %q is unknown (want best_val_loss, best_val_metric or early_stopping)", sel)
	}
	if sel == SelectEarlyStopping && tr.Patience < 1 {
		return "", fmt.Errorf("training.patience = %d: early stopping needs a positive patience", tr.Patience)
	}
	if err := checkPlateau(tr); err != nil {
		return "", err
	}
	if err := metric.Check(o.Metric, data.Task(m.Config().Task), m.Config().Out); err != nil {
		return "", err
	}
	if o.EvalBatch < 1 {
		o.EvalBatch = tr.BatchSize
	}
	return sel, nil
}

// trainer is the state of one Train call.
type trainer struct {
	// ctx is Train's: the training loops stop at the next step once it
	// is done (an interrupt, a Slurm job's time limit), not at the end
	// of the epoch.
	ctx    context.Context
	m      models.Model
	cfg    models.Config
	ds     *data.Dataset
	hops   *data.Hops
	sets   Sets
	o      Options
	opt    *param.Adam
	blocks param.Blocks
	rng    *rand.Rand
	// order is the training set in the current epoch's shuffled order.
	order []int
	// ck is the model that is checkpointed: m, or on a device run
	// Options.Host.
	ck models.Model
	// dev and dopt are m and its optimiser on a device run (nil on the
	// CPU).
	dev  DeviceModel
	dopt *rt.DeviceAdam
	// plateau is the reduce-on-plateau schedule (nil without one).
	plateau *Plateau
}

// useDevice sets t up for a device run (Options.Host): m must be a
// DeviceModel whose parameters and buffers match the host model's.
func (t *trainer) useDevice() error {
	dm, ok := t.m.(DeviceModel)
	if !ok {
		return fmt.Errorf("model kind %q cannot train on a device", t.cfg.Model.Kind)
	}
	host := t.o.Host
	mp, hp := t.m.Params(), host.Params()
	if len(mp) != len(hp) {
		return fmt.Errorf("device run: the host model has %d parameters, the device model %d", len(hp), len(mp))
	}
	for i := range mp {
		if mp[i].Name != hp[i].Name || len(mp[i].W) != len(hp[i].W) {
			return fmt.Errorf("device run: host parameter %d is %s (%d values), the device model's %s (%d values)", i, hp[i].Name, len(hp[i].W), mp[i].Name, len(mp[i].W))
		}
	}
	hb := host.Buffers()
	for name, v := range t.m.Buffers() {
		if len(hb[name]) != len(v) {
			return fmt.Errorf("device run: host buffer %s has %d values, the device model's %d", name, len(hb[name]), len(v))
		}
	}
	tr := t.o.Training
	dopt, err := dm.NewDeviceAdam(mp, tr.LR, tr.WeightDecay)
	if err != nil {
		return err
	}
	t.dev, t.dopt, t.ck = dm, dopt, host
	return nil
}

// syncHost copies the device model's parameters and batch-norm running
// statistics into the host model when epoch is selected, failing with
// ErrDiverged when a parameter is not finite.
func (t *trainer) syncHost(epoch int) error {
	if err := t.dev.SyncHost(); err != nil {
		return fmt.Errorf("epoch %d: copying the model from the device: %w", epoch, err)
	}
	hp := t.ck.Params()
	for i, p := range t.m.Params() {
		for j, v := range p.W {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				return fmt.Errorf("%w at epoch %d (lr %g): parameter %s[%d] is %v", ErrDiverged, epoch, t.dopt.LR, p.Name, j, v)
			}
		}
		copy(hp[i].W, p.W)
	}
	hb := t.ck.Buffers()
	for name, v := range t.m.Buffers() {
		copy(hb[name], v)
	}
	return nil
}

// seen is what an epoch's training steps saw: the training-mode outputs,
// labels and targets of every graph, and the sum of the batch losses
// weighted by batch size.
type seen struct {
	lossSum float64
	outs    []float32
	ys      []int32
	targets []float64
}

// trainEpoch shuffles the training set and takes one optimiser step per
// batch, stopping with ErrDiverged when a loss or a gradient is not
// finite or the loss exceeds DivergenceLimit. On a device run of a
// models.AsyncStepper (unless Options.SyncSteps) the steps are pipelined
// (pipelineEpoch). Either way each batch is built on another goroutine
// while the step before it runs (data.Batches).
func (t *trainer) trainEpoch(epoch int) (*seen, error) {
	tr, opt := t.o.Training, t.opt
	opt.LR = LearningRate(tr, epoch)
	if t.plateau != nil {
		opt.LR = t.plateau.LR()
	}
	if t.dopt != nil {
		t.dopt.LR = opt.LR
	}
	order := t.order
	t.rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	sn := &seen{outs: make([]float32, 0, len(order)*t.cfg.Out), ys: make([]int32, 0, len(order))}
	if as, ok := t.m.(models.AsyncStepper); ok && t.dopt != nil && !t.o.SyncSteps {
		if err := t.pipelineEpoch(epoch, as, sn); err != nil {
			return nil, err
		}
		return sn, nil
	}
	bi := 0
	for b, err := range data.Batches(t.ds, t.hops, chunks(order, tr.BatchSize), models.BatchOptions(t.m)) {
		if err == nil {
			err = t.ctx.Err()
		}
		if err != nil {
			return nil, fmt.Errorf("epoch %d batch %d: %w", epoch, bi, err)
		}
		loss, out, err := step(t.m, t.cfg, b)
		if err != nil {
			return nil, fmt.Errorf("epoch %d batch %d: %w", epoch, bi, err)
		}
		if err := t.checkLoss(epoch, bi, loss); err != nil {
			return nil, err
		}
		if t.dopt != nil {
			// The gradients are on the device: a non-finite one shows
			// in the next loss, in the evaluation (recordEpoch) or in
			// the parameters of a selected epoch (syncHost).
			if err := t.dopt.Step(); err != nil {
				return nil, fmt.Errorf("epoch %d batch %d: %w", epoch, bi, err)
			}
		} else {
			if err := opt.CheckFinite(t.blocks); err != nil {
				return nil, fmt.Errorf("%w at epoch %d batch %d (lr %g): %w", ErrDiverged, epoch, bi, opt.LR, err)
			}
			opt.StepBlocks(t.blocks)
		}
		sn.add(loss, b.NumGraphs, out, b)
		bi++
	}
	return sn, nil
}

// chunks splits idx into consecutive groups of size (the last one
// shorter): the batches of an epoch.
func chunks(idx []int, size int) [][]int {
	var gs [][]int
	for lo := 0; lo < len(idx); lo += size {
		gs = append(gs, idx[lo:min(lo+size, len(idx))])
	}
	return gs
}

// pipelineEpoch is the epoch's steps of a device run on a
// models.AsyncStepper, in trainEpoch's order (t.order, shuffled): for
// each batch it enqueues the step (StepAsync) and the device Adam step,
// and only then resolves the batch before it, whose results the device
// has normally sent back by then, and checks and records them as the
// synchronous loop does; the last batch is resolved after the loop. The
// host thus prepares batch i+1 while the device runs batch i, and builds
// batch i+2 (data.Batches) meanwhile. The steps
// and Adam's run in the same order on the device, so every value is the
// synchronous loop's, bit for bit; a divergent loss is reported naming
// its own batch, once the step after it has been enqueued, and an error
// of a batch comes after the divergence of the batch before it, as in
// the synchronous loop. Once t.ctx is done it enqueues no more steps:
// it waits for the step in flight and returns the context's error.
func (t *trainer) pipelineEpoch(epoch int, as models.AsyncStepper, sn *seen) error {
	type inflight struct {
		bi, n   int // the batch's index and size
		b       *data.Batch
		resolve func() (float64, []float32, error)
	}
	finish := func(f *inflight) error {
		loss, out, err := f.resolve()
		if err != nil {
			return fmt.Errorf("epoch %d batch %d: %w", epoch, f.bi, err)
		}
		if err := t.checkLoss(epoch, f.bi, loss); err != nil {
			return err
		}
		sn.add(loss, f.n, out, f.b)
		return nil
	}
	enqueue := func(bi int, b *data.Batch) (*inflight, error) {
		resolve, err := as.StepAsync(b)
		if err != nil {
			return nil, err
		}
		if err := t.dopt.Step(); err != nil {
			return nil, err
		}
		return &inflight{bi: bi, n: b.NumGraphs, b: b, resolve: resolve}, nil
	}
	var prev *inflight
	bi := 0
	for b, err := range data.Batches(t.ds, t.hops, chunks(t.order, t.o.Training.BatchSize), models.BatchOptions(t.m)) {
		var cur *inflight
		if err == nil {
			err = t.ctx.Err()
		}
		if err == nil {
			cur, err = enqueue(bi, b)
		}
		if prev != nil {
			if err := finish(prev); err != nil {
				return err
			}
		}
		if err != nil {
			return fmt.Errorf("epoch %d batch %d: %w", epoch, bi, err)
		}
		prev = cur
		bi++
	}
	if prev == nil {
		return nil
	}
	return finish(prev)
}

// checkLoss returns the ErrDiverged error of a training loss that is not
// finite or exceeds DivergenceLimit at batch bi of epoch (nil for a
// sound one).
func (t *trainer) checkLoss(epoch, bi int, loss float64) error {
	if !math.IsNaN(loss) && !math.IsInf(loss, 0) && math.Abs(loss) <= DivergenceLimit {
		return nil
	}
	if epoch == 1 && bi == 0 && (math.IsNaN(loss) || math.IsInf(loss, 0)) {
		// No step was taken yet: the learning rate is not to blame, the
		// input or the initial weights are.
		return fmt.Errorf("%w: the loss of the very first batch is %v, before any optimiser step: check the dataset's features and targets for NaN/Inf or huge values", ErrDiverged, loss)
	}
	return fmt.Errorf("%w: loss %v at epoch %d batch %d (lr %g)", ErrDiverged, loss, epoch, bi, t.opt.LR)
}

// add records a training step's loss (weighted by n, the batch's size),
// outputs, classes and targets.
func (sn *seen) add(loss float64, n int, out []float32, b *data.Batch) {
	sn.lossSum += loss * float64(n)
	sn.outs = append(sn.outs, out...)
	sn.ys = append(sn.ys, b.Y...)
	sn.targets = append(sn.targets, b.Target...)
}

// recordEpoch returns the epoch's record: the training loss and score of
// the outputs seen during the epoch (dropout on, batch statistics, as
// PyTorch training loops usually report them; no extra evaluation pass),
// the validation and test scores, and α and ε of a models.HopWeights. On
// a device run the evaluation runs on the device, and a validation or
// test loss that is not finite is divergence (ErrDiverged): the
// gradients, unlike on the CPU, are not checked step by step.
func (t *trainer) recordEpoch(epoch int, sn *seen) (curve.EpochRecord, error) {
	m, o, cfg := t.m, t.o, t.cfg
	rec := curve.EpochRecord{Epoch: epoch, LR: t.opt.LR, TrainLoss: sn.lossSum / float64(len(t.order))}
	var err error
	if rec.TrainScore, err = metric.Score(o.Metric, data.Task(cfg.Task), metric.Outputs{Out: sn.outs, C: cfg.Out, Y: sn.ys, Target: sn.targets, Factors: o.Factors}); err != nil {
		return rec, fmt.Errorf("epoch %d: train score: %w", epoch, err)
	}
	if rec.ValLoss, rec.ValScore, err = evaluate(t.ctx, m, t.ds, t.hops, t.sets.Val, evalOpts{o.Metric, o.Factors, o.EvalBatch}); err != nil {
		return rec, fmt.Errorf("epoch %d: validation: %w", epoch, err)
	}
	if len(t.sets.Test) > 0 {
		if rec.TestLoss, rec.TestScore, err = evaluate(t.ctx, m, t.ds, t.hops, t.sets.Test, evalOpts{o.Metric, o.Factors, o.EvalBatch}); err != nil {
			return rec, fmt.Errorf("epoch %d: test: %w", epoch, err)
		}
	}
	if t.dev != nil {
		for _, l := range []struct {
			what string
			v    float64
		}{{"validation", rec.ValLoss}, {"test", rec.TestLoss}} {
			if math.IsNaN(l.v) || math.IsInf(l.v, 0) {
				return rec, fmt.Errorf("%w at epoch %d (lr %g): the %s loss is %v", ErrDiverged, epoch, rec.LR, l.what, l.v)
			}
		}
	}
	if hw, ok := m.(models.HopWeights); ok {
		if t.dev != nil {
			if err := t.dev.SyncHopWeights(); err != nil {
				return rec, fmt.Errorf("epoch %d: copying the hop weights from the device: %w", epoch, err)
			}
		}
		rec.Alpha, rec.Eps = hw.HopWeights()
	}
	return rec, nil
}

// better reports whether epoch a beats the best epoch so far b (strictly:
// ties keep the earlier epoch).
func better(sel, name string, a, b curve.EpochRecord) bool {
	if sel == SelectBestValMetric {
		if metric.HigherIsBetter(name) {
			return a.ValScore > b.ValScore
		}
		return a.ValScore < b.ValScore
	}
	return a.ValLoss < b.ValLoss
}

// Loss returns the task loss of the outputs out on batch b and its gradient:
// cross-entropy for classification, mean squared error for regression.
func Loss(cfg models.Config, out []float32, b *data.Batch) (float64, []float32, error) {
	switch cfg.Task {
	case models.TaskClassification:
		if len(b.Y) != b.NumGraphs {
			return 0, nil, fmt.Errorf("batch has %d classes for %d graphs", len(b.Y), b.NumGraphs)
		}
		for i, y := range b.Y {
			if y < 0 || int(y) >= cfg.Out {
				return 0, nil, fmt.Errorf("graph %d of the batch has class %d outside [0,%d)", i, y, cfg.Out)
			}
		}
		g := make([]float32, len(out))
		return kernels.CrossEntropy(g, 1, out, b.Y, b.NumGraphs, cfg.Out), g, nil
	case models.TaskRegression:
		if len(b.Target) != len(out) {
			return 0, nil, fmt.Errorf("batch has %d targets for %d outputs", len(b.Target), len(out))
		}
		g := make([]float32, len(out))
		return kernels.MSE(g, 1, out, b.Target), g, nil
	case models.TaskBinary:
		if len(b.Target) != len(out) {
			return 0, nil, fmt.Errorf("batch has %d binary labels for %d outputs", len(b.Target), len(out))
		}
		g := make([]float32, len(out))
		l, _ := kernels.BCEWithLogits(g, out, b.Target)
		return l, g, nil
	}
	return 0, nil, fmt.Errorf("unknown task %q", cfg.Task)
}

// Evaluate returns the mean loss and the metric of m (evaluation mode) on the
// graphs idx, in batches of batchSize graphs.
func Evaluate(m models.Model, ds *data.Dataset, hops *data.Hops, idx []int, name string, batchSize int) (loss, score float64, err error) {
	return evaluate(context.Background(), m, ds, hops, idx, evalOpts{metric: name, batch: batchSize})
}

// evalOpts are how evaluate scores: the metric, the factors of metric
// film_error, and the graphs per batch.
type evalOpts struct {
	metric  string
	factors []float64
	batch   int
}

// evaluate is Evaluate with the factors of metric film_error, stopping
// between batches once ctx is done.
func evaluate(ctx context.Context, m models.Model, ds *data.Dataset, hops *data.Hops, idx []int, o evalOpts) (loss, score float64, err error) {
	if len(idx) == 0 {
		return 0, 0, fmt.Errorf("empty evaluation set")
	}
	out, b, err := predict(ctx, m, ds, hops, idx, o.batch)
	if err != nil {
		return 0, 0, err
	}
	loss, _, err = Loss(m.Config(), out, b)
	if err != nil {
		return 0, 0, err
	}
	score, err = metric.Score(o.metric, data.Task(m.Config().Task), metric.Outputs{Out: out, C: m.Config().Out, Y: b.Y, Target: b.Target, Factors: o.factors})
	return loss, score, err
}

// Predict returns the evaluation-mode outputs of m on graphs idx (in order),
// together with a target-only batch (Y and Target of those graphs).
func Predict(m models.Model, ds *data.Dataset, hops *data.Hops, idx []int, batchSize int) ([]float32, *data.Batch, error) {
	return predict(context.Background(), m, ds, hops, idx, batchSize)
}

// predict is Predict, stopping between batches once ctx is done.
func predict(ctx context.Context, m models.Model, ds *data.Dataset, hops *data.Hops, idx []int, batchSize int) ([]float32, *data.Batch, error) {
	if batchSize < 1 {
		batchSize = 256
	}
	cfg := m.Config()
	out := make([]float32, 0, len(idx)*cfg.Out)
	tgt := &data.Batch{NumGraphs: len(idx)}
	for b, err := range data.Batches(ds, hops, chunks(idx, batchSize), models.BatchOptions(m)) {
		if err == nil {
			err = ctx.Err()
		}
		if err != nil {
			return nil, nil, err
		}
		o, err := m.Forward(b, false)
		if err != nil {
			return nil, nil, err
		}
		out = append(out, o...)
		tgt.Y = append(tgt.Y, b.Y...)
		tgt.Target = append(tgt.Target, b.Target...)
	}
	return out, tgt, nil
}
