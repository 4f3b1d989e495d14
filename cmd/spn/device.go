package main

import (
	"flag"

	"github.com/spn-project/spn/models"
	"github.com/spn-project/spn/models/cuda"
	"github.com/spn-project/spn/schema"
	"github.com/spn-project/spn/stages"
	"github.com/spn-project/spn/stages/device"
	"github.com/spn-project/spn/stages/exec"
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

// gpusFlag registers --gpus on fs (spn run).
func gpusFlag(fs *flag.FlagSet, dst *string) {
	fs.StringVar(dst, "gpus", "", "GPUs the local executor runs the GPU train stages on, one stage per GPU at a time: ordinals `list` (0,1,3) or all (default: the device's one)")
}

// cudaOpener is how the commands open the CUDA libraries
// (device.Opener); a test may set another.
func (a *app) cudaOpener() cuda.Opener {
	if a.cuda != nil {
		return a.cuda
	}
	return device.Opener(a.getenv)
}

// resolveDevice returns the device a command uses (device.Resolve);
// errors are usage errors of cmd.
func (a *app) resolveDevice(cmd, specDevice, override string, mr models.Registry, ms []schema.Model) (string, error) {
	d, err := device.Resolve(a.cudaOpener(), specDevice, override, mr, ms)
	return d, usageErr(cmd, err)
}

// deviceStages returns the stage registry to run with on device
// (device.Stages); errors are usage errors of cmd.
func (a *app) deviceStages(cmd, dev string, remote bool, reg *stages.Registry, ms []schema.Model, cacheDir string) (*stages.Registry, error) {
	r, err := device.Stages(a.cudaOpener(), dev, remote, reg, ms, cacheDir)
	return r, usageErr(cmd, err)
}

// stageDevice returns the stage registry spn stage run runs the stages of
// keys with (device.ForPlanFile); errors are usage errors.
func (a *app) stageDevice(pf *exec.PlanFile, keys []string, override string, reg *stages.Registry, cacheDir string) (*stages.Registry, error) {
	r, err := device.ForPlanFile(a.cudaOpener(), pf, keys, override, reg, cacheDir)
	return r, usageErr("stage run", err)
}
