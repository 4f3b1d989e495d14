package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spn-project/spn/schema"
	"github.com/spn-project/spn/stages/cache"
	"github.com/spn-project/spn/stages/plan"
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

func cmdCache(a *app, args []string) int { return a.cache(realEngine(), args) }

func (a *app) cache(en *engine, args []string) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		w := a.stderr
		code := exitUsage
		if len(args) > 0 {
			w, code = a.stdout, exitOK
		}
		fmt.Fprint(w, cacheUsage)
		return code
	}
	switch args[0] {
	case "verify":
		return a.cacheVerify(args[1:])
	case "gc":
		return a.cacheGC(en, args[1:])
	}
	fmt.Fprintf(a.stderr, "spn cache: unknown subcommand %q (want verify or gc)\n", args[0])
	return exitUsage
}

func (a *app) cacheVerify(args []string) int {
	fs := a.newFlagSet("cache verify", "cache verify [--cache DIR]")
	o := a.envFlags(fs)
	pos, err := parseArgs(fs, args)
	if err != nil {
		return a.usageError("cache verify", err)
	}
	if len(pos) != 0 {
		return a.usageError("cache verify", fmt.Errorf("takes no arguments, got %d", len(pos)))
	}
	if err := o.resolve(a); err != nil {
		return a.usageError("cache verify", err)
	}
	if _, err := os.Stat(o.cache); err != nil {
		fmt.Fprintf(a.stderr, "spn cache verify: %v\n", err)
		return exitUsage
	}
	c := &cache.Cache{Root: o.cache}
	entries, err := c.Entries()
	if err != nil {
		fmt.Fprintf(a.stderr, "spn cache verify: %v\n", err)
		return exitFail
	}
	damaged, old := 0, 0
	for _, e := range entries {
		ok, d, err := c.Check(e.Kind, e.Key)
		switch {
		case err != nil:
			fmt.Fprintf(a.stderr, "spn cache verify: %v\n", err)
			return exitFail
		case d != nil:
			damaged++
			fmt.Fprintf(a.stdout, "damaged   %s %s  %s: %v\n", e.Kind, short(e.Key), e.Name, d)
		case ok && c.Unverifiable(e.Kind, e.Key):
			old++
			fmt.Fprintf(a.stdout, "unchecked %s %s  %s: written before checksums (no \"files\" in record.json)\n", e.Kind, short(e.Key), e.Name)
		}
	}
	fmt.Fprintf(a.stdout, "%d stages: %d intact, %d damaged, %d without checksums\n", len(entries), len(entries)-damaged-old, damaged, old)
	if damaged > 0 {
		return exitFail
	}
	return exitOK
}

func short(key string) string {
	if len(key) > 12 {
		return key[:12]
	}
	return key
}

func (a *app) cacheGC(en *engine, args []string) int {
	fs := a.newFlagSet("cache gc", "cache gc [--dry-run] [--cache DIR] SPEC|DIR...")
	o := a.envFlags(fs)
	dry := fs.Bool("dry-run", false, "list what would be removed, remove nothing")
	noWait := fs.Bool("no-wait", false, "fail at once if another spn process is using the cache")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return a.usageError("cache gc", err)
	}
	if len(pos) == 0 {
		return a.usageError("cache gc", errors.New("name the specs whose stages to keep (every other stage is removed)"))
	}
	if o.mode != "" {
		return a.usageError("cache gc", errors.New("--mode does not apply: every spec is planned in both modes"))
	}
	if err := o.resolve(a); err != nil {
		return a.usageError("cache gc", err)
	}
	files, err := vetFiles(pos)
	if err != nil {
		fmt.Fprintf(a.stderr, "spn cache gc: %v\n", err)
		return exitUsage
	}
	keep := map[string]bool{}
	for _, f := range files {
		for _, mode := range []string{schema.ModeFull, schema.ModeSmoke} {
			spec, err := schema.Load(f, schema.Options{Mode: mode})
			if err != nil {
				var errs schema.Errors
				if errors.As(err, &errs) && len(errs) == 1 && errs[0].Path == "mode" {
					continue // the spec fixes the other mode
				}
				fmt.Fprintf(a.stderr, "spn cache gc: %s (mode %s) does not load, so nothing is removed:\n%v\n", f, mode, err)
				return exitUsage
			}
			p, err := plan.Build(spec, en.reg)
			if err != nil {
				fmt.Fprintf(a.stderr, "spn cache gc: planning %s: %v\n", f, err)
				return exitFail
			}
			for _, n := range p.Nodes {
				keep[n.Kind+"/"+n.Key] = true
			}
		}
	}
	if _, err := os.Stat(o.cache); err != nil {
		fmt.Fprintf(a.stderr, "spn cache gc: %v\n", err)
		return exitUsage
	}
	c := &cache.Cache{Root: o.cache}
	if !*dry {
		ctx, stop := a.signalContext()
		defer stop()
		lk, code := a.lockCache(ctx, "cache gc", c, *noWait)
		if lk == nil {
			return code
		}
		defer lk.Unlock()
		if _, err := c.CleanTemp(); err != nil {
			fmt.Fprintf(a.stderr, "spn cache gc: %v\n", err)
			return exitFail
		}
	}
	entries, err := c.Entries()
	if err != nil {
		fmt.Fprintf(a.stderr, "spn cache gc: %v\n", err)
		return exitFail
	}
	var n int
	var bytes int64
	verb := "removed"
	if *dry {
		verb = "would remove"
	}
	for _, e := range entries {
		if keep[e.Kind+"/"+e.Key] {
			continue
		}
		if !*dry {
			if err := c.Remove(e.Kind, e.Key); err != nil {
				fmt.Fprintf(a.stderr, "spn cache gc: %v\n", err)
				return exitFail
			}
		}
		n++
		bytes += e.Bytes
		fmt.Fprintf(a.stdout, "%s %s %s  %s (%s)\n", verb, e.Kind, short(e.Key), e.Name, humanBytes(e.Bytes))
	}
	fmt.Fprintf(a.stdout, "%s %d of %d stages, %s; kept %d\n", verb, n, len(entries), humanBytes(bytes), len(entries)-n)
	return exitOK
}

func humanBytes(b int64) string {
	switch {
	case b >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30))
	case b >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
	case b >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(b)/(1<<10))
	}
	return fmt.Sprintf("%d B", b)
}
