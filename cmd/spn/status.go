package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/spn-project/spn/stages/cache"
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
	_, p, _, err := a.buildPlan(en, "status", pos[0], o)
	if err != nil {
		return err
	}
	c := &cache.Cache{Root: o.cache}
	if err := p.Resolve(c); err != nil {
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
	if err := p.WriteDevice(a.stdout); err != nil {
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
