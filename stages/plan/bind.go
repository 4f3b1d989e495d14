package plan

import (
	"encoding/json"
	"fmt"

	"github.com/spn-project/spn/stages"
	"github.com/spn-project/spn/stages/cache"
)

// Run is what a node runs as over its finished inputs: itself, or the
// stage its kind (a stages.Binder) binds it to (package documentation,
// "Bound key").
type Run struct {
	// Params are the parameters the stage receives (its JSON): the
	// node's own, or those of the stage it stands for.
	Params json.RawMessage
	// Inputs are the inputs it receives: the node's, or those the
	// binding keeps.
	Inputs []stages.Input
	// SeedKey is the key its seed derives from: the node's seed key, or
	// the seed key of the stage it stands for.
	SeedKey string
	// BoundKey is the key of the stage it stands for, as the planner
	// would give it; "" when the node stands for itself.
	BoundKey string
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

// Bind returns what n runs as over its inputs in c, which must be
// complete: the stage n's kind binds it to (stages.Binder), identified
// as the planner identifies its stages, or n itself when its kind binds
// nothing or binds it to nothing.
func Bind(reg *stages.Registry, c *cache.Cache, n *Node) (Run, error) {
	self := Run{Params: n.JSON, Inputs: Inputs(c, n), SeedKey: n.seedKey()}
	k, ok := reg.Get(n.Kind)
	if !ok {
		return Run{}, fmt.Errorf("no stage kind %q is registered in this build of spn", n.Kind)
	}
	b, ok := k.(stages.Binder)
	if !ok {
		return self, nil
	}
	bound, keep, err := b.Bind(n.JSON, self.Inputs)
	if err != nil {
		return Run{}, fmt.Errorf("%s: %w", n.Name, err)
	}
	if bound == nil {
		return self, nil
	}
	deps := make([]*Node, len(keep))
	inputs := make([]stages.Input, len(keep))
	for i, j := range keep {
		if j < 0 || j >= len(n.Deps) {
			return Run{}, fmt.Errorf("%s: bound on input %d of %d", n.Name, j, len(n.Deps))
		}
		deps[i], inputs[i] = n.Deps[j], self.Inputs[j]
	}
	id, err := identify(k, bound, deps)
	if err != nil {
		return Run{}, fmt.Errorf("%s: %w", n.Name, err)
	}
	return Run{Params: id.raw, Inputs: inputs, SeedKey: id.seedKey, BoundKey: id.key}, nil
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
		r, err := Bind(reg, c, n)
		if err != nil || r.BoundKey == "" {
			continue
		}
		prev, ok, err := c.BoundStage(n.Kind, r.BoundKey, n.Key)
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
