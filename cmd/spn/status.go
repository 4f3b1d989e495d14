package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"text/tabwriter"

	"github.com/spn-project/spn/stages/cache"
	"github.com/spn-project/spn/stages/plan"
	"github.com/spn-project/spn/stages/slurm"
)

func cmdStatus(a *app, args []string) error { return a.status(realEngine(), args) }

// status implements `spn status SPEC`: per stage kind, how many stages
// are cached, running, queued (Slurm), failed and still to run.
func (a *app) status(en *engine, args []string) error {
	fs := a.newFlagSet("status", "status FILE [flags]")
	o := a.envFlags(fs)
	planDeviceFlag(fs, &o.device)
	pos, err := parseArgs(fs, args)
	if err != nil {
		return usageErr("status", err)
	}
	if len(pos) != 1 {
		return usageErr("status", fmt.Errorf("want one spec FILE, got %d arguments", len(pos)))
	}
	if err := o.resolve(a); err != nil {
		return usageErr("status", err)
	}
	_, p, reg, err := a.buildPlan(en, "status", pos[0], o)
	if err != nil {
		return err
	}
	c := &cache.Cache{Root: o.cache}
	if err := p.Resolve(c); err != nil {
		return runtimeErr("status", err)
	}
	if err := p.ResolveReuse(reg, c); err != nil {
		return runtimeErr("status", err)
	}
	active := map[string]slurm.Active{}
	if slurm.Available() {
		ctx, stop := a.signalContext()
		defer stop()
		act, _, err := slurm.Queue(ctx, nil, c)
		if err != nil {
			fmt.Fprintf(a.stderr, "spn status: %v (queued and running stages are not shown)\n", err)
		} else {
			active = act
		}
	} else {
		fmt.Fprintln(a.stderr, "spn status: no Slurm commands on PATH: queued and running stages are not shown")
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "kind\t")
	for _, s := range slurm.States {
		fmt.Fprintf(tw, "%s\t", s)
	}
	fmt.Fprintln(tw)
	for _, k := range slurm.Count(p, c, active) {
		fmt.Fprintf(tw, "%s\t", k.Kind)
		for _, s := range slurm.States {
			fmt.Fprintf(tw, "%d\t", k.Counts[s])
		}
		fmt.Fprintln(tw)
	}
	if err := tw.Flush(); err != nil {
		return runtimeErr("status", err)
	}
	if err := writeReuse(a.stdout, p, c, active); err != nil {
		return runtimeErr("status", err)
	}
	if err := p.WriteDevice(a.stdout); err != nil {
		return runtimeErr("status", err)
	}
	if err := writeCompute(a.stdout, p, c); err != nil {
		return runtimeErr("status", err)
	}
	for _, n := range p.Nodes {
		if slurm.StateOf(n, c, active) == slurm.Failed {
			f, _ := c.LastFailure(n.Key)
			fmt.Fprintf(a.stdout, "failed %s: %s\n", n.Name, f.Error)
		}
	}
	return nil
}

// writeReuse writes how many of the stages to run will copy an earlier
// stage's artifacts instead of training (slurm.Reusing).
func writeReuse(w io.Writer, p *plan.Plan, c *cache.Cache, active map[string]slurm.Active) error {
	n := slurm.Reusing(p, c, active)
	if n == 0 {
		return nil
	}
	_, err := fmt.Fprintf(w, "of the stages to run, %d copy a cached stage bound to the same training and train nothing\n", n)
	return err
}

// writeCompute writes what computed the cached train results: one line
// per device and kernels, with how many results each computed.
func writeCompute(w io.Writer, p *plan.Plan, c *cache.Cache) error {
	counts, err := slurm.Computed(p, c)
	if err != nil {
		return err
	}
	for _, k := range slices.Sorted(maps.Keys(counts)) {
		if _, err := fmt.Fprintf(w, "cached train results computed on %s: %d\n", k, counts[k]); err != nil {
			return err
		}
	}
	return nil
}
