package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/hashicorp/go-hclog"
	"golang.org/x/term"

	"github.com/spn-project/spn/schema"
	"github.com/spn-project/spn/schema/findings"
	"github.com/spn-project/spn/stages"
	"github.com/spn-project/spn/stages/cache"
	"github.com/spn-project/spn/stages/cost"
	"github.com/spn-project/spn/stages/device"
	"github.com/spn-project/spn/stages/exec"
	"github.com/spn-project/spn/stages/plan"
)

// Environment variables of the shared flags.
const (
	envMirror  = "SPN_DATA_MIRROR"
	envDataDir = "SPN_DATA"
	// defaultDataDir is where upstream files go when neither --data-dir
	// nor SPN_DATA says otherwise.
	defaultDataDir = ".spn/data"
)

// engine is what the plan/run/table commands take from the build: the
// stage kinds, the table printer and the built-in quickstart. Tests supply
// their own.
type engine struct {
	reg        *stages.Registry
	printTable func(w io.Writer, stageDir string) error
	quickstart func() (name string, src []byte, ok bool)
}

func realEngine() *engine {
	return &engine{reg: newRegistry(), printTable: tablePrinter(), quickstart: quickstart}
}

// withStages returns a copy of en that runs the stage kinds of reg.
func (en *engine) withStages(reg *stages.Registry) *engine {
	c := *en
	c.reg = reg
	return &c
}

func cmdPlan(a *app, args []string) error  { return a.plan(realEngine(), args) }
func cmdRun(a *app, args []string) error   { return a.run(realEngine(), args) }
func cmdTable(a *app, args []string) error { return a.table(realEngine(), args) }

// envOpts are the flags shared by commands that plan or run stages.
type envOpts struct {
	dataSource
	cache, mode, logLevel string
	logJSON               bool
	// device is --device, of the commands that train ("": the spec's).
	device string
}

// envFlags registers the shared flags (--cache, --mirror, --data-dir,
// --mode, --log-level, --log-json) on fs. Call resolve after parsing.
func (a *app) envFlags(fs *flag.FlagSet) *envOpts {
	o := &envOpts{}
	fs.StringVar(&o.cache, "cache", "", "stage cache `dir` (env "+cache.EnvVar+", default "+cache.DefaultDir+")")
	o.dataSource.flags(fs, "`dir` for downloaded data", "accept upstream data files whose content differs from spn's built-in figures (recorded in the stage results)")
	fs.StringVar(&o.mode, "mode", "", "override the spec's mode: full, smoke, paper-1split or evidence")
	fs.StringVar(&o.logLevel, "log-level", "info", "log `level`: trace, debug, info, warn or error")
	fs.BoolVar(&o.logJSON, "log-json", false, "write logs as JSON lines")
	return o
}

// resolve fills unset values from the environment and defaults, and checks
// the log level.
func (o *envOpts) resolve(a *app) error {
	o.cache = cache.Resolve(o.cache, a.getenv, ".")
	o.dataSource.resolve(a)
	// Stages get absolute paths: they must not depend on the working dir.
	for _, p := range []*string{&o.cache, &o.dataDir, &o.mirror} {
		if *p == "" {
			continue
		}
		abs, err := filepath.Abs(*p)
		if err != nil {
			return fmt.Errorf("resolving %s: %w", *p, err)
		}
		*p = abs
	}
	switch strings.ToLower(o.logLevel) {
	case "trace", "debug", "info", "warn", "error":
	default:
		return fmt.Errorf("--log-level: unknown level %q (want trace, debug, info, warn or error)", o.logLevel)
	}
	return nil
}

// logger returns the hclog logger the flags ask for, writing to w.
func (o *envOpts) logger(w io.Writer) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{
		Name:       "spn",
		Level:      hclog.LevelFromString(o.logLevel),
		Output:     w,
		JSONFormat: o.logJSON,
	})
}

// env is the stages.Env the flags describe (Threads is set by the executor).
func (o *envOpts) env() stages.Env {
	return stages.Env{DataDir: o.dataDir, Mirror: o.mirror, AcceptDataMismatch: o.acceptMismatch, SPNVersion: version}
}

// parseArgs parses flags that may come before or after positional
// arguments and returns the positional ones.
func parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		if args[0] == "--" {
			return append(pos, args[1:]...), nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

func (a *app) newFlagSet(name, usage string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(a.stderr)
	fs.Usage = func() {
		fmt.Fprintf(a.stderr, "Usage: spn %s\n\nFlags:\n", usage)
		fs.PrintDefaults()
	}
	return fs
}

// loadSpec loads a spec file (or the built-in quickstart when file is
// empty). Spec errors are usage errors printed as file:line:col lines.
func (a *app) loadSpec(en *engine, cmd, file string, o *envOpts) (*schema.Spec, error) {
	opt := schema.Options{Mode: o.mode, Models: device.TrainModels(en.reg), DataDir: o.dataDir}
	var spec *schema.Spec
	var err error
	if file == "" {
		name, src, ok := en.quickstart()
		if !ok {
			return nil, usageErrf(cmd, "this build has no built-in quickstart spec; give a spec FILE")
		}
		spec, err = schema.LoadBytes(name, src, opt)
	} else {
		stop := a.guardSpecMemory(cmd, file)
		spec, err = schema.Load(file, opt)
		stop()
	}
	if err != nil {
		return nil, specErr(cmd, err)
	}
	return spec, nil
}

// specErr is the usage error of a spec that does not load: its
// schema.Errors one per line as file:line:col: path: message, any other
// error as "spn CMD: ERR".
func specErr(cmd string, err error) error {
	var errs schema.Errors
	if !errors.As(err, &errs) {
		return usageErr(cmd, err)
	}
	lines := make([]string, len(errs))
	for i, e := range errs {
		lines[i] = e.Error()
	}
	return &exitError{code: exitUsage, msg: strings.Join(lines, "\n"), err: err}
}

// specFindings reports err, the error of loading file, as findings in
// format when it is a spec's problems (schema.Errors) and the format is
// not text; it returns any other error as it is.
func (a *app) specFindings(cmd, file, format string, err error) error {
	var errs schema.Errors
	if format == "text" || !errors.As(err, &errs) {
		return err
	}
	fs := findings.Merge(findings.FromError(file, errs))
	if werr := findings.Write(a.stdout, fs, findings.Options{Format: format, ToolVersion: version}); werr != nil {
		return runtimeErr(cmd, werr)
	}
	return reported(exitUsage)
}

// buildPlan loads the spec and unrolls it into a plan.
func (a *app) buildPlan(en *engine, cmd, file string, o *envOpts) (*schema.Spec, *plan.Plan, *stages.Registry, error) {
	spec, err := a.loadSpec(en, cmd, file, o)
	if err != nil {
		return nil, nil, nil, err
	}
	if spec.Device, err = a.resolveDevice(cmd, spec.Device, o.device, device.TrainModels(en.reg), device.SpecModels(spec)); err != nil {
		return nil, nil, nil, err
	}
	reg := en.reg
	p, err := plan.Build(spec, reg)
	if err != nil {
		return nil, nil, nil, runtimeErrf(cmd, "planning %s: %w", specLabel(spec, file), err)
	}
	return spec, p, reg, nil
}

func specLabel(spec *schema.Spec, file string) string {
	if file != "" {
		return file
	}
	return spec.File
}

func (a *app) plan(en *engine, args []string) error {
	fs := a.newFlagSet("plan", "plan FILE [--json] [flags]")
	o := a.envFlags(fs)
	planDeviceFlag(fs, &o.device)
	asJSON := fs.Bool("json", false, "print the plan as JSON")
	withCost := fs.Bool("cost", false, "print the estimated CPU-hours (GPU-hours for the train stages of a GPU calibration) per stage kind instead of the stages")
	calFile := fs.String("calibration", "", "calibration `file` for --cost (default calibration.json beside the spec; spn calibrate writes it)")
	summary := fs.Bool("summary", false, "print one line per stage kind: cached, to run and, with a calibration (--calibration, or calibration.json beside the spec), the CPU-hours to run")
	format := fs.String("format", "text", "`format` of the spec's problems, if it has any: text, json, github or sarif (as spn vet)")
	dot := dotFlags(fs)
	pos, err := parseArgs(fs, args)
	if err != nil {
		return usageErr("plan", err)
	}
	if err := findings.CheckFormat(*format); err != nil {
		return usageErrf("plan", "--%w", err)
	}
	if err := dot.check(*asJSON || *withCost || *summary); err != nil {
		return usageErr("plan", err)
	}
	if len(pos) != 1 {
		return usageErr("plan", fmt.Errorf("want one spec FILE, got %d arguments", len(pos)))
	}
	if err := o.resolve(a); err != nil {
		return usageErr("plan", err)
	}
	spec, p, reg, err := a.buildPlan(en, "plan", pos[0], o)
	if err != nil {
		return a.specFindings("plan", pos[0], *format, err)
	}
	// Reading complete stage dirs needs no lock, and plan creates nothing.
	c := &cache.Cache{Root: o.cache, Warn: a.warnDamage("plan")}
	if err := p.Resolve(c); err != nil {
		return runtimeErr("plan", err)
	}
	if err := p.ResolveReuse(reg, c); err != nil {
		return runtimeErr("plan", err)
	}
	if *summary {
		if err := writeSummary(a.stdout, pos[0], *calFile, spec.Device, p); err != nil {
			return runtimeErr("plan", err)
		}
		return nil
	}
	if *withCost {
		cal, f, err := cost.ReadFor(pos[0], *calFile, spec.Device)
		if err != nil {
			return runtimeErr("plan", err)
		}
		if err := writeCost(a.stdout, cal, f, p); err != nil {
			return runtimeErr("plan", err)
		}
		return nil
	}
	switch {
	case dot.on:
		err = p.WriteDOT(a.stdout, dot.options(spec.Name, c))
	case *asJSON:
		err = p.WriteJSON(a.stdout)
	default:
		err = p.WriteText(a.stdout)
	}
	if err != nil {
		return runtimeErr("plan", err)
	}
	return nil
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// lockCache takes the exclusive cache lock, telling the user once if it
// has to wait.
func (a *app) lockCache(ctx context.Context, cmd string, c *cache.Cache, noWait bool) (*cache.Lock, error) {
	lk, err := c.Lock(ctx, !noWait, func(pid int) {
		who := "another spn process"
		if pid > 0 {
			who = fmt.Sprintf("spn process %d", pid)
		}
		fmt.Fprintf(a.stderr, "spn %s: waiting for %s, which is using the cache %s (--no-wait fails instead)\n", cmd, who, c.Root)
	})
	if errors.Is(err, cache.ErrLocked) {
		return nil, runtimeErrf(cmd, "%w; wait for it to finish, use another --cache, or drop --no-wait to wait", err)
	}
	if err != nil {
		return nil, runtimeErr(cmd, err)
	}
	return lk, nil
}

// stagesRun is what execute runs: the stages of Plan, resolved against
// Cache, which receives their results, run by the stage kinds of Reg.
type stagesRun struct {
	Plan  *plan.Plan
	Cache *cache.Cache
	Reg   *stages.Registry
}

// execute runs the selected uncached stages of r.Plan with logging and
// progress, printing failure and skip messages as they happen. It fails
// when a stage did not complete.
func (a *app) execute(ctx context.Context, cmd string, r stagesRun, o *envOpts, opt exec.Options) error {
	errw := a.stderr
	var bar *exec.BarProgress
	if isTerminal(a.stderr) && !o.logJSON {
		// Logs and messages clear the bar before they are written.
		bar = exec.NewBarProgress(a.stderr)
		errw = bar.Writer(a.stderr)
	}
	log := o.logger(errw)
	opt.Env = o.env()
	opt.Log = log
	opt.SPNVersion = version
	opt.Message = func(m string) { fmt.Fprintf(errw, "spn %s: %s\n", cmd, m) }
	if bar != nil {
		opt.Progress = bar
	} else {
		opt.Progress = exec.NewLogProgress(log, 0)
	}
	res, err := exec.Run(ctx, r.Plan, r.Cache, r.Reg, opt)
	switch {
	case err != nil && res != nil && res.Interrupted:
		return runtimeErrf(cmd, "interrupted; finished stages are kept, run again to resume")
	case err != nil:
		return runtimeErr(cmd, err)
	case !res.OK():
		return runtimeErrf(cmd, "%d stages ran, %d failed, %d skipped, %d not started",
			len(res.Ran), len(res.Failed), len(res.Skipped), res.NotStarted)
	}
	return nil
}
