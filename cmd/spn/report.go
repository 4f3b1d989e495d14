package main

import (
	"fmt"
	"path/filepath"

	"github.com/spn-project/spn/internal/atomicfile"
	"github.com/spn-project/spn/schema"
	"github.com/spn-project/spn/stages/cache"
	"github.com/spn-project/spn/stages/device"
	"github.com/spn-project/spn/stages/plan"
	"github.com/spn-project/spn/stages/report"
	"github.com/spn-project/spn/stages/tabulate"
	"github.com/spn-project/spn/stages/train"
)

func cmdReport(a *app, args []string) error { return a.report(realEngine(), args) }

// report implements `spn report [FILE]`: the spec's report.html, from the
// cache alone, into the tables' directory.
func (a *app) report(en *engine, args []string) error {
	fs := a.newFlagSet("report", "report [FILE] [--out DIR] [flags]   (no FILE: the built-in quickstart)")
	o := a.envFlags(fs)
	planDeviceFlag(fs, &o.device)
	out := fs.String("out", "", "`dir` for report.html (default results/<spec name>)")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return usageErr("report", err)
	}
	if len(pos) > 1 {
		return usageErr("report", fmt.Errorf("want at most one spec FILE, got %d arguments", len(pos)))
	}
	if err := o.resolve(a); err != nil {
		return usageErr("report", err)
	}
	file := ""
	if len(pos) == 1 {
		file = pos[0]
	}
	spec, p, _, err := a.buildPlan(en, "report", file, o)
	if err != nil {
		return err
	}
	dest, err := a.prepareOut(en, "report", file, spec, *out, false)
	if err != nil {
		return err
	}
	// Reading complete stage dirs needs no lock, as in spn plan.
	c := &cache.Cache{Root: o.cache, Warn: a.warnDamage("report")}
	return a.writeReport(en, spec, p, c, dest)
}

// writeReport writes report.html into the tables' directory (atomically),
// from what the cache holds now.
func (a *app) writeReport(en *engine, spec *schema.Spec, p *plan.Plan, c *cache.Cache, dir tablesDir) error {
	c.Forget() // stages may have finished since the plan was resolved
	if err := p.Resolve(c); err != nil {
		return runtimeErr(dir.cmd, err)
	}
	b, err := report.Render(report.Options{
		Spec: spec, SpecPath: dir.Spec.Path, SpecSHA256: dir.Spec.SHA256, Version: version,
		Plan: p, Cache: c, Tables: tabulate.WriteHTML, Memory: train.PlanMemory(device.TrainModels(en.reg)),
	})
	if err != nil {
		return runtimeErr(dir.cmd, err)
	}
	path := filepath.Join(dir.Path, report.FileName)
	if err := atomicfile.WriteFile(path, b, 0o644); err != nil {
		return runtimeErr(dir.cmd, err)
	}
	fmt.Fprintf(a.stderr, "spn: report: wrote %s\n", path)
	return nil
}
