package slurm

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spn-project/spn/stages"
	"github.com/spn-project/spn/stages/cache"
	"github.com/spn-project/spn/stages/plan"
)

// Reusing counts the stages of p to run that will copy an earlier
// stage's artifacts instead of training (plan.Plan.ResolveReuse).
func Reusing(p *plan.Plan, c *cache.Cache, active map[string]Active) int {
	n := 0
	for _, nd := range p.Nodes {
		if nd.Reuses != "" && StateOf(nd, c, active) == ToRun {
			n++
		}
	}
	return n
}

// InQueue counts the stages of p, not cached (after plan.Plan.Resolve),
// that have a job in active: queued or running already, so a submission
// leaves them to it.
func InQueue(p *plan.Plan, active map[string]Active) int {
	n := 0
	for _, nd := range p.Nodes {
		if _, ok := active[nd.Key]; ok && nd.Status != plan.Cached {
			n++
		}
	}
	return n
}

// Computed counts the cached train results of p by what computed them
// (stages.Compute's String: the device and kernels).
func Computed(p *plan.Plan, c *cache.Cache) (map[string]int, error) {
	counts := map[string]int{}
	for _, n := range p.Nodes {
		if n.Kind != stages.KindTrain || n.Status != plan.Cached {
			continue
		}
		path := filepath.Join(c.StageDir(n.Kind, n.Key), stages.FileResult)
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		var r struct {
			Compute *stages.Compute `json:"compute"`
		}
		if err := json.Unmarshal(b, &r); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		counts[r.Compute.String()]++
	}
	return counts, nil
}
