package main

import (
	"errors"
	"fmt"
	"runtime"

	"github.com/spn-project/spn/stages/cache"
	"github.com/spn-project/spn/stages/device"
	"github.com/spn-project/spn/stages/exec"
	"github.com/spn-project/spn/stages/memguard"
	"github.com/spn-project/spn/stages/sched"
	"github.com/spn-project/spn/stages/slurm"
	"github.com/spn-project/spn/stages/train"
)

func (a *app) run(en *engine, args []string) error {
	fs := a.newFlagSet("run", "run [FILE] [flags]   (no FILE: the built-in quickstart)")
	o := a.envFlags(fs)
	jobs := fs.Int("jobs", 0, "stages run at once (default: without --threads, the stages share the cores; else NumCPU / threads)")
	threads := fs.Int("threads", 0, "threads per stage (default: without --jobs, the stages share the cores; else NumCPU / jobs)")
	keepGoing := fs.Bool("keep-going", false, "after a failure, keep running stages that do not depend on it")
	noWait := fs.Bool("no-wait", false, "fail at once if another spn process is using the cache")
	out := fs.String("out", "", "`dir` for the tables (default results/<spec name>)")
	takeOver := takeOverFlagVar(fs)
	deviceFlag(fs, &o.device)
	var gpus string
	gpusFlag(fs, &gpus)
	ignoreMem := fs.Bool("ignore-memory-limit", false, "start a train stage even when its expected peak memory is over what this process can have")
	perGPU := fs.Int("stages-per-gpu", 1, "train `stages` a GPU runs at once, sharing it (small models leave a GPU idle between their launches)")
	sl := a.slurmFlags(fs)
	pos, err := parseArgs(fs, args)
	if err != nil {
		return usageErr("run", err)
	}
	if err := sl.Resolve(a.getenv); err != nil {
		return usageErr("run", err)
	}
	if len(pos) > 1 {
		return usageErr("run", fmt.Errorf("want at most one spec FILE, got %d arguments", len(pos)))
	}
	if err := o.resolve(a); err != nil {
		return usageErr("run", err)
	}
	j, t, err := sched.Parallelism(*jobs, *threads, runtime.NumCPU())
	if err != nil {
		return usageErr("run", err)
	}
	file := ""
	if len(pos) == 1 {
		file = pos[0]
	}
	spec, p, reg, err := a.buildPlan(en, "run", file, o)
	if err != nil {
		return err
	}
	if reg, err = a.deviceStages("run", spec.Device, sl.Executor == slurm.ExecutorSlurm, reg, device.SpecModels(spec), o.cache); err != nil {
		return err
	}
	if *perGPU != 1 {
		if err := device.CheckPerGPU(*perGPU, spec.Device, sl.Executor == slurm.ExecutorSlurm); err != nil {
			return usageErr("run", err)
		}
	}
	if gpus != "" {
		if sl.Executor == slurm.ExecutorSlurm {
			return usageErrf("run", "--gpus %s: on Slurm each job asks for its own GPU (--gres=gpu:1); --gpus is for the local executor", gpus)
		}
		if reg, err = device.Spread(a.cudaOpener(), spec.Device, gpus, reg); err != nil {
			return usageErr("run", err)
		}
	}
	en = en.withStages(reg)
	// The tables' directory must be writable before hours of compute.
	dest, err := a.prepareOut(en, "run", file, spec, *out, *takeOver)
	if err != nil {
		return err
	}
	if sl.Executor == slurm.ExecutorSlurm {
		return a.runSlurm(en, slurmRun{Spec: spec, File: file, Plan: p, Out: dest}, o, sl)
	}
	c, err := cache.Open(o.cache)
	if err != nil {
		return runtimeErr("run", err)
	}
	c.Warn = a.warnDamage("run")
	ctx, stop := a.signalContext()
	defer stop()
	lk, err := a.lockCache(ctx, "run", c, *noWait)
	if err != nil {
		// A cache that cannot be locked at all (a read-only mount) still
		// serves a plan whose stages are all cached: the tables need no
		// lock, as in spn table.
		if !errors.Is(err, cache.ErrLocked) && ctx.Err() == nil && p.Resolve(c) == nil {
			if _, toRun := p.Counts(); toRun == 0 {
				fmt.Fprintf(a.stderr, "spn run: cannot lock the cache (%v); every stage is cached, so the tables are written from it as it is\n", errors.Unwrap(err))
				if err := a.writeTables(en, spec, p, c, dest); err != nil {
					return err
				}
				return a.writeReport(en, spec, p, c, dest)
			}
		}
		return err
	}
	defer lk.Unlock()
	if err := p.Resolve(c); err != nil {
		return runtimeErr("run", err)
	}
	cached, toRun := p.Counts()
	xo, how := exec.Options{Jobs: j, Threads: t}, fmt.Sprintf("jobs=%d, threads=%d", j, t)
	if *jobs == 0 && *threads == 0 {
		xo = sharedRun(runtime.NumCPU(), sched.MemInfoFile, device.TrainModels(en.reg))
		how = fmt.Sprintf("sharing %d cores", xo.Cores)
	}
	xo.KeepGoing = *keepGoing
	xo.StagesPerGPU = *perGPU
	if !*ignoreMem {
		xo.MemoryLimit, xo.MemoryLimitSource = memguard.Limit(a.getenv, sched.MemInfoFile, memguard.CgroupMemoryMax)
		xo.MemoryHint = " (--ignore-memory-limit starts it anyway)"
		if xo.Memory == nil {
			xo.Memory = train.PlanMemory(device.TrainModels(en.reg))
		}
	}
	fmt.Fprintf(a.stderr, "spn run: %s: %d stages, %d cached, %d to run (%s)\n",
		specLabel(spec, file), len(p.Nodes), cached, toRun, how)
	if err := a.execute(ctx, "run", stagesRun{Plan: p, Cache: c, Reg: reg}, o, xo); err != nil {
		if *keepGoing && ctx.Err() == nil {
			return a.keptGoing(en, spec, p, c, dest, err)
		}
		return err
	}
	if err := a.writeTables(en, spec, p, c, dest); err != nil {
		return err
	}
	return a.writeReport(en, spec, p, c, dest)
}
