package exec

import (
	"os"
	"time"

	"github.com/spn-project/spn/stages/cache"
	"github.com/spn-project/spn/stages/plan"
)

// MissingInput returns the name of the first input of n that is not in
// the cache c, or "" when all are: a stage run from a plan file (spn
// stage run) whose inputs are not there cannot run.
func MissingInput(c *cache.Cache, n *plan.Node) string {
	for _, d := range n.Deps {
		if ok, _ := c.Has(d.Kind, d.Key); !ok {
			return d.Name
		}
	}
	return ""
}

// RecordFailures records err as the failure of every stage of keys (the
// stages of f a job was to run) in the cache at root, if that cache
// exists: a Slurm job that cannot run its stages (no GPU on its node)
// then shows why in spn status and spn run --wait, not only in its job
// log. It is best effort: keys not in f are skipped, and a cache that
// cannot be opened or written records nothing, the caller's own error
// being what it reports.
func (f *PlanFile) RecordFailures(root string, keys []string, err error) {
	if _, serr := os.Stat(root); serr != nil {
		return
	}
	c, cerr := cache.Open(root)
	if cerr != nil {
		return
	}
	for _, key := range keys {
		if n, nerr := f.Node(key); nerr == nil {
			_ = c.RecordFailure(cache.Failure{Key: n.Key, Kind: n.Kind, Name: n.Name, Error: err.Error(), Time: time.Now()})
		}
	}
}
