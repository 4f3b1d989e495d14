package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spn-project/spn/schema"
	"github.com/spn-project/spn/stages"
	"github.com/spn-project/spn/stages/cache"
	"github.com/spn-project/spn/stages/cost"
	"github.com/spn-project/spn/stages/device"
	"github.com/spn-project/spn/stages/exec"
	"github.com/spn-project/spn/stages/plan"
)

// writeCost prints the cost estimate of p.
func writeCost(w io.Writer, cal *cost.Calibration, calFile string, p *plan.Plan) error {
	est, err := cal.Estimate(p)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "cost estimate from %s (measured %s on %s, device %s, %d CPUs, %d thread(s) per stage):\n",
		calFile, cal.Date.Format("2006-01-02"), cal.Host, cal.OnDevice(), cal.CPUs, max(cal.Threads, 1))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	unit := "CPU-hours"
	gpu := cal.OnGPU()
	if gpu {
		unit = "hours"
	}
	fmt.Fprintf(tw, "kind\tstages\tto run\t%s (all)\t%s (to run)\t\n", unit, unit)
	for _, k := range est.Kinds {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.1f\t%.1f\t\n", k.Kind, k.Stages, k.ToRun, k.Hours, k.ToRunHours)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "Train stages count their maximum epochs (an upper bound with early stopping).")
	if gpu {
		fmt.Fprintf(w, "On %s, train stages count GPU-hours (one GPU each), the other kinds CPU-hours; the total adds both.\n", cal.OnDevice())
	}
	for _, m := range est.Missing {
		fmt.Fprintf(w, "not calibrated (counted as 0): %s; run spn calibrate on this spec\n", m)
	}
	for _, m := range est.Approximate {
		fmt.Fprintf(w, "estimated from another configuration: %s; run spn calibrate on this spec\n", m)
	}
	return nil
}

// writeSummary prints one line per stage kind of p: cached, to run and,
// when there is a calibration (calFile, or the default beside specFile if
// it exists), the hours of the stages to run.
func writeSummary(w io.Writer, specFile, calFile, device string, p *plan.Plan) error {
	kinds, cal, est, err := cost.Summary(p, specFile, calFile, device)
	if err != nil {
		return err
	}
	unit := "CPU-hours"
	if cal != nil && cal.OnGPU() {
		unit = "hours (GPU-hours for train)"
	}
	for _, k := range kinds {
		line := fmt.Sprintf("%s: %d cached, %d to run", k.Kind, k.Stages-k.ToRun, k.ToRun)
		if cal != nil {
			line += fmt.Sprintf(", %.1f %s to run", k.ToRunHours, unit)
		}
		if _, err := fmt.Fprintln(w, line); err != nil {
			return err
		}
	}
	if est != nil && len(est.Missing) > 0 {
		fmt.Fprintf(w, "not calibrated (counted as 0): %s\n", strings.Join(est.Missing, "; "))
	}
	return nil
}

func cmdCalibrate(a *app, args []string) error { return a.calibrate(realEngine(), args) }

// calibrate implements `spn calibrate SPEC`: train every distinct dataset
// × model kind × k of the spec for a few epochs on this machine and write
// the per-epoch times that spn plan --cost uses.
func (a *app) calibrate(en *engine, args []string) error {
	fs := a.newFlagSet("calibrate", "calibrate FILE [--out FILE] [--epochs N] [flags]\n\n"+
		"Trains each dataset × model kind × k × batch size × N_∞ of the spec (its first grid point) for\n"+
		"--epochs epochs on one split, one stage at a time, and writes the measured\n"+
		"seconds per epoch (and generate/precompute seconds) for spn plan --cost.\n"+
		"Entries of an existing calibration file for other configurations are kept.")
	o := a.envFlags(fs)
	outFile := fs.String("out", "", "calibration `file` to write (default calibration.json beside the spec)")
	epochs := fs.Int("epochs", 3, "epochs per measured configuration (at least 2; the first is not counted)")
	threads := fs.Int("threads", 1, "kernel threads per stage (CPU-hours = seconds × threads)")
	proxGraphs := fs.Int("prox-graphs", 1000, "measure h-Prox datasets with at most this many graphs (times scale linearly)")
	noWait := fs.Bool("no-wait", false, "fail at once if another spn process is using the cache")
	deviceFlag(fs, &o.device)
	pos, err := parseArgs(fs, args)
	if err != nil {
		return usageErr("calibrate", err)
	}
	if len(pos) != 1 {
		return usageErr("calibrate", fmt.Errorf("want one spec FILE, got %d arguments", len(pos)))
	}
	if *epochs < 2 || *threads < 1 || *proxGraphs < 2 {
		return usageErr("calibrate", fmt.Errorf("--epochs must be at least 2, --threads at least 1, --prox-graphs at least 2"))
	}
	if err := o.resolve(a); err != nil {
		return usageErr("calibrate", err)
	}
	spec, err := a.loadSpec(en, "calibrate", pos[0], o)
	if err != nil {
		return err
	}
	if spec.Device, err = a.resolveDevice("calibrate", spec.Device, o.device, device.TrainModels(en.reg), device.SpecModels(spec)); err != nil {
		return err
	}
	reg, err := a.deviceStages("calibrate", spec.Device, false, en.reg, device.SpecModels(spec), o.cache)
	if err != nil {
		return err
	}
	en = en.withStages(reg)
	out := *outFile
	if out == "" {
		out = cost.DefaultCalibration(pos[0])
	}
	cal, err := a.measure(en, spec, o, calibrateOpts{Epochs: *epochs, Threads: *threads, ProxGraphs: *proxGraphs, NoWait: *noWait})
	if err != nil {
		return err
	}
	if old, err := cost.ReadCalibration(out); err == nil {
		cal.Merge(old)
	}
	if err := cal.Write(out); err != nil {
		return runtimeErr("calibrate", err)
	}
	fmt.Fprintf(a.stderr, "spn calibrate: %d configurations measured; wrote %s\n", len(cal.Entries), out)
	return nil
}

// calibrateOpts are the flags of spn calibrate that measure uses.
type calibrateOpts struct {
	// Epochs is the number of epochs per measured configuration.
	Epochs int
	// Threads is the number of kernel threads per stage.
	Threads int
	// ProxGraphs caps the number of graphs of the h-Prox datasets.
	ProxGraphs int
	// NoWait fails at once when another spn process holds the cache.
	NoWait bool
}

// measure runs spec's calibration spec (cost.CalibrationSpec) locally
// with the options co and reads the timings back (cost.Measured).
func (a *app) measure(en *engine, spec *schema.Spec, o *envOpts, co calibrateOpts) (*cost.Calibration, error) {
	epochs, threads, proxGraphs, noWait := co.Epochs, co.Threads, co.ProxGraphs, co.NoWait
	cspec := cost.CalibrationSpec(spec, epochs, proxGraphs)
	p, err := plan.Build(cspec, en.reg)
	if err != nil {
		return nil, runtimeErrf("calibrate", "planning: %w", err)
	}
	c, err := cache.Open(o.cache)
	if err != nil {
		return nil, runtimeErr("calibrate", err)
	}
	ctx, stop := a.signalContext()
	defer stop()
	// Stages are written as by spn run: under the cache lock.
	lk, err := a.lockCache(ctx, "calibrate", c, noWait)
	if err != nil {
		return nil, err
	}
	defer lk.Unlock()
	if err := p.Resolve(c); err != nil {
		return nil, runtimeErr("calibrate", err)
	}
	_, toRun := p.Counts()
	fmt.Fprintf(a.stderr, "spn calibrate: %d configurations, %d stages to run (%d epochs each, %d thread(s))\n",
		len(cspec.Experiments), toRun, epochs, threads)
	// Train stages only: select, evaluate and tabulate are not needed.
	sel := func(n *plan.Node) bool { return n.Kind != stages.KindEvaluate }
	if err := a.execute(ctx, "calibrate", stagesRun{Plan: p, Cache: c, Reg: en.reg}, o, exec.Options{Jobs: 1, Threads: threads, Select: sel}); err != nil {
		return nil, err
	}
	cal := cost.NewCalibration(threads, spec.Device)
	if err := cost.Measured(cal, p, c); err != nil {
		return nil, runtimeErr("calibrate", err)
	}
	return cal, nil
}
