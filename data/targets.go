package data

import "fmt"

// SelectTargets returns ds with only the targets idx kept, in that order
// (e.g. one QM9 property per model, as GNN-FiLM trains): a copy sharing
// everything with ds but the target slices. Empty idx returns ds itself.
func SelectTargets(ds *Dataset, idx []int) (*Dataset, error) {
	if len(idx) == 0 {
		return ds, nil
	}
	for i, t := range idx {
		if t < 0 || t >= ds.NumTargets {
			return nil, fmt.Errorf("selecting targets of %q: target %d (position %d) outside 0..%d", ds.Name, t, i, ds.NumTargets-1)
		}
	}
	out := *ds
	out.NumTargets = len(idx)
	out.Graphs = make([]Graph, len(ds.Graphs))
	vals := make([]float64, len(ds.Graphs)*len(idx))
	for gi := range ds.Graphs {
		g := ds.Graphs[gi]
		if len(g.Target) != ds.NumTargets {
			return nil, fmt.Errorf("selecting targets of %q: graph %d has %d targets, want %d", ds.Name, gi, len(g.Target), ds.NumTargets)
		}
		t := vals[gi*len(idx) : (gi+1)*len(idx) : (gi+1)*len(idx)]
		for j, k := range idx {
			t[j] = g.Target[k]
		}
		g.Target = t
		out.Graphs[gi] = g
	}
	return &out, nil
}
