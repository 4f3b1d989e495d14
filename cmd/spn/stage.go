package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/spn-project/spn/stages/cache"
	"github.com/spn-project/spn/stages/exec"
	"github.com/spn-project/spn/stages/slurm"
)

func cmdStage(a *app, args []string) error { return a.stage(realEngine(), args) }

// stage implements `spn stage run`: run planned stages, one by one, each
// in this process, from a plan file in the cache. Slurm jobs run it; any
// scheduler (or a test) can.
func (a *app) stage(en *engine, args []string) error {
	if len(args) == 0 || args[0] != "run" {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
			fmt.Fprintln(a.stderr, "Usage: spn stage run [KEY...] --plan FILE [--tasks FILE [--task N]] [flags]")
			return nil
		}
		return usageErr("stage", errors.New("want a subcommand: spn stage run [KEY...] --plan FILE"))
	}
	fs := a.newFlagSet("stage run", "stage run [KEY...] --plan FILE [--tasks FILE [--task N]] [flags]\n\n"+
		"Runs the given stages of a plan file (written by spn run --executor slurm) one\n"+
		"after the other, each under its per-stage lock; a cached stage is not run again.\n"+
		"With --tasks, the keys are line N+1 of FILE (N from --task or SLURM_ARRAY_TASK_ID).")
	o := a.envFlags(fs)
	planFile := fs.String("plan", "", "plan `file` holding the stages")
	tasksFile := fs.String("tasks", "", "tasks `file`: one line of stage keys per task")
	task := fs.Int("task", -1, "task index in the tasks file (default $SLURM_ARRAY_TASK_ID)")
	threads := fs.Int("threads", 0, "kernel threads of each stage (default $SLURM_CPUS_PER_TASK, else NumCPU)")
	deviceFlag(fs, &o.device)
	keys, err := parseArgs(fs, args[1:])
	if err != nil {
		return usageErr("stage run", err)
	}
	if err := o.resolve(a); err != nil {
		return usageErr("stage run", err)
	}
	if *planFile == "" {
		return usageErr("stage run", errors.New("--plan FILE is required"))
	}
	if *tasksFile != "" {
		if len(keys) > 0 {
			return usageErr("stage run", errors.New("give stage KEYs or --tasks, not both"))
		}
		var ue bool
		if keys, ue, err = slurm.TaskKeys(*tasksFile, *task, a.getenv); ue {
			return usageErr("stage run", err)
		} else if err != nil {
			return runtimeErr("stage run", err)
		}
	}
	if len(keys) == 0 {
		return usageErr("stage run", errors.New("no stage KEY given"))
	}
	t := slurm.TaskThreads(*threads, a.getenv)
	pf, err := exec.ReadPlanFile(*planFile)
	if err != nil {
		return usageErr("stage run", err)
	}
	reg, err := a.stageDevice(pf, keys, o.device, en.reg, o.cache)
	if err != nil {
		pf.RecordFailures(o.cache, keys, err)
		return err
	}
	en = en.withStages(reg)
	c, err := cache.Open(o.cache)
	if err != nil {
		return runtimeErr("stage run", err)
	}
	log := o.logger(a.stderr)
	ctx, stop := a.signalContext()
	defer stop()
	// A stage that fails is reported and the next one runs; the exit
	// status says whether any failed.
	var failed error
	for _, key := range keys {
		n, err := pf.Node(key)
		if err != nil {
			return usageErrf("stage run", "%s: %w", *planFile, err)
		}
		if missing := exec.MissingInput(c, n); missing != "" {
			fmt.Fprintf(a.stderr, "spn stage run: %s: input %s is not in the cache %s\n", n.Name, missing, c.Root)
			failed = reported(exitFail)
			continue
		}
		start := time.Now()
		ran, err := exec.RunNode(ctx, c, en.reg, n, exec.NodeOptions{
			Env: o.env(), Threads: t, Log: log, SPNVersion: version,
		})
		switch {
		case ctx.Err() != nil:
			return runtimeErrf("stage run", "%s: interrupted; nothing of it is kept", n.Name)
		case err != nil:
			fmt.Fprintf(a.stderr, "spn stage run: failed %s: %v\n", n.Name, err)
			failed = reported(exitFail)
		case ran:
			fmt.Fprintf(a.stderr, "spn stage run: %s: done in %.1f s\n", n.Name, time.Since(start).Seconds())
		default:
			fmt.Fprintf(a.stderr, "spn stage run: %s: already in the cache\n", n.Name)
		}
	}
	return failed
}
