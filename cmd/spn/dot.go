package main

import (
	"errors"
	"flag"
	"fmt"

	"github.com/spn-project/spn/stages/cache"
	"github.com/spn-project/spn/stages/plan"
)

// dotOpts are spn plan's --dot and --by flags.
type dotOpts struct {
	on bool
	by string
}

func dotFlags(fs *flag.FlagSet) *dotOpts {
	o := &dotOpts{}
	fs.BoolVar(&o.on, "dot", false, "print the stage DAG as Graphviz DOT (a cluster per experiment, nodes coloured cached / to run / failed)")
	fs.StringVar(&o.by, "by", "", "with --dot: `kind` draws one node per stage kind and experiment, counting its stages")
	return o
}

// check rejects --by without --dot, a --by other than kind, and --dot
// with another output (--json, --cost, --summary: other).
func (o *dotOpts) check(other bool) error {
	switch {
	case o.on && other:
		return errors.New("--dot prints the plan as DOT; leave out --json, --cost and --summary")
	case o.by != "" && !o.on:
		return errors.New("--by needs --dot")
	case o.by != "" && o.by != "kind":
		return fmt.Errorf("--by %q: want kind", o.by)
	}
	return nil
}

func (o *dotOpts) options(title string, c *cache.Cache) plan.DOTOptions {
	return plan.DOTOptions{Title: title, ByKind: o.by == "kind", Failure: c.FailureMessage}
}
