package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/spn-project/spn/models"
	"github.com/spn-project/spn/models/cuda"
	"github.com/spn-project/spn/schema"
	"github.com/spn-project/spn/stages"
	"github.com/spn-project/spn/stages/exec"
	"github.com/spn-project/spn/stages/train"
)

// deviceFlag registers --device on fs, for the commands that train.
func deviceFlag(fs *flag.FlagSet, dst *string) {
	fs.StringVar(dst, "device", "", "compute `device`: cpu, auto, cuda or cuda:N (default: the spec's device, else cpu)")
}

// planDeviceFlag registers --device on fs, for the commands that read a
// run's stages (plan, status, table, predict): the device decides the
// train stages' keys, so a run given --device is found with the same.
func planDeviceFlag(fs *flag.FlagSet, dst *string) {
	fs.StringVar(dst, "device", "", "the `device` the stages run or ran on, as given to spn run (default: the spec's device, else cpu)")
}

// envCUDALibs names the environment variable that makes spn open the
// CUDA libraries (libcuda.so.1, libnvrtc.so.13 or .12, libcublas.so.13
// or .12) from one folder, by those file names, instead of through the
// dynamic loader's search. Slurm jobs inherit it from the spn run that
// submits them (sbatch exports the environment by default).
const envCUDALibs = "SPN_CUDA_LIBS"

// cudaOpener is how the commands open the CUDA libraries: the folder
// $SPN_CUDA_LIBS when set, else the system's loader; a test may set
// another.
func (a *app) cudaOpener() cuda.Opener {
	if a.cuda != nil {
		return a.cuda
	}
	if dir := a.getenv(envCUDALibs); dir != "" {
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
func (o dirOpener) Where() string { return fmt.Sprintf("%s=%s only", envCUDALibs, o.dir) }

// resolveDevice returns the device a command uses: override (--device)
// when set, else the spec's device, else "cpu". "cuda" becomes "cuda:0".
// "auto" becomes "cuda:0" when this machine has a usable GPU 0 and every
// model of ms (the spec's grid points, or the bench model) has device
// math there (mr.CheckDevice), else "cpu" (autoDevice): the device is part
// of the train stages' keys, so every command resolves "auto" the same
// way on one machine. Other values look at no GPU; findGPU does.
func (a *app) resolveDevice(cmd, specDevice, override string, mr models.Registry, ms []schema.Model) (string, error) {
	d, what := specDevice, "device"
	if override != "" {
		d, what = override, "--device"
	}
	if d == "" {
		return schema.DeviceCPU, nil
	}
	kind, ordinal, err := schema.ParseDevice(d)
	if err != nil {
		return "", usageErrf(cmd, "%s: %w", what, err)
	}
	switch kind {
	case schema.DeviceCUDA:
		return fmt.Sprintf("%s:%d", schema.DeviceCUDA, ordinal), nil
	case schema.DeviceAuto:
		return a.autoDevice(mr, ms), nil
	default:
		return schema.DeviceCPU, nil
	}
}

// autoDevice is what "auto" resolves to on this machine for the models
// ms: GPU 0 when the CUDA libraries find it, its compute mode lets a
// process use it (not prohibited) and every model trains on it, else
// the CPU.
func (a *app) autoDevice(mr models.Registry, ms []schema.Model) string {
	gpu := schema.DeviceCUDA + ":0"
	rt, err := cuda.Probe(a.cudaOpener())
	if err != nil {
		return schema.DeviceCPU
	}
	if _, err := rt.UsableDevice(0); err != nil {
		return schema.DeviceCPU
	}
	if checkDeviceModels(mr, ms, gpu) != nil {
		return schema.DeviceCPU
	}
	return gpu
}

// trainModels returns the model registry the train kind of reg trains
// with (spn's own train kind's when reg has another, as in tests).
func trainModels(reg *stages.Registry) models.Registry {
	if k, ok := reg.Get(stages.KindTrain); ok {
		if tk, ok := k.(train.Kind); ok {
			return tk.Registry()
		}
	}
	return (train.Kind{}).Registry()
}

// findGPU looks for GPU ordinal through the CUDA libraries of this
// machine: an error (exit 2) naming what is missing, the loader's message
// when there is no GPU, the compute mode when no process may use it (a
// GPU that another process holds in exclusive-process mode shows when a
// stage opens it).
func (a *app) findGPU(cmd, device string, ordinal int) (cuda.Device, error) {
	rt, err := cuda.Probe(a.cudaOpener())
	if err != nil {
		return cuda.Device{}, usageErrf(cmd, "device %s: %w", device, err)
	}
	dev, err := rt.UsableDevice(ordinal)
	if err != nil {
		return cuda.Device{}, usageErrf(cmd, "device %s: %w", device, err)
	}
	return dev, nil
}

// deviceStages checks, before any stage runs, that the resolved device
// can train the models ms, and returns the stage registry to run with:
// reg on the CPU; on a GPU, reg with a train kind that trains on it,
// caching the compiled kernels under cacheDir/ptx. A GPU needs the
// driver, the device, and device math for every model's kind and options
// (models.Registry.CheckDevice; the task is the dataset's, which the
// stage checks); otherwise it is an error (exit 2) naming what is
// missing. remote (Slurm) checks the models only and returns reg: the
// jobs train on the GPUs of their nodes (spn stage run), and the machine
// that submits them needs none.
func (a *app) deviceStages(cmd, device string, remote bool, reg *stages.Registry, ms []schema.Model, cacheDir string) (*stages.Registry, error) {
	kind, ordinal, err := schema.ParseDevice(device)
	if err != nil {
		return nil, usageErrf(cmd, "device: %w", err)
	}
	if kind != schema.DeviceCUDA {
		return reg, nil
	}
	k, _ := reg.Get(stages.KindTrain)
	tk, isTrain := k.(train.Kind)
	if remote {
		if err := checkDeviceModels(trainModels(reg), ms, device); err != nil {
			return nil, usageErr(cmd, err)
		}
		return reg, nil
	}
	dev, err := a.findGPU(cmd, device, ordinal)
	if err != nil {
		return nil, err
	}
	if !isTrain { // a train kind of its own (tests)
		return nil, usageErrf(cmd, "device %s: found %v, but %w", device, dev, cuda.ErrNoBackend)
	}
	if err := checkDeviceModels(tk.Registry(), ms, device); err != nil {
		return nil, usageErr(cmd, err)
	}
	tk.GPU = &train.GPU{Opener: a.cudaOpener(), Ordinals: []int{ordinal}, PTXDir: filepath.Join(cacheDir, "ptx")}
	return reg.With(tk), nil
}

// gpusFlag registers --gpus on fs (spn run).
func gpusFlag(fs *flag.FlagSet, dst *string) {
	fs.StringVar(dst, "gpus", "", "GPUs the local executor runs the GPU train stages on, one stage per GPU at a time: ordinals `list` (0,1,3) or all (default: the device's one)")
}

// spreadGPUs makes the GPU train stages of reg, deviceStages' registry
// for device (local, cuda:N), train on the GPUs list names instead of
// GPU N alone: ordinals separated by commas, or "all" of this machine's.
// Each must exist and be of one model (name and compute capability) with
// the others: a stage's result would otherwise depend on which GPU the
// executor gave it. Errors are usage errors (exit 2).
func (a *app) spreadGPUs(cmd, device, list string, reg *stages.Registry) (*stages.Registry, error) {
	bad := func(format string, args ...any) error {
		return usageErrf(cmd, "--gpus %s: "+format, append([]any{list}, args...)...)
	}
	k, _ := reg.Get(stages.KindTrain)
	tk, ok := k.(train.Kind)
	if kind, _, err := schema.ParseDevice(device); err != nil || kind != schema.DeviceCUDA || !ok || tk.GPU == nil {
		return nil, bad("the device is %s; --gpus spreads the train stages of a GPU device (--device cuda)", device)
	}
	rt, err := cuda.Probe(a.cudaOpener())
	if err != nil {
		return nil, bad("%w", err)
	}
	ordinals, err := parseGPUs(list, rt.Devices)
	if err != nil {
		return nil, bad("%w", err)
	}
	devs := make([]cuda.Device, len(ordinals))
	for i, o := range ordinals {
		if devs[i], err = rt.UsableDevice(o); err != nil {
			return nil, bad("%w", err)
		}
	}
	if err := oneModel(devs); err != nil {
		return nil, bad("%w", err)
	}
	gpu := *tk.GPU
	gpu.Ordinals = ordinals
	tk.GPU = &gpu
	return reg.With(tk), nil
}

// checkPerGPU checks --stages-per-gpu k for a run on device by executor.
func checkPerGPU(k int, device, executor string) error {
	kind, _, err := schema.ParseDevice(device)
	switch {
	case k < 1:
		return fmt.Errorf("--stages-per-gpu %d: want at least 1", k)
	case err != nil || kind != schema.DeviceCUDA:
		return fmt.Errorf("--stages-per-gpu %d: the device is %s; it shares a GPU (--device cuda)", k, device)
	case executor == executorSlurm:
		return fmt.Errorf("--stages-per-gpu %d: on Slurm each job has its GPU; it is for the local executor", k)
	}
	return nil
}

// parseGPUs parses --gpus: "all" (GPUs 0 to devices−1) or distinct
// ordinals separated by commas, in the order given.
func parseGPUs(list string, devices int) ([]int, error) {
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

// oneModel checks that devs are GPUs of one model: the same name and
// compute capability, so that a stage's bits do not depend on which of
// them it trains on.
func oneModel(devs []cuda.Device) error {
	for _, d := range devs[1:] {
		if d.Name != devs[0].Name || d.Major != devs[0].Major || d.Minor != devs[0].Minor {
			return fmt.Errorf("cuda:%d is %s (compute capability %d.%d) and cuda:%d %s (%d.%d): results would depend on which GPU a stage ran on; give GPUs of one model",
				devs[0].Ordinal, devs[0].Name, devs[0].Major, devs[0].Minor, d.Ordinal, d.Name, d.Major, d.Minor)
		}
	}
	return nil
}

// checkDeviceModels checks that every model of ms has device math on
// device (models.Registry.CheckDevice).
func checkDeviceModels(mr models.Registry, ms []schema.Model, device string) error {
	for _, m := range ms {
		if err := mr.CheckDevice(models.Config{Model: m}, device); err != nil {
			return err
		}
	}
	return nil
}

// specModels returns the model sections of spec's grid points.
func specModels(spec *schema.Spec) []schema.Model {
	var ms []schema.Model
	for _, e := range spec.Experiments {
		for _, pt := range e.Points {
			ms = append(ms, pt.Model)
		}
	}
	return ms
}

// planFileDevice is the device that the stages of pf train on: "cuda"
// when a train stage of keys was planned for a GPU, else "cpu".
func planFileDevice(pf *exec.PlanFile, keys []string) (string, error) {
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

// stageDevice checks the device of spn stage run: --device (override)
// when set, else the device the stages were planned for. A CPU device
// cannot run a stage planned for a GPU. It returns the stage registry to
// run the stages of keys with (deviceStages).
func (a *app) stageDevice(pf *exec.PlanFile, keys []string, override string, reg *stages.Registry, cacheDir string) (*stages.Registry, error) {
	planned, err := planFileDevice(pf, keys)
	if err != nil {
		return nil, usageErr("stage run", err)
	}
	var ms []schema.Model
	for _, key := range keys {
		n, err := pf.Node(key)
		if err != nil || n.Kind != stages.KindTrain {
			continue
		}
		var p stages.TrainParams
		if err := json.Unmarshal(n.JSON, &p); err != nil {
			return nil, usageErrf("stage run", "stage %s: parameters: %w", n.Name, err)
		}
		if p.Point != nil {
			ms = append(ms, p.Point.Model)
		}
	}
	device, err := a.resolveDevice("stage run", planned, override, trainModels(reg), ms)
	if err != nil {
		return nil, err
	}
	if planned == schema.DeviceCUDA && device == schema.DeviceCPU {
		return nil, usageErrf("stage run", "--device %s: the stages were planned for a GPU (device cuda); give --device cuda:N", override)
	}
	return a.deviceStages("stage run", device, false, reg, ms, cacheDir)
}
