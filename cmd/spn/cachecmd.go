package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spn-project/spn/internal/units"
	"github.com/spn-project/spn/schema"
	"github.com/spn-project/spn/stages/cache"
	"github.com/spn-project/spn/stages/retain"
)

// warnDamage returns the cache's Warn hook for command cmd: one line per
// damaged stage, naming the file, saying it is not used.
func (a *app) warnDamage(cmd string) func(*cache.Damage) {
	return func(d *cache.Damage) {
		fmt.Fprintf(a.stderr, "spn %s: warning: %v; the stage is not served from the cache and runs again\n", cmd, d)
	}
}

const cacheUsage = `Usage: spn cache verify [--cache DIR]
       spn cache gc [--dry-run] [--cache DIR] SPEC|DIR...

verify  checks every stage of the cache against the checksums its
        record.json holds; prints each damaged stage with the file at
        fault (such a stage is never served: the next run recomputes it)
        and each stage written before checksums existed. Exit 1 if any
        stage is damaged.
gc      removes every stage that no plan of the given specs uses (each
        spec planned in both modes, full and smoke), and the temporary
        directories of killed runs. --dry-run lists what would go.
`

func cmdCache(a *app, args []string) error { return a.cache(realEngine(), args) }

func (a *app) cache(en *engine, args []string) error {
	if len(args) == 0 {
		fmt.Fprint(a.stderr, cacheUsage)
		return reported(exitUsage)
	}
	if args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(a.stdout, cacheUsage)
		return nil
	}
	switch args[0] {
	case "verify":
		return a.cacheVerify(args[1:])
	case "gc":
		return a.cacheGC(en, args[1:])
	}
	return usageErrf("cache", "unknown subcommand %q (want verify or gc)", args[0])
}

func (a *app) cacheVerify(args []string) error {
	fs := a.newFlagSet("cache verify", "cache verify [--cache DIR]")
	o := a.envFlags(fs)
	pos, err := parseArgs(fs, args)
	if err != nil {
		return usageErr("cache verify", err)
	}
	if len(pos) != 0 {
		return usageErr("cache verify", fmt.Errorf("takes no arguments, got %d", len(pos)))
	}
	if err := o.resolve(a); err != nil {
		return usageErr("cache verify", err)
	}
	if _, err := os.Stat(o.cache); err != nil {
		return usageErr("cache verify", err)
	}
	c := &cache.Cache{Root: o.cache}
	total, damaged, old, err := c.Verify(func(v cache.Verified) {
		if v.Damage != nil {
			fmt.Fprintf(a.stdout, "damaged   %s %s  %s: %v\n", v.Kind, short(v.Key), v.Name, v.Damage)
		} else {
			fmt.Fprintf(a.stdout, "unchecked %s %s  %s: written before checksums (no \"files\" in record.json)\n", v.Kind, short(v.Key), v.Name)
		}
	})
	if err != nil {
		return runtimeErr("cache verify", err)
	}
	strays, err := c.Strays()
	if err != nil {
		return runtimeErr("cache verify", err)
	}
	for _, s := range strays {
		fmt.Fprintf(a.stdout, "damaged   %s: %s\n", s.Path, s.Problem)
	}
	fmt.Fprintf(a.stdout, "%d stages: %d intact, %d damaged, %d without checksums", total, total-damaged-old, damaged, old)
	if len(strays) > 0 {
		fmt.Fprintf(a.stdout, "; %d entries not stage folders (run recomputes what they stand for; spn cache gc removes them)", len(strays))
	}
	fmt.Fprintln(a.stdout)
	if damaged > 0 || len(strays) > 0 {
		return reported(exitFail) // the damaged stages are listed on stdout
	}
	return nil
}

func short(key string) string {
	if len(key) > 12 {
		return key[:12]
	}
	return key
}

func (a *app) cacheGC(en *engine, args []string) error {
	fs := a.newFlagSet("cache gc", "cache gc [--dry-run] [--cache DIR] SPEC|DIR...")
	o := a.envFlags(fs)
	dry := fs.Bool("dry-run", false, "list what would be removed, remove nothing")
	noWait := fs.Bool("no-wait", false, "fail at once if another spn process is using the cache")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return usageErr("cache gc", err)
	}
	if len(pos) == 0 {
		return usageErr("cache gc", errors.New("name the specs whose stages to keep (every other stage is removed)"))
	}
	if o.mode != "" {
		return usageErr("cache gc", errors.New("--mode does not apply: every spec is planned in both modes"))
	}
	if err := o.resolve(a); err != nil {
		return usageErr("cache gc", err)
	}
	files, err := schema.SpecFiles(pos)
	if err != nil {
		return usageErr("cache gc", err)
	}
	keep, err := retain.Keys(files, o.dataDir, en.reg)
	if le := (*retain.LoadError)(nil); errors.As(err, &le) {
		return usageErr("cache gc", err)
	} else if err != nil {
		return runtimeErr("cache gc", err)
	}
	if _, err := os.Stat(o.cache); err != nil {
		return usageErr("cache gc", err)
	}
	c := &cache.Cache{Root: o.cache}
	if !*dry {
		ctx, stop := a.signalContext()
		defer stop()
		lk, err := a.lockCache(ctx, "cache gc", c, *noWait)
		if err != nil {
			return err
		}
		defer lk.Unlock()
		if _, err := c.CleanTemp(); err != nil {
			return runtimeErr("cache gc", err)
		}
	}
	verb := "removed"
	if *dry {
		verb = "would remove"
	}
	res, err := c.GC(keep, *dry, func(e cache.Entry) {
		fmt.Fprintf(a.stdout, "%s %s %s  %s (%s)\n", verb, e.Kind, short(e.Key), e.Name, units.Bytes(e.Bytes))
	}, func(s cache.Stray) {
		fmt.Fprintf(a.stdout, "%s %s: %s\n", verb, s.Path, s.Problem)
	})
	if err != nil {
		return runtimeErr("cache gc", err)
	}
	fmt.Fprintf(a.stdout, "%s %d of %d stages, %s; kept %d\n", verb, res.Removed, res.Stages, units.Bytes(res.Bytes), res.Stages-res.Removed)
	return nil
}
