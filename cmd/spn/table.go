package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/spn-project/spn/schema"
	"github.com/spn-project/spn/stages"
	"github.com/spn-project/spn/stages/cache"
	"github.com/spn-project/spn/stages/exec"
	"github.com/spn-project/spn/stages/outdir"
	"github.com/spn-project/spn/stages/plan"
	"github.com/spn-project/spn/stages/tabulate"
)

// writeTables copies every table's files from its tabulate stage into out
// (atomically, file by file) and prints each table to stdout.
func (a *app) writeTables(en *engine, spec *schema.Spec, p *plan.Plan, c *cache.Cache, dir tablesDir) error {
	old := dir.Previous()
	if err := dir.record(old); err != nil {
		return err
	}
	out := dir.Path
	printTable := en.printTable
	var written []string
	for i, t := range spec.Tables {
		n := p.Tabulate[t.Name]
		if n == nil {
			return runtimeErrf("", "table %s is not in the plan", t.Name)
		}
		dir := c.StageDir(n.Kind, n.Key)
		files, err := outdir.CopyArtifacts(dir, out)
		if err != nil {
			return runtimeErrf("", "table %s: %w", t.Name, err)
		}
		if printTable != nil {
			if i > 0 {
				fmt.Fprintln(a.stdout)
			}
			if err := printTable(a.stdout, dir); err != nil {
				return runtimeErrf("", "table %s: %w", t.Name, err)
			}
		}
		fmt.Fprintf(a.stderr, "spn: table %s: wrote %s\n", t.Name, strings.Join(files, ", "))
		written = append(written, outdir.BaseNames(files)...)
	}
	figs, err := a.writeFigures(spec, p, c, out)
	if err != nil {
		return err
	}
	return dir.prune(old, append(written, outdir.BaseNames(figs)...))
}

func (a *app) table(en *engine, args []string) error {
	fs := a.newFlagSet("table", "table FILE [--out DIR] [flags]")
	o := a.envFlags(fs)
	planDeviceFlag(fs, &o.device)
	out := fs.String("out", "", "`dir` for the tables (default results/<spec name>)")
	takeOver := takeOverFlagVar(fs)
	noWait := fs.Bool("no-wait", false, "fail at once if another spn process is using the cache")
	partial := fs.Bool("partial", false, "write the tables from the experiments that have results, the others' cells shown as --, instead of failing (figures are left out)")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return usageErr("table", err)
	}
	if len(pos) != 1 {
		return usageErr("table", fmt.Errorf("want one spec FILE, got %d arguments", len(pos)))
	}
	if err := o.resolve(a); err != nil {
		return usageErr("table", err)
	}
	spec, p, reg, err := a.buildPlan(en, "table", pos[0], o)
	if err != nil {
		return err
	}
	dest, err := a.prepareOut(en, "table", pos[0], spec, *out, *takeOver)
	if err != nil {
		return err
	}
	c := &cache.Cache{Root: o.cache, Warn: a.warnDamage("table")}
	if err := p.Resolve(c); err != nil {
		return runtimeErr("table", err)
	}
	// Tables render from finished experiments only. A run in progress may
	// still be computing the missing ones: wait for its lock (or fail at
	// once with --no-wait, naming the holder), then look again.
	missing, pending := p.TableNeeds(spec)
	if len(missing) > 0 || pending > 0 {
		if _, err := os.Stat(o.cache); err == nil || pending > 0 {
			if _, err := cache.Open(o.cache); err != nil {
				return runtimeErr("table", err)
			}
			ctx, stop := a.signalContext()
			defer stop()
			lk, err := a.lockCache(ctx, "table", c, *noWait)
			if err != nil {
				return err
			}
			defer lk.Unlock()
			c.Forget() // the holder may have finished stages meanwhile
			if err := p.Resolve(c); err != nil {
				return runtimeErr("table", err)
			}
			missing, pending = p.TableNeeds(spec)
		}
	}
	if len(missing) > 0 && *partial {
		a.writePartialTables(en, spec, p, c, dest, tabulate.NotYet)
		return nil
	}
	if len(missing) > 0 {
		errs := make([]error, len(missing))
		for i, e := range missing {
			errs[i] = runtimeErrf("table", "experiment %s has no results in %s yet; run it first: spn run %s", e, c.Root, pos[0])
		}
		return joinErrs(errs)
	}
	if pending > 0 {
		ctx, stop := a.signalContext()
		defer stop()
		onlyTables := func(n *plan.Node) bool { return n.Kind == stages.KindTabulate || n.Kind == stages.KindFigure }
		if err := a.execute(ctx, "table", stagesRun{Plan: p, Cache: c, Reg: reg}, o, exec.Options{Jobs: 1, Threads: 1, Select: onlyTables}); err != nil {
			return err
		}
	}
	return a.writeTables(en, spec, p, c, dest)
}
