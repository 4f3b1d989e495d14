package slurm

import (
	"context"
	"fmt"
	"time"

	"github.com/spn-project/spn/stages/cache"
	"github.com/spn-project/spn/stages/plan"
)

// State is where a stage stands.
type State string

// Stage states, in the order status tables show them.
const (
	Cached  State = "cached"
	Running State = "running"
	Queued  State = "queued"
	Failed  State = "failed"
	ToRun   State = "to run"
)

// States lists the states in display order.
var States = []State{Cached, Running, Queued, Failed, ToRun}

// StateOf is the state of node n: cached (n.Status, from p.Resolve), else
// running or queued (active, from Queue), else failed (a failure recorded
// in the cache), else to run.
func StateOf(n *plan.Node, c *cache.Cache, active map[string]Active) State {
	if n.Status == plan.Cached {
		return Cached
	}
	if a, ok := active[n.Key]; ok {
		if a.Running() {
			return Running
		}
		return Queued
	}
	if _, ok := c.LastFailure(n.Key); ok {
		return Failed
	}
	return ToRun
}

// KindCount is the number of stages of one kind in each state.
type KindCount struct {
	Kind   string
	Counts map[State]int
}

// Count tallies the plan's stages per kind (kinds in plan order) and in
// total (the last entry, kind "total").
func Count(p *plan.Plan, c *cache.Cache, active map[string]Active) []KindCount {
	var out []KindCount
	idx := map[string]int{}
	total := KindCount{Kind: "total", Counts: map[State]int{}}
	for _, n := range p.Nodes {
		i, ok := idx[n.Kind]
		if !ok {
			i = len(out)
			idx[n.Kind] = i
			out = append(out, KindCount{Kind: n.Kind, Counts: map[State]int{}})
		}
		s := StateOf(n, c, active)
		out[i].Counts[s]++
		total.Counts[s]++
	}
	return append(out, total)
}

// Wait polls the queue every poll until no stage of p is queued or
// running, calling tick with the totals after each poll. It returns the
// last totals.
func Wait(ctx context.Context, r Runner, p *plan.Plan, c *cache.Cache, poll time.Duration, tick func(map[State]int)) (map[State]int, error) {
	for {
		active, _, err := Queue(ctx, r, c)
		if err != nil {
			return nil, err
		}
		if err := p.Resolve(c); err != nil {
			return nil, err
		}
		counts := Count(p, c, active)
		totals := counts[len(counts)-1].Counts
		if tick != nil {
			tick(totals)
		}
		if totals[Running]+totals[Queued] == 0 {
			return totals, nil
		}
		select {
		case <-ctx.Done():
			return totals, context.Cause(ctx)
		case <-time.After(poll):
		}
	}
}

// Outcome explains, once per stage, why the stages of a finished run that
// are not cached did not complete, in plan order: "failed NAME: error",
// "skipped NAME: input D failed" (or "did not run", or "was skipped (R
// failed)"), or "not run NAME: ..." when its job ended without a result
// (cancelled, timed out, killed) although its inputs are complete. Call
// p.Resolve first.
func Outcome(p *plan.Plan, c *cache.Cache) []string {
	const (
		ok = iota
		failed
		skipped
		notRun
	)
	state := make([]int, len(p.Nodes))
	cause := make([]string, len(p.Nodes))
	var msgs []string
	for i, n := range p.Nodes {
		if n.Status == plan.Cached {
			continue
		}
		if f, has := c.LastFailure(n.Key); has {
			state[i] = failed
			m := fmt.Sprintf("failed %s: %s", n.Name, f.Error)
			if f.Job != "" {
				m += " (Slurm job " + f.Job + ")"
			}
			msgs = append(msgs, m)
			continue
		}
		state[i] = notRun
		for _, d := range n.Deps {
			switch state[d.Index] {
			case failed:
				state[i], cause[i] = skipped, d.Name+" failed"
				msgs = append(msgs, fmt.Sprintf("skipped %s: input %s failed", n.Name, d.Name))
			case skipped:
				state[i], cause[i] = skipped, cause[d.Index]
				msgs = append(msgs, fmt.Sprintf("skipped %s: input %s was skipped (%s)", n.Name, d.Name, cause[d.Index]))
			case notRun:
				state[i], cause[i] = skipped, d.Name+" did not run"
				msgs = append(msgs, fmt.Sprintf("skipped %s: input %s did not run", n.Name, d.Name))
			default:
				continue
			}
			break
		}
		if state[i] == notRun {
			msgs = append(msgs, fmt.Sprintf("not run %s: its job ended without a result (cancelled, timed out or killed; see the job logs)", n.Name))
		}
	}
	return msgs
}
