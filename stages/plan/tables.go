package plan

import (
	"sort"

	"github.com/spn-project/spn/schema"
	"github.com/spn-project/spn/stages"
	"github.com/spn-project/spn/stages/cache"
	"github.com/spn-project/spn/stages/selection"
)

// TableNeeds returns, after Resolve, the experiments of spec's tables and
// figures whose results are not cached (their evaluate stage, or an
// input of a figure's stage; sorted, each once) and how many tables and
// figures must still be rendered: what spn table waits for before it
// writes the tables, as tables and figures render from finished
// experiments only.
func (p *Plan) TableNeeds(spec *schema.Spec) (missing []string, pending int) {
	seen := map[string]bool{}
	for _, t := range spec.Tables {
		if p.Tabulate[t.Name].Status == ToRun {
			pending++
		}
		for _, e := range p.TableExperiments[t.Name] {
			if p.Evaluate[e].Status != Cached && !seen[e] {
				seen[e] = true
				missing = append(missing, e)
			}
		}
	}
	for _, f := range spec.Figures {
		n := p.Figure[f.Name]
		if n.Status == ToRun {
			pending++
		}
		if inputsMissing(n) && !seen[f.Experiment] {
			seen[f.Experiment] = true
			missing = append(missing, f.Experiment)
		}
	}
	sort.Strings(missing)
	return missing, pending
}

// inputsMissing reports whether a stage lacks a cached input.
func inputsMissing(n *Node) bool {
	for _, d := range n.Deps {
		if d.Status != Cached {
			return true
		}
	}
	return false
}

// TableResults returns the evaluation results in c of the experiments of
// the table (TableExperiments), by experiment, and the experiments that
// have none (sorted): their evaluate stage is not in c, or its result
// does not read. A partial table renders from them, the missing
// experiments' cells marked.
func (p *Plan) TableResults(table string, c *cache.Cache) (results map[string]*stages.EvalResult, missing []string) {
	results = map[string]*stages.EvalResult{}
	for _, e := range p.TableExperiments[table] {
		ev := p.Evaluate[e]
		if ok, _ := c.Has(ev.Kind, ev.Key); !ok {
			missing = append(missing, e)
			continue
		}
		r, err := selection.ReadEvalResult(c.StageDir(ev.Kind, ev.Key))
		if err != nil {
			missing = append(missing, e)
			continue
		}
		results[e] = r
	}
	sort.Strings(missing)
	return results, missing
}
