// Package device resolves the compute device of a run ("cpu", "auto",
// "cuda", "cuda:N": the resolved name enters the train stages' keys, so
// every command resolves it the same way on one machine), finds the GPUs
// through the CUDA libraries and gives the stage registry's train kind
// the GPUs it trains on.
package device

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/spn-project/spn/models"
	"github.com/spn-project/spn/models/cuda"
	"github.com/spn-project/spn/models/cuda/engine"
	"github.com/spn-project/spn/models/kinds"
	"github.com/spn-project/spn/schema"
	"github.com/spn-project/spn/stages"
	"github.com/spn-project/spn/stages/exec"
)

// EnvCUDALibs names the environment variable that makes spn open the
// CUDA libraries (libcuda.so.1, libnvrtc.so.13 or .12, libcublas.so.13
// or .12) from one folder, by those file names, instead of through the
// dynamic loader's search. Slurm jobs inherit it from the spn run that
// submits them (sbatch exports the environment by default).
const EnvCUDALibs = "SPN_CUDA_LIBS"

// Opener is how spn opens the CUDA libraries: the folder $SPN_CUDA_LIBS
// (read with getenv) when set, else the system's loader.
func Opener(getenv func(string) string) cuda.Opener {
	if dir := getenv(EnvCUDALibs); dir != "" {
		if abs, err := filepath.Abs(dir); err == nil {
			dir = abs
		}
		return dirOpener{dir: dir}
	}
	return cuda.System()
}

// dirOpener opens the CUDA libraries from one folder (SPN_CUDA_LIBS),
// each by its file name there, through the system's dynamic loader (which
// finds their own dependencies as usual).
type dirOpener struct{ dir string }

// Open implements cuda.Opener.
func (o dirOpener) Open(name string) (cuda.Library, error) {
	return cuda.System().Open(filepath.Join(o.dir, name))
}

// Where implements cuda.Opener.
func (o dirOpener) Where() string { return fmt.Sprintf("%s=%s only", EnvCUDALibs, o.dir) }

// GPU says how train stages reach their GPUs.
type GPU struct {
	// Opener opens the CUDA libraries (cuda.System() on a machine with a
	// GPU; tests give the emulated device's).
	Opener cuda.Opener
	// Ordinals are the GPUs (N of "cuda:N") the stages train on, one
	// stage to a GPU at a time, the first preferred (StageGPU); they are
	// of one model, so that a result does not depend on which.
	Ordinals []int
	// PTXDir holds the kernels compiled for the GPU's architecture
	// (cuda.Compiler.CompileCached).
	PTXDir string
}

// Name returns the device name of GPU ordinal, "cuda:N".
func Name(ordinal int) string { return fmt.Sprintf("%s:%d", schema.DeviceCUDA, ordinal) }

// Open probes the CUDA libraries and opens an engine on GPU ordinal, one
// of g's; the caller closes it.
func (g *GPU) Open(ordinal int) (*engine.Opened, error) {
	name := Name(ordinal)
	if !slices.Contains(g.Ordinals, ordinal) {
		return nil, fmt.Errorf("device %s: not one of the GPUs given to the train stages (%v)", name, g.Ordinals)
	}
	r, err := cuda.Probe(g.Opener)
	if err != nil {
		return nil, fmt.Errorf("device %s: %w", name, err)
	}
	o, err := engine.Open(r, ordinal, g.PTXDir)
	if err != nil {
		return nil, fmt.Errorf("device %s: %w", name, err)
	}
	return o, nil
}

// Trainer is a train stage kind that trains on GPUs (train.Kind).
type Trainer interface {
	stages.Kind
	// Registry returns the model constructors the kind trains with.
	Registry() models.Registry
	// GPUs returns the GPUs the kind trains on, nil when none.
	GPUs() *GPU
	// WithGPU returns the kind training on gpu.
	WithGPU(gpu *GPU) stages.Kind
}

// trainer returns the train kind of reg when it is a Trainer.
func trainer(reg *stages.Registry) (Trainer, bool) {
	k, ok := reg.Get(stages.KindTrain)
	if !ok {
		return nil, false
	}
	t, ok := k.(Trainer)
	return t, ok
}

// TrainModels returns the model registry the train kind of reg trains
// with (spn's own models, kinds.All(), when reg has a kind of its own, as
// in tests).
func TrainModels(reg *stages.Registry) models.Registry {
	if t, ok := trainer(reg); ok {
		return t.Registry()
	}
	return kinds.All()
}

// Resolve returns the device a command uses: override (--device) when
// set, else the spec's device, else "cpu". "cuda" becomes "cuda:0".
// "auto" becomes "cuda:0" when this machine has a usable GPU 0 (opened
// with op) and every model of ms (the spec's grid points, or the bench
// model) has device math there (mr.CheckDevice), else "cpu" (Auto): the
// device is part of the train stages' keys, so every command resolves
// "auto" the same way on one machine. Other values look at no GPU; Find
// does.
func Resolve(op cuda.Opener, specDevice, override string, mr models.Registry, ms []schema.Model) (string, error) {
	d, what := specDevice, "device"
	if override != "" {
		d, what = override, "--device"
	}
	if d == "" {
		return schema.DeviceCPU, nil
	}
	kind, ordinal, err := schema.ParseDevice(d)
	if err != nil {
		return "", fmt.Errorf("%s: %w", what, err)
	}
	switch kind {
	case schema.DeviceCUDA:
		return Name(ordinal), nil
	case schema.DeviceAuto:
		return Auto(op, mr, ms), nil
	default:
		return schema.DeviceCPU, nil
	}
}

// Auto is what "auto" resolves to on this machine for the models ms: GPU
// 0 when the CUDA libraries find it, its compute mode lets a process use
// it (not prohibited) and every model trains on it, else the CPU.
func Auto(op cuda.Opener, mr models.Registry, ms []schema.Model) string {
	gpu := Name(0)
	rt, err := cuda.Probe(op)
	if err != nil {
		return schema.DeviceCPU
	}
	if _, err := rt.UsableDevice(0); err != nil {
		return schema.DeviceCPU
	}
	if CheckModels(mr, ms, gpu) != nil {
		return schema.DeviceCPU
	}
	return gpu
}

// Find looks for GPU ordinal (of device) through the CUDA libraries of
// this machine: an error naming what is missing, the loader's message
// when there is no GPU, the compute mode when no process may use it (a
// GPU that another process holds in exclusive-process mode shows when a
// stage opens it).
func Find(op cuda.Opener, device string, ordinal int) (cuda.Device, error) {
	rt, err := cuda.Probe(op)
	if err != nil {
		return cuda.Device{}, fmt.Errorf("device %s: %w", device, err)
	}
	dev, err := rt.UsableDevice(ordinal)
	if err != nil {
		return cuda.Device{}, fmt.Errorf("device %s: %w", device, err)
	}
	return dev, nil
}

// Stages checks, before any stage runs, that the resolved device can
// train the models ms, and returns the stage registry to run with: reg on
// the CPU; on a GPU, reg with a train kind that trains on it, caching the
// compiled kernels under cacheDir/ptx. A GPU needs the driver, the
// device, and device math for every model's kind and options
// (models.Registry.CheckDevice; the task is the dataset's, which the
// stage checks); otherwise it is an error naming what is missing. remote
// (Slurm) checks the models only and returns reg: the jobs train on the
// GPUs of their nodes (spn stage run), and the machine that submits them
// needs none.
func Stages(op cuda.Opener, device string, remote bool, reg *stages.Registry, ms []schema.Model, cacheDir string) (*stages.Registry, error) {
	kind, ordinal, err := schema.ParseDevice(device)
	if err != nil {
		return nil, fmt.Errorf("device: %w", err)
	}
	if kind != schema.DeviceCUDA {
		return reg, nil
	}
	tk, isTrain := trainer(reg)
	if remote {
		if err := CheckModels(TrainModels(reg), ms, device); err != nil {
			return nil, err
		}
		return reg, nil
	}
	dev, err := Find(op, device, ordinal)
	if err != nil {
		return nil, err
	}
	if !isTrain { // a train kind of its own (tests)
		return nil, fmt.Errorf("device %s: found %v, but %w", device, dev, cuda.ErrNoBackend)
	}
	if err := CheckModels(tk.Registry(), ms, device); err != nil {
		return nil, err
	}
	return reg.With(tk.WithGPU(&GPU{Opener: op, Ordinals: []int{ordinal}, PTXDir: filepath.Join(cacheDir, "ptx")})), nil
}

// Spread makes the GPU train stages of reg, Stages' registry for device
// (local, cuda:N), train on the GPUs list names instead of GPU N alone:
// ordinals separated by commas, or "all" of this machine's. Each must
// exist and be of one model (name and compute capability) with the
// others: a stage's result would otherwise depend on which GPU the
// executor gave it.
func Spread(op cuda.Opener, device, list string, reg *stages.Registry) (*stages.Registry, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("--gpus %s: "+format, append([]any{list}, args...)...)
	}
	tk, ok := trainer(reg)
	if kind, _, err := schema.ParseDevice(device); err != nil || kind != schema.DeviceCUDA || !ok || tk.GPUs() == nil {
		return nil, bad("the device is %s; --gpus spreads the train stages of a GPU device (--device cuda)", device)
	}
	rt, err := cuda.Probe(op)
	if err != nil {
		return nil, bad("%w", err)
	}
	ordinals, err := ParseGPUs(list, rt.Devices)
	if err != nil {
		return nil, bad("%w", err)
	}
	devs := make([]cuda.Device, len(ordinals))
	for i, o := range ordinals {
		if devs[i], err = rt.UsableDevice(o); err != nil {
			return nil, bad("%w", err)
		}
	}
	if err := OneModel(devs); err != nil {
		return nil, bad("%w", err)
	}
	gpu := *tk.GPUs()
	gpu.Ordinals = ordinals
	return reg.With(tk.WithGPU(&gpu)), nil
}

// CheckPerGPU checks --stages-per-gpu k for a run on device, on Slurm
// when slurm.
func CheckPerGPU(k int, device string, slurm bool) error {
	kind, _, err := schema.ParseDevice(device)
	switch {
	case k < 1:
		return fmt.Errorf("--stages-per-gpu %d: want at least 1", k)
	case err != nil || kind != schema.DeviceCUDA:
		return fmt.Errorf("--stages-per-gpu %d: the device is %s; it shares a GPU (--device cuda)", k, device)
	case slurm:
		return fmt.Errorf("--stages-per-gpu %d: on Slurm each job has its GPU; it is for the local executor", k)
	}
	return nil
}

// ParseGPUs parses --gpus: "all" (GPUs 0 to devices−1) or distinct
// ordinals separated by commas, in the order given.
func ParseGPUs(list string, devices int) ([]int, error) {
	if list == "all" {
		out := make([]int, devices)
		for i := range out {
			out[i] = i
		}
		return out, nil
	}
	var out []int
	for _, f := range strings.Split(list, ",") {
		o, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || o < 0 {
			return nil, fmt.Errorf("%q is not a GPU ordinal (want a list such as 0,1,3, or all)", f)
		}
		if slices.Contains(out, o) {
			return nil, fmt.Errorf("GPU %d is listed twice", o)
		}
		out = append(out, o)
	}
	return out, nil
}

// OneModel checks that devs are GPUs of one model: the same name and
// compute capability, so that a stage's bits do not depend on which of
// them it trains on.
func OneModel(devs []cuda.Device) error {
	for _, d := range devs[1:] {
		if d.Name != devs[0].Name || d.Major != devs[0].Major || d.Minor != devs[0].Minor {
			return fmt.Errorf("cuda:%d is %s (compute capability %d.%d) and cuda:%d %s (%d.%d): results would depend on which GPU a stage ran on; give GPUs of one model",
				devs[0].Ordinal, devs[0].Name, devs[0].Major, devs[0].Minor, d.Ordinal, d.Name, d.Major, d.Minor)
		}
	}
	return nil
}

// CheckModels checks that every model of ms has device math on device
// (models.Registry.CheckDevice).
func CheckModels(mr models.Registry, ms []schema.Model, device string) error {
	for _, m := range ms {
		if err := mr.CheckDevice(models.Config{Model: m}, device); err != nil {
			return err
		}
	}
	return nil
}

// SpecModels returns the model sections of spec's grid points.
func SpecModels(spec *schema.Spec) []schema.Model {
	var ms []schema.Model
	for _, e := range spec.Experiments {
		for _, pt := range e.Points {
			ms = append(ms, pt.Model)
		}
	}
	return ms
}

// planned is the device that the stages of pf train on: "cuda" when a
// train stage of keys was planned for a GPU, else "cpu".
func planned(pf *exec.PlanFile, keys []string) (string, error) {
	for _, key := range keys {
		n, err := pf.Node(key)
		if err != nil || n.Kind != stages.KindTrain {
			continue // stage run reports a missing key itself
		}
		var p struct {
			Device string `json:"device"`
		}
		if err := json.Unmarshal(n.JSON, &p); err != nil {
			return "", fmt.Errorf("stage %s: parameters: %w", n.Name, err)
		}
		if p.Device != "" {
			return p.Device, nil
		}
	}
	return schema.DeviceCPU, nil
}

// ForPlanFile checks the device of spn stage run: override (--device)
// when set, else the device the stages were planned for. A CPU device
// cannot run a stage planned for a GPU. It returns the stage registry to
// run the stages of keys with (Stages).
func ForPlanFile(op cuda.Opener, pf *exec.PlanFile, keys []string, override string, reg *stages.Registry, cacheDir string) (*stages.Registry, error) {
	dev, err := planned(pf, keys)
	if err != nil {
		return nil, err
	}
	var ms []schema.Model
	for _, key := range keys {
		n, err := pf.Node(key)
		if err != nil || n.Kind != stages.KindTrain {
			continue
		}
		var p stages.TrainParams
		if err := json.Unmarshal(n.JSON, &p); err != nil {
			return nil, fmt.Errorf("stage %s: parameters: %w", n.Name, err)
		}
		if p.Point != nil {
			ms = append(ms, p.Point.Model)
		}
	}
	device, err := Resolve(op, dev, override, TrainModels(reg), ms)
	if err != nil {
		return nil, err
	}
	if dev == schema.DeviceCUDA && device == schema.DeviceCPU {
		return nil, fmt.Errorf("--device %s: the stages were planned for a GPU (device cuda); give --device cuda:N", override)
	}
	return Stages(op, device, false, reg, ms, cacheDir)
}
