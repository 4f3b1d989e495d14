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
	"github.com/spn-project/spn/stages/cost"
	"github.com/spn-project/spn/stages/plan"
	"github.com/spn-project/spn/stages/slurm"
)

// envExecutor names the environment variable that picks the executor.
const envExecutor = "SPN_EXECUTOR"

// Executors.
const (
	executorLocal = "local"
	executorSlurm = "slurm"
)

// slurmOpts are spn run's executor flags.
type slurmOpts struct {
	executor  string
	wait      bool
	hold      bool
	dryRun    bool
	partition string
	group     string
	maxArray  int
	binary    string
	calFile   string
	poll      time.Duration
	runner    slurm.Runner // tests may replace the Slurm commands
}

// slurmFlags registers the executor flags on fs.
func (a *app) slurmFlags(fs *flag.FlagSet) *slurmOpts {
	s := &slurmOpts{}
	fs.StringVar(&s.executor, "executor", "", "where stages run: local or slurm (env "+envExecutor+", default local)")
	fs.BoolVar(&s.wait, "wait", false, "slurm: follow the jobs until the DAG is done, then write the tables")
	fs.BoolVar(&s.hold, "hold", false, "slurm: submit the jobs held (release them with scontrol release)")
	fs.BoolVar(&s.dryRun, "dry-run", false, "slurm: print the sbatch commands instead of submitting")
	fs.StringVar(&s.partition, "partition", "", "slurm: partition of every job (overrides the spec's executor.slurm.partition)")
	fs.StringVar(&s.group, "group", "", "slurm: array (job arrays per DAG level and kind) or stage (one job per stage); default the spec's")
	fs.IntVar(&s.maxArray, "max-array", 0, "slurm: most tasks per job array (default the spec's, 1000)")
	fs.StringVar(&s.binary, "spn-binary", "", "slurm: the spn `executable` jobs run, on the shared filesystem (default this one)")
	fs.DurationVar(&s.poll, "poll", 5*time.Second, "slurm: how often --wait looks at the queue")
	fs.StringVar(&s.calFile, "calibration", "", "slurm: calibration `file` for the kinds whose time is \"auto\" (default calibration.json beside the spec; spn calibrate writes it)")
	return s
}

// resolve picks the executor and checks the flags.
func (s *slurmOpts) resolve(a *app) error {
	if s.executor == "" {
		s.executor = a.getenv(envExecutor)
	}
	if s.executor == "" {
		s.executor = executorLocal
	}
	switch s.executor {
	case executorLocal:
		if s.wait || s.hold || s.dryRun || s.partition != "" || s.group != "" || s.maxArray != 0 || s.binary != "" || s.calFile != "" {
			return fmt.Errorf("--wait, --hold, --dry-run, --partition, --group, --max-array, --spn-binary and --calibration need --executor slurm")
		}
	case executorSlurm:
		if s.hold && s.wait {
			return fmt.Errorf("--hold and --wait exclude each other: held jobs never finish until released")
		}
		if s.group != "" && s.group != schema.SlurmGroupArray && s.group != schema.SlurmGroupStage {
			return fmt.Errorf("--group: %q is not array or stage", s.group)
		}
		if s.maxArray < 0 {
			return fmt.Errorf("--max-array must be positive")
		}
		if s.poll <= 0 {
			return fmt.Errorf("--poll must be positive")
		}
	default:
		return fmt.Errorf("--executor (or %s): %q is not local or slurm", envExecutor, s.executor)
	}
	return nil
}

// config is the spec's Slurm settings with the command line's overrides.
func (s *slurmOpts) config(spec *schema.Spec) schema.Slurm {
	cfg := spec.Executor.Slurm
	if s.partition != "" {
		cfg.Partition = s.partition
	}
	if s.group != "" {
		cfg.Group = s.group
	}
	if s.maxArray > 0 {
		cfg.MaxArray = s.maxArray
	}
	return cfg
}

// estimates reads the calibration (--calibration, else calibration.json
// beside the spec file) for the kinds whose time limit is "auto" and
// returns its estimates of p's stages.
func (s *slurmOpts) estimates(spec *schema.Spec, p *plan.Plan, file string) (*slurm.Estimates, error) {
	cal, f, err := cost.ReadFor(file, s.calFile, spec.Device)
	if err != nil {
		return nil, runtimeErrf("run", "executor.slurm: a time is %q: %w", schema.SlurmTimeAuto, err)
	}
	secs, _ := cal.Seconds(p)
	return &slurm.Estimates{Seconds: secs, Threads: max(cal.Threads, 1), Source: f}, nil
}

// runSlurm submits the plan's missing stages to Slurm and, with --wait,
// follows them and writes the tables.
func (a *app) runSlurm(en *engine, spec *schema.Spec, p *plan.Plan, file string, o *envOpts, s *slurmOpts, out tablesDir) error {
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
	if !s.dryRun || slurm.Available() {
		act, dead, err := slurm.Queue(ctx, runner, c)
		switch {
		case err != nil && s.dryRun:
			fmt.Fprintf(a.stderr, "spn run: %v (dry run: queued jobs are not taken into account)\n", err)
		case err != nil:
			return runtimeErr("run", err)
		}
		active = act
		if len(dead) > 0 && !s.dryRun {
			fmt.Fprintf(a.stderr, "spn run: cancelling %d jobs whose inputs failed (%s); their stages are submitted again\n", len(dead), strings.Join(dead, ", "))
			if err := slurm.Cancel(ctx, runner, dead); err != nil {
				return runtimeErr("run", err)
			}
		}
	}
	bin := s.binary
	if bin == "" {
		if bin, err = os.Executable(); err != nil {
			return runtimeErrf("run", "finding the spn executable for the jobs: %w (give --spn-binary)", err)
		}
	}
	cfg := s.config(spec)
	var est *slurm.Estimates
	if cfg.AutoTime() {
		if est, err = s.estimates(spec, p, file); err != nil {
			return err
		}
	}
	stageArgs := o.stageArgs(c.Root)
	cached, _ := p.Counts()
	queued := 0
	for _, n := range p.Nodes {
		if _, ok := active[n.Key]; ok && n.Status != plan.Cached {
			queued++
		}
	}
	start := time.Now()
	sub, err := slurm.Submit(ctx, p, c, active, slurm.Options{
		Config: cfg, Binary: bin, StageArgs: stageArgs, Spec: spec.Name,
		Hold: s.hold, DryRun: s.dryRun, Runner: runner, Estimates: est,
	})
	if sub != nil && s.dryRun {
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
	tasks := 0
	for _, j := range sub.Jobs {
		tasks += len(j.Tasks)
	}
	verb := "submitted"
	switch {
	case s.dryRun:
		verb = "would submit"
	case s.hold:
		verb = "submitted (held)"
	}
	fmt.Fprintf(a.stderr, "spn run: %s: %d stages, %d cached, %d queued or running, %d %s as %d jobs (%d array tasks) in %.2f s\n",
		specLabel(spec, file), len(p.Nodes), cached, queued, sub.Stages, verb, len(sub.Jobs), tasks, time.Since(start).Seconds())
	if sub.Dir != "" && !s.dryRun {
		fmt.Fprintf(a.stderr, "spn run: job files and logs in %s\n", sub.Dir)
	}
	if !s.wait {
		if !s.dryRun {
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
	return a.waitSlurm(ctx, en, spec, p, c, runner, s.poll, out)
}

// waitSlurm follows spn's jobs on the cache until none of the plan's
// stages is queued or running, reports what did not complete, and writes
// the tables (cells of experiments that did not complete marked, as after
// a local run with --keep-going).
func (a *app) waitSlurm(ctx context.Context, en *engine, spec *schema.Spec, p *plan.Plan, c *cache.Cache,
	runner slurm.Runner, poll time.Duration, out tablesDir) error {
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
