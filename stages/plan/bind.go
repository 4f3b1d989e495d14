package plan

import (
	"encoding/json"
	"fmt"

	"github.com/spn-project/spn/stages"
	"github.com/spn-project/spn/stages/cache"
)

// Binding is what a stage stands for once its kind (a stages.Binder)
// bound it over its finished inputs.
type Binding struct {
	// Params are the parameters of the stage it stands for (its JSON),
	// Key and SeedKey that stage's key and seed key, as the planner would
	// give them.
	Params       json.RawMessage
	Key, SeedKey string
	// Keep are the inputs it keeps, as indices into the node's Deps.
	Keep []int
}

// Inputs returns n's inputs in c as its stage receives them (their
// directories; finished or not).
func Inputs(c *cache.Cache, n *Node) []stages.Input {
	in := make([]stages.Input, len(n.Deps))
	for i, d := range n.Deps {
		in[i] = stages.Input{Kind: d.Kind, Key: d.Key, Dir: c.StageDir(d.Kind, d.Key)}
	}
	return in
}

// Bind asks n's kind what n stands for over its inputs in c, which must
// be complete: nil for a stage that stands for itself (its kind binds
// nothing, or binds it to nothing).
func Bind(reg *stages.Registry, c *cache.Cache, n *Node) (*Binding, error) {
	k, ok := reg.Get(n.Kind)
	if !ok {
		return nil, fmt.Errorf("no stage kind %q is registered in this build of spn", n.Kind)
	}
	b, ok := k.(stages.Binder)
	if !ok {
		return nil, nil
	}
	bound, keep, err := b.Bind(n.JSON, Inputs(c, n))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", n.Name, err)
	}
	if bound == nil {
		return nil, nil
	}
	raw, key, seedKey, err := Bound(reg, n, bound, keep)
	if err != nil {
		return nil, err
	}
	return &Binding{Params: raw, Key: key, SeedKey: seedKey, Keep: keep}, nil
}

// ResolveReuse marks, after Resolve, every stage to run whose run will
// copy an earlier stage's artifacts instead of computing them: a stage
// whose inputs are cached and which its kind binds to a stage that
// another complete stage of c stood for (cache.BoundStage, what the
// executor copies from; an errica final run after its select stage
// ran). Its Reuses names that stage and its Reason says so. A stage its
// kind cannot bind (a select result unreadable) keeps its status: its
// run reports the problem.
func (p *Plan) ResolveReuse(reg *stages.Registry, c *cache.Cache) error {
	for _, n := range p.Nodes {
		n.Reuses = ""
		if n.Status != ToRun || len(n.Deps) == 0 {
			continue
		}
		ready := true
		for _, d := range n.Deps {
			ready = ready && d.Status == Cached
		}
		if !ready {
			continue
		}
		b, err := Bind(reg, c, n)
		if err != nil || b == nil {
			continue
		}
		prev, ok, err := c.BoundStage(n.Kind, b.Key, n.Key)
		if err != nil {
			return fmt.Errorf("resolving %s: %w", n.Name, err)
		}
		if ok {
			n.Reuses = prev
			n.Reason += "; its run copies stage " + prev[:min(12, len(prev))] + ", bound to the same training"
		}
	}
	return nil
}
