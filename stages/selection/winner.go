package selection

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spn-project/spn/stages"
	"github.com/spn-project/spn/stages/cache"
)

// Stage names a stage of the cache: its kind, key and display name.
type Stage struct{ Kind, Key, Name string }

// Winner returns the holdout winner recorded by the finished evaluate
// stage ev (kind, key and name) of cache c, or 0 when the experiment has
// a single point.
func Winner(c *cache.Cache, ev Stage, points int) (int, error) {
	if points == 1 {
		return 0, nil
	}
	done, err := c.Has(ev.Kind, ev.Key)
	if err != nil {
		return 0, err
	}
	if d := c.Damaged(ev.Kind, ev.Key); d != nil {
		return 0, fmt.Errorf("the cached evaluation %s is damaged, so it is not used: %v; run the spec again or pass --point", ev.Name, d)
	}
	if !done {
		return 0, fmt.Errorf("%d grid points and no finished evaluation to pick the winner: pass --point or run the spec", points)
	}
	path := filepath.Join(c.StageDir(ev.Kind, ev.Key), stages.FileResult)
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("reading evaluation: %w", err)
	}
	var r stages.EvalResult
	if err := json.Unmarshal(b, &r); err != nil {
		return 0, fmt.Errorf("reading %s: %w", path, err)
	}
	if r.Winner < 0 || r.Winner >= points {
		return 0, fmt.Errorf("%s: winner %d outside the %d grid points", path, r.Winner, points)
	}
	return r.Winner, nil
}
