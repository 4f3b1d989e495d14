// Package train implements the "train" stage kind: it trains one model
// configuration on one split of a generated dataset with precomputed hop
// sets, and writes the per-epoch curves and the selected model.
package train

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/models"
	"github.com/spn-project/spn/models/cuda"
	"github.com/spn-project/spn/models/cuda/engine"
	"github.com/spn-project/spn/models/fit"
	"github.com/spn-project/spn/models/kernels"
	"github.com/spn-project/spn/models/kinds"
	"github.com/spn-project/spn/schema"
	"github.com/spn-project/spn/stages"
	"github.com/spn-project/spn/stages/device"
)

// Kind is the train stage kind. Params: stages.TrainParams. Inputs: one
// generate stage, one precompute stage and, for RoleFinal, one select
// stage. Artifacts: stages.FileResult (stages.TrainResult) and
// stages.FileModel (models checkpoint of the selected epoch).
//
// Role holdout and final train on Split.Train, validate on Split.Val and
// test on Split.Test of Dataset.Splits[Split]; role select trains on the
// inner training set (Split.Train) and validates on the inner validation
// set (Split.Val) without touching the test set. The model is initialised
// from job.Seed; the training set is shuffled by a PCG seeded with
// (job.Seed, params.Seed+params.Run).
type Kind struct {
	// Models builds the model of each model.kind; nil means kinds.All(),
	// the models built as Gorgonia graphs over the project's kernels.
	Models models.Registry
	// GPU is where the stages of device "cuda" train; nil: they fail.
	GPU *GPU
}

// GPU says how train stages reach their GPUs (device.GPU).
type GPU = device.GPU

// DeviceName returns the device name of GPU ordinal, "cuda:N".
func DeviceName(ordinal int) string { return device.Name(ordinal) }

// GPUs returns the GPUs the kind trains on, nil when none
// (device.Trainer).
func (k Kind) GPUs() *GPU { return k.GPU }

// WithGPU returns the kind training the stages of device "cuda" on gpu
// (device.Trainer).
func (k Kind) WithGPU(gpu *GPU) stages.Kind {
	k.GPU = gpu
	return k
}

// Registry returns the model constructors the kind trains with.
func (k Kind) Registry() models.Registry {
	if k.Models == nil {
		return kinds.All()
	}
	return k.Models
}

// Name returns "train".
func (Kind) Name() string { return stages.KindTrain }

// Version returns the kind's version: 2 since training goes through the
// Gorgonia models, 3 since the timings moved to timing.json.
func (Kind) Version() string { return "3" }

// VersionOf implements stages.ParamsVersioner: Version, with the model
// kind's revision after it when that is above 1 (models.Revised), e.g.
// "3+rspn.2", for a stage that trains a configuration of the spec
// (TrainParams.Point). A final training reads its configuration from its
// select stage, whose key already holds the trainings' keys; its version
// is Version with the final role's revision, "3+final.2": since revision
// 2 its seed is that of the training it stands for (Bind). Parameters
// that do not decode get Version (the stage reports them when it runs).
func (k Kind) VersionOf(params json.RawMessage) string {
	f, ok := decodeVersionFields(params)
	if !ok {
		return k.Version()
	}
	return k.version(f)
}

var _ stages.ValueVersioner = Kind{}

// VersionOfValue implements stages.ValueVersioner: VersionOf of
// stages.TrainParams, read from the value the planner encodes.
func (k Kind) VersionOfValue(params any) (string, bool) {
	p, ok := params.(stages.TrainParams)
	if !ok {
		return "", false
	}
	f := versionFields{role: p.Role}
	if p.Point != nil {
		f.point, f.modelKind = true, p.Point.Model.Kind
	}
	return k.version(f), true
}

// finalRevision is the revision of the final role's stages: 2 since their
// seed derives from the training they stand for (Bind), not from their
// select stage's key.
const finalRevision = 2

// versionFields are what a train stage's version depends on: its role,
// whether it carries a configuration, and that configuration's model kind.
type versionFields struct {
	role      string
	point     bool
	modelKind string
}

func (k Kind) version(f versionFields) string {
	switch {
	case !f.point && f.role == stages.RoleFinal:
		return fmt.Sprintf("%s+%s.%d", k.Version(), stages.RoleFinal, finalRevision)
	case !f.point:
		return k.Version()
	}
	if r := k.Registry().Revision(f.modelKind); r > 1 {
		return fmt.Sprintf("%s+%s.%d", k.Version(), f.modelKind, r)
	}
	return k.Version()
}

// decodeVersionFields decodes versionFields from a train stage's
// parameters (stages.TrainParams as JSON); false when they do not decode.
// Decoding only these fields takes about half the time of the whole
// parameters.
func decodeVersionFields(params json.RawMessage) (versionFields, bool) {
	var p struct {
		Role  string `json:"role"`
		Point *struct {
			Model struct {
				Kind string `json:"kind"`
			} `json:"model"`
		} `json:"point"`
	}
	if json.Unmarshal(params, &p) != nil {
		return versionFields{}, false
	}
	f := versionFields{role: p.Role}
	if p.Point != nil {
		f.point, f.modelKind = true, p.Point.Model.Kind
	}
	return f, true
}

// GrowsThreads implements stages.Grower: a train stage takes more threads
// between epochs.
func (Kind) GrowsThreads() bool { return true }

var _ stages.GPUUser = Kind{}

// StageGPU implements stages.GPUUser: a stage of device "cuda" needs one
// of the kind's GPUs (the executor runs one such stage per GPU at a
// time, or exec.Options.StagesPerGPU).
func (k Kind) StageGPU(params json.RawMessage) ([]int, bool) {
	var p struct {
		Device string `json:"device"`
	}
	if k.GPU == nil || len(k.GPU.Ordinals) == 0 || json.Unmarshal(params, &p) != nil || p.Device != schema.DeviceCUDA {
		return nil, false // the stage reports what is wrong itself
	}
	return k.GPU.Ordinals, true
}

// Run implements stages.Kind.
func (k Kind) Run(ctx context.Context, job *stages.Job) (err error) {
	var p stages.TrainParams
	if err := job.Decode(&p); err != nil {
		return err
	}
	switch {
	case p.Device == "":
	case p.Device != schema.DeviceCUDA:
		return fmt.Errorf("device %q is unknown (want %q or none)", p.Device, schema.DeviceCUDA)
	case k.GPU == nil:
		return fmt.Errorf("device %s: no GPU was given to the train stage (spn run, calibrate and stage run give this machine's)", p.Device)
	}
	point, notes, err := resolvePoint(&p)
	if err != nil {
		return err
	}
	ds, hopsPath, err := loadInputs(job)
	if err != nil {
		return err
	}
	src, err := readSources(job)
	if err != nil {
		return err
	}
	if ds, err = data.SelectTargets(ds, p.Targets); err != nil {
		return err
	}
	if p.Split < 0 || p.Split >= len(ds.Splits) {
		return fmt.Errorf("split %d: dataset %q has %d splits", p.Split, ds.Name, len(ds.Splits))
	}
	sp := ds.Splits[p.Split]
	sets := fit.Sets{Train: sp.Train, Val: sp.Val, Test: sp.Test}
	switch p.Role {
	case stages.RoleHoldout, stages.RoleFinal:
	case stages.RoleSelect:
		sets.Test = nil
	default:
		return fmt.Errorf("role %q is unknown (want holdout, select or final)", p.Role)
	}
	var gpu *engine.Opened
	compute := cpuCompute()
	device := DeviceName(job.Env.GPU)
	if p.Device != "" {
		if gpu, err = k.GPU.Open(job.Env.GPU); err != nil {
			return err
		}
		defer func() {
			if cerr := gpu.Close(); cerr != nil && err == nil {
				err = fmt.Errorf("device %s: %w", device, cerr)
			}
		}()
		d := gpu.Device
		compute = &stages.Compute{Device: device, GPU: d.Name, Capability: fmt.Sprintf("%d.%d", d.Major, d.Minor), Driver: d.Driver.String()}
	}
	res, err := train(ctx, trainInput{reg: k.Registry(), point: point, ds: ds, hopsPath: hopsPath,
		sets: sets, p: p, job: job, gpu: gpu})
	if errors.Is(err, fit.ErrDiverged) {
		// A diverged run is a result, not a failure of the stage: model
		// selection excludes its grid point (select) and anything else
		// that reads it fails naming it. It is deterministic, so it is
		// cached like any result; there is no model to keep.
		if job.Log != nil {
			job.Log.Warn("training diverged", "error", err)
		}
		msg := err.Error()
		if i := strings.Index(msg, fit.ErrDiverged.Error()); i >= 0 {
			msg = msg[i:] // without the stage name, which the select note gives
		}
		return writeJSON(filepath.Join(job.Dir, stages.FileResult), stages.TrainResult{
			Point: point, Metric: p.Metric, Diverged: msg, Notes: notes, Epochs: []stages.EpochRecord{}, Data: src,
			Compute: compute,
		})
	}
	switch {
	case errors.Is(err, cuda.ErrOutOfMemory):
		return stages.DeviceMemory(fmt.Errorf("%w; %s", err, outOfMemoryHint(device, point)))
	case errors.Is(err, cuda.ErrContextLost):
		return fmt.Errorf("%w; %s", err, contextLostHint(device))
	}
	if err != nil {
		return err
	}
	res.TrainResult.Notes = notes
	res.TrainResult.Data = src
	res.TrainResult.Compute = compute
	if err := os.WriteFile(filepath.Join(job.Dir, stages.FileModel), res.checkpoint, 0o644); err != nil {
		return fmt.Errorf("writing model: %w", err)
	}
	if err := writeJSON(filepath.Join(job.Dir, stages.FileResult), res.TrainResult); err != nil {
		return err
	}
	return writeJSON(filepath.Join(job.Dir, stages.FileTiming), res.timing)
}

// outOfMemoryHint says what to change when training point ran out of
// memory on the device called device.
func outOfMemoryHint(device string, point schema.Point) string {
	return fmt.Sprintf("training does not fit in %s's memory: lower training.batch_size (%d) or model.hidden (%d), free the GPU of other processes (or of this run's other stages: --stages-per-gpu), or train on a larger GPU or with --device cpu",
		device, point.Training.BatchSize, point.Model.Hidden)
}

// contextLostHint says what a sticky error on the device called device
// (cuda.ErrContextLost) means.
func contextLostHint(device string) string {
	return fmt.Sprintf("a kernel faulted on %s, or the GPU had a memory error: that spoils the GPU's context for every stage using it at the time (--stages-per-gpu), and stages that start after them get a fresh one. It is a bug in spn's kernels or a fault of the GPU (nvidia-smi -q -d ECC; Xid lines in the kernel log): please report it with this message", device)
}

// cpuCompute describes the CPU kernels of this build.
func cpuCompute() *stages.Compute { return &stages.Compute{Device: "cpu", GEMM: kernels.GEMM} }

// writeJSON writes v as indented JSON to path.
func writeJSON(path string, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("encoding %s: %w", filepath.Base(path), err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", filepath.Base(path), err)
	}
	return nil
}

// Result is a finished training run.
type Result struct {
	stages.TrainResult
	timing     stages.TrainTiming
	checkpoint []byte
}

// Checkpoint returns the selected model's checkpoint bytes.
func (r *Result) Checkpoint() []byte { return r.checkpoint }

// trainInput is what a training takes: the kinds (reg), the grid point,
// the dataset and its hop-set file hopsPath ("": none), the split, the
// stage's parameters and its job (seed, threads, log, progress), and the
// GPU (nil: the CPU).
type trainInput struct {
	reg      models.Registry
	point    schema.Point
	ds       *data.Dataset
	hopsPath string
	sets     fit.Sets
	p        stages.TrainParams
	job      *stages.Job
	gpu      *engine.Opened
}

// train builds the model of in.point for in.ds and trains it on in.sets,
// on the GPU in.gpu when not nil: the model's steps, Adam and evaluation
// run there, and a CPU model of the same configuration receives the
// selected epoch's state and gives the checkpoint (fit.Options.Host).
func train(ctx context.Context, in trainInput) (*Result, error) {
	reg, point, ds, hopsPath, sets, p, job, gpu := in.reg, in.point, in.ds, in.hopsPath, in.sets, in.p, in.job, in.gpu
	cfg, err := models.ConfigFor(point.Model, ds)
	if err != nil {
		return nil, err
	}
	if gpu != nil {
		if err := reg.CheckDevice(cfg, fmt.Sprintf("%s:%d", schema.DeviceCUDA, gpu.Device.Ordinal)); err != nil {
			return nil, err
		}
	}
	if hopsPath != "" {
		// The kind's own check (spn vet and plan ran it against the
		// spec's dataset section), here against the dataset and the
		// artifact's kmax.
		kmax, unreachable, err := data.HopsFileHeader(hopsPath)
		if err != nil {
			return nil, err
		}
		var errs []error
		for _, fe := range reg.CheckModel(point.Model, models.InfoFor(ds, kmax, unreachable)) {
			errs = append(errs, fe)
		}
		if err := errors.Join(errs...); err != nil {
			return nil, fmt.Errorf("precomputed hop sets: %w", err)
		}
	}
	threads := max(job.Env.Threads, 1)
	pool := kernels.NewPool(threads, 0)
	progress := job.Progress
	if more := job.Env.ThreadsNow; more != nil {
		// The executor may give this stage idle cores while it runs: the
		// pool grows between epochs (same chunks, same bits).
		pool = kernels.NewGrowablePool(threads, 0)
		progress = func(done, total int) {
			if t := more(); t > pool.Threads() && done < total {
				pool.Grow(t)
				if job.Log != nil {
					job.Log.Info("more threads from the next epoch on", "threads", pool.Threads(), "epoch", done+1)
				}
			}
			if job.Progress != nil {
				job.Progress(done, total)
			}
		}
	}
	be := kernels.CPU{Threads: threads, Pool: pool}
	defer be.Pool.Close()
	var e *engine.Engine
	if gpu != nil {
		e = gpu.Engine
	}
	m, host, err := newModel(reg, cfg, job.Seed, be, e)
	if err != nil {
		return nil, err
	}
	nb := models.BatchOptions(m)
	if (nb.K > 0 || nb.Unreachable) && hopsPath == "" {
		return nil, fmt.Errorf("model reads %d hop sets (N_∞: %v), but there is no precomputed hop artifact", nb.K, nb.Unreachable)
	}
	var hops *data.Hops
	if hopsPath != "" {
		// Read only the hop sets the model reads (kmax serves every k of
		// a dataset; N_1 at least, which Matches checks against the
		// dataset): a k = 1 model of a kmax 10 artifact never holds the
		// other nine.
		if hops, _, err = data.ReadHopsFilePrefix(hopsPath, max(nb.K, 1)); err != nil {
			return nil, err
		}
		if err := hops.Matches(ds); err != nil {
			return nil, fmt.Errorf("hop sets of %s do not match dataset %q: %w", filepath.Dir(hopsPath), ds.Name, err)
		}
		if nb.Unreachable && !hops.KeptUnreachable() {
			// The header's flag is the first graph's.
			return nil, fmt.Errorf("model.unreachable: the model reads N_∞, but the hop sets of %s do not hold it for every graph", filepath.Dir(hopsPath))
		}
		hops = hops.Prefix(nb.K)
	}
	opts := fit.Options{
		Training: point.Training,
		Metric:   p.Metric,
		Factors:  p.Factors,
		Seed:     job.Seed,
		Stream:   uint64(p.Seed) + uint64(p.Run),
		Log:      job.Log,
		Progress: progress,
		Host:     host,
	}
	r, err := fit.Train(ctx, m, ds, hops, sets, opts)
	if err != nil {
		return nil, err
	}
	best := r.Epochs[r.Best]
	return &Result{
		TrainResult: stages.TrainResult{
			Point:     point,
			Metric:    p.Metric,
			BestEpoch: best.Epoch,
			ValLoss:   best.ValLoss,
			ValScore:  best.ValScore,
			TestLoss:  best.TestLoss,
			TestScore: best.TestScore,
			Epochs:    r.Epochs,
		},
		timing:     stages.TrainTiming{EpochSeconds: r.EpochSeconds, GraphsPerSecond: r.GraphsPerSecond},
		checkpoint: r.Checkpoint,
	}, nil
}

// UseDevice makes m, a model of reg, train on the device engine e and
// returns the host model that fit.Options.Host needs for it: a CPU model
// of m's configuration from seed on be.
func UseDevice(reg models.Registry, m models.Model, seed uint64, be kernels.Backend, e *engine.Engine) (models.Model, error) {
	dm, ok := m.(interface{ UseDevice(*engine.Engine) error })
	if !ok {
		return nil, fmt.Errorf("model kind %q cannot train on a device", m.Config().Model.Kind)
	}
	if err := dm.UseDevice(e); err != nil {
		return nil, err
	}
	return reg.New(m.Config(), seed, be)
}

// resolvePoint returns the configuration to train and the notes its
// result carries: params.Point and, for a bound RoleFinal stage (Bind),
// the selection's notes.
func resolvePoint(p *stages.TrainParams) (schema.Point, []string, error) {
	switch {
	case p.Point != nil:
		return *p.Point, p.Notes, nil
	case p.Role == stages.RoleFinal:
		return schema.Point{}, nil, errors.New("role final: the stage is unbound (the executor binds it to its select stage's winner, Kind.Bind, before it runs)")
	}
	return schema.Point{}, nil, fmt.Errorf("role %s: parameters carry no point", p.Role)
}

// readSelect reads the result of the one select stage among inputs, the
// selection of split.
func readSelect(inputs []stages.Input, split int) (*stages.SelectResult, error) {
	sel := stages.InputsOf(inputs, stages.KindSelect)
	if len(sel) != 1 {
		return nil, fmt.Errorf("role final: need exactly one select input, have %d", len(sel))
	}
	path := filepath.Join(sel[0].Dir, stages.FileResult)
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading select result: %w", err)
	}
	var sr stages.SelectResult
	if err := json.Unmarshal(b, &sr); err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	if sr.Split != split {
		return nil, fmt.Errorf("%s: select result is for split %d, training split %d", path, sr.Split, split)
	}
	return &sr, nil
}

var _ stages.Binder = Kind{}

// Bind implements stages.Binder: a final stage stands for the training
// of its select input's winner, the same parameters with that point (and
// the selection's notes, which its result carries), on the generate and
// precompute inputs. Its seed is then the one that training has: a grid
// that grows by points that do not win leaves the final runs' results as
// they were. Other stages stand for themselves.
func (Kind) Bind(params json.RawMessage, inputs []stages.Input) (any, []int, error) {
	var p stages.TrainParams
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, nil, fmt.Errorf("decoding stage parameters: %w", err)
	}
	if p.Role != stages.RoleFinal || p.Point != nil {
		return nil, nil, nil
	}
	sr, err := readSelect(inputs, p.Split)
	if err != nil {
		return nil, nil, err
	}
	p.Point, p.Notes = &sr.Point, sr.Notes
	var keep []int
	for i, in := range inputs {
		if in.Kind != stages.KindSelect {
			keep = append(keep, i)
		}
	}
	return p, keep, nil
}

// readSources returns the generate input's record of its files (nil when
// that stage predates the record).
func readSources(job *stages.Job) (*stages.DataSources, error) {
	gen := job.InputsOf(stages.KindGenerate)
	if len(gen) != 1 {
		return nil, fmt.Errorf("need one generate input, have %d", len(gen))
	}
	p := filepath.Join(gen[0].Dir, stages.FileSources)
	b, err := os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", p, err)
	}
	var src stages.DataSources
	if err := json.Unmarshal(b, &src); err != nil {
		return nil, fmt.Errorf("reading %s: %w", p, err)
	}
	return &src, nil
}

// loadInputs reads the dataset of the generate input and returns it with
// the path of the precompute input's hops file (Train reads the hop sets
// its model needs and checks that they belong to the dataset).
func loadInputs(job *stages.Job) (*data.Dataset, string, error) {
	gen := job.InputsOf(stages.KindGenerate)
	pre := job.InputsOf(stages.KindPrecompute)
	if len(gen) != 1 || len(pre) != 1 {
		return nil, "", fmt.Errorf("need one generate and one precompute input, have %d and %d", len(gen), len(pre))
	}
	ds, err := data.ReadDatasetFile(filepath.Join(gen[0].Dir, stages.FileDataset))
	if err != nil {
		return nil, "", err
	}
	return ds, filepath.Join(pre[0].Dir, stages.FileHops), nil
}
