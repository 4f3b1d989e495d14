package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spn-project/spn/schema"
	"github.com/spn-project/spn/stages/cache"
	"github.com/spn-project/spn/stages/plan"
	"github.com/spn-project/spn/stages/slurm"
)

// slurmOpts are spn run's executor flags (slurm.Flags); tests may
// replace the Slurm commands (runner).
type slurmOpts struct {
	slurm.Flags
	runner slurm.Runner
}

// slurmFlags registers the executor flags on fs.
func (a *app) slurmFlags(fs *flag.FlagSet) *slurmOpts {
	s := &slurmOpts{}
	fs.StringVar(&s.Executor, "executor", "", "where stages run: local or slurm (env "+slurm.EnvExecutor+", default local)")
	fs.BoolVar(&s.Wait, "wait", false, "slurm: follow the jobs until the DAG is done, then write the tables")
	fs.BoolVar(&s.Hold, "hold", false, "slurm: submit the jobs held (release them with scontrol release)")
	fs.BoolVar(&s.DryRun, "dry-run", false, "slurm: print the sbatch commands instead of submitting")
	fs.StringVar(&s.Partition, "partition", "", "slurm: partition of every job (overrides the spec's executor.slurm.partition)")
	fs.StringVar(&s.Group, "group", "", "slurm: array (job arrays per DAG level and kind) or stage (one job per stage); default the spec's")
	fs.IntVar(&s.MaxArray, "max-array", 0, "slurm: most tasks per job array (default the spec's, 1000)")
	fs.StringVar(&s.Binary, "spn-binary", "", "slurm: the spn `executable` jobs run, on the shared filesystem (default this one)")
	fs.DurationVar(&s.Poll, "poll", 5*time.Second, "slurm: how often --wait looks at the queue")
	fs.StringVar(&s.CalFile, "calibration", "", "slurm: calibration `file` for the kinds whose time is \"auto\" (default calibration.json beside the spec; spn calibrate writes it)")
	return s
}

// slurmRun is what runSlurm submits and waitSlurm follows: the spec read
// from File ("" for the built-in quickstart), its plan, and the directory
// the tables are written to.
type slurmRun struct {
	Spec *schema.Spec
	File string
	Plan *plan.Plan
	Out  tablesDir
}

// runSlurm submits the plan's missing stages to Slurm and, with --wait,
// follows them and writes the tables.
func (a *app) runSlurm(en *engine, r slurmRun, o *envOpts, s *slurmOpts) error {
	spec, p, file := r.Spec, r.Plan, r.File
	c, err := cache.Open(o.cache)
	if err != nil {
		return runtimeErr("run", err)
	}
	ctx, stop := a.signalContext()
	defer stop()
	if err := p.Resolve(c); err != nil {
		return runtimeErr("run", err)
	}
	runner := s.runner
	if runner == nil {
		runner = slurm.Commands{}
	}
	var active map[string]slurm.Active
	if !s.DryRun || slurm.Available() {
		act, dead, err := slurm.Queue(ctx, runner, c)
		switch {
		case err != nil && s.DryRun:
			fmt.Fprintf(a.stderr, "spn run: %v (dry run: queued jobs are not taken into account)\n", err)
		case err != nil:
			return runtimeErr("run", err)
		}
		active = act
		if len(dead) > 0 && !s.DryRun {
			fmt.Fprintf(a.stderr, "spn run: cancelling %d jobs whose inputs failed (%s); their stages are submitted again\n", len(dead), strings.Join(dead, ", "))
			if err := slurm.Cancel(ctx, runner, dead); err != nil {
				return runtimeErr("run", err)
			}
		}
	}
	bin := s.Binary
	if bin == "" {
		if bin, err = os.Executable(); err != nil {
			return runtimeErrf("run", "finding the spn executable for the jobs: %w (give --spn-binary)", err)
		}
	}
	cfg := s.Config(spec)
	var est *slurm.Estimates
	if cfg.AutoTime() {
		if est, err = s.Estimates(spec, p, file); err != nil {
			return runtimeErr("run", err)
		}
	}
	stageArgs := o.stageArgs(c.Root)
	cached, _ := p.Counts()
	queued := slurm.InQueue(p, active)
	start := time.Now()
	sub, err := slurm.Submit(ctx, p, c, active, slurm.Options{
		Config: cfg, Binary: bin, StageArgs: stageArgs, Spec: spec.Name,
		Hold: s.Hold, DryRun: s.DryRun, Runner: runner, Estimates: est,
	})
	if sub != nil && s.DryRun {
		for _, j := range sub.Jobs {
			fmt.Fprintf(a.stdout, "sbatch %s   # %s: %d stages in %d tasks\n", strings.Join(j.Args, " "), j.ID, j.Stages(), len(j.Tasks))
		}
	}
	if err != nil {
		if sub != nil && len(sub.Jobs) > 0 {
			return joinErrs([]error{runtimeErr("run", err),
				runtimeErrf("run", "jobs submitted before the error stay queued; run again to submit the rest")})
		}
		return runtimeErr("run", err)
	}
	verb := "submitted"
	switch {
	case s.DryRun:
		verb = "would submit"
	case s.Hold:
		verb = "submitted (held)"
	}
	fmt.Fprintf(a.stderr, "spn run: %s: %d stages, %d cached, %d queued or running, %d %s as %d jobs (%d array tasks) in %.2f s\n",
		specLabel(spec, file), len(p.Nodes), cached, queued, sub.Stages, verb, len(sub.Jobs), sub.Tasks(), time.Since(start).Seconds())
	if sub.Dir != "" && !s.DryRun {
		fmt.Fprintf(a.stderr, "spn run: job files and logs in %s\n", sub.Dir)
	}
	if !s.Wait {
		if !s.DryRun {
			f := file
			if f == "" {
				f = "SPEC" // the built-in quickstart has no file to name
			}
			if o.device != "" {
				f += " --device " + o.device
			}
			fmt.Fprintf(a.stderr, "spn run: follow with 'spn status %s', then 'spn table %s' (or run again with --wait)\n", f, f)
		}
		return nil
	}
	return a.waitSlurm(ctx, en, r, c, runner, s.Poll)
}

// waitSlurm follows spn's jobs on the cache until none of the plan's
// stages is queued or running, reports what did not complete, and writes
// the tables (cells of experiments that did not complete marked, as after
// a local run with --keep-going). r.File is not read.
func (a *app) waitSlurm(ctx context.Context, en *engine, r slurmRun, c *cache.Cache, runner slurm.Runner, poll time.Duration) error {
	spec, p, out := r.Spec, r.Plan, r.Out
	last := ""
	_, err := slurm.Wait(ctx, runner, p, c, poll, func(t map[slurm.State]int) {
		line := fmt.Sprintf("%d/%d stages done, %d running, %d queued, %d failed",
			t[slurm.Cached], len(p.Nodes), t[slurm.Running], t[slurm.Queued], t[slurm.Failed])
		if line != last {
			fmt.Fprintf(a.stderr, "spn run: %s\n", line)
			last = line
		}
	})
	switch {
	case err != nil && ctx.Err() != nil:
		return runtimeErrf("run", "stopped waiting; the jobs keep running (spn status shows them)")
	case err != nil:
		return runtimeErr("run", err)
	}
	if err := p.Resolve(c); err != nil {
		return runtimeErr("run", err)
	}
	if _, toRun := p.Counts(); toRun > 0 {
		var errs []error
		for _, m := range slurm.Outcome(p, c) {
			errs = append(errs, runtimeErr("run", errors.New(m)))
		}
		errs = append(errs, runtimeErrf("run", "%d of %d stages did not complete; fix the cause and run again to resubmit them", toRun, len(p.Nodes)))
		// The jobs ran every stage that did not depend on a failure, as
		// a local run with --keep-going does.
		return a.keptGoing(en, spec, p, c, out, joinErrs(errs))
	}
	if err := a.writeTables(en, spec, p, c, out); err != nil {
		return err
	}
	return a.writeReport(en, spec, p, c, out)
}

// stageArgs are the flags every `spn stage run` of a Slurm job gets, so that
// the jobs see the cache, data, mirror, log level and data-figure override
// of the `spn run` that submitted them.
func (o *envOpts) stageArgs(cacheRoot string) []string {
	args := []string{"--cache", cacheRoot, "--data-dir", o.dataDir, "--log-level", o.logLevel}
	if o.mirror != "" {
		args = append(args, "--mirror", o.mirror)
	}
	if o.acceptMismatch {
		args = append(args, "--accept-data-mismatch")
	}
	return args
}
