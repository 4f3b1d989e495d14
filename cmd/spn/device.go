package main

import (
	"encoding/json"
	"flag"
	"fmt"

	"github.com/spn-project/spn/models/cuda"
	"github.com/spn-project/spn/schema"
	"github.com/spn-project/spn/stages"
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

// cudaOpener is how the commands open the CUDA libraries: the system's
// loader unless a test set another.
func (a *app) cudaOpener() cuda.Opener {
	if a.cuda != nil {
		return a.cuda
	}
	return cuda.System()
}

// resolveDevice returns the device a command uses: override (--device)
// when set, else the spec's device, else "cpu". "auto" becomes "cpu":
// no model kind has a CUDA backend in this build, so no GPU is usable.
// "cuda" becomes "cuda:0". It looks at no GPU; requireDevice does.
func resolveDevice(cmd, specDevice, override string) (string, error) {
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
	default: // cpu, and auto while there is no CUDA backend
		return schema.DeviceCPU, nil
	}
}

// requireDevice checks, before any stage runs, that the resolved device
// can train: the CPU always can; a GPU needs the driver, the device and
// the CUDA backend, which this build does not have, so a CUDA device is
// an error (exit 2) naming what is missing: the loader's message when
// there is no usable GPU, else the GPU found. remote skips looking for a
// GPU here (Slurm jobs run on other machines).
func (a *app) requireDevice(cmd, device string, remote bool) error {
	kind, ordinal, err := schema.ParseDevice(device)
	if err != nil {
		return usageErrf(cmd, "device: %w", err)
	}
	if kind != schema.DeviceCUDA {
		return nil
	}
	if remote {
		return usageErrf(cmd, "device %s: %w", device, cuda.ErrNoBackend)
	}
	rt, err := cuda.Probe(a.cudaOpener())
	if err != nil {
		return usageErrf(cmd, "device %s: %w", device, err)
	}
	dev, err := rt.Device(ordinal)
	if err != nil {
		return usageErrf(cmd, "device %s: %w", device, err)
	}
	return usageErrf(cmd, "device %s: found %v, but %w", device, dev, cuda.ErrNoBackend)
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
// cannot run a stage planned for a GPU.
func (a *app) stageDevice(pf *exec.PlanFile, keys []string, override string) error {
	planned, err := planFileDevice(pf, keys)
	if err != nil {
		return usageErr("stage run", err)
	}
	device, err := resolveDevice("stage run", planned, override)
	if err != nil {
		return err
	}
	if planned == schema.DeviceCUDA && device == schema.DeviceCPU {
		return usageErrf("stage run", "--device %s: the stages were planned for a GPU (device cuda); give --device cuda:N", override)
	}
	return a.requireDevice("stage run", device, false)
}
