package data

import (
	"fmt"
	"math"
)

// MaxCategory bounds every categorical value a dataset file may hold: a
// node label, a categorical node or edge feature and a class are below
// it. Each value up to the largest is a row of an embedding table (or an
// output), so a larger one would ask for a table of more rows than any
// graph set has categories.
const MaxCategory = 1 << 20

// ValidateCSR checks that c is a CSR over n rows whose entries lie in
// 0..cols-1 and are strictly ascending within each row; when noDiag is set
// row u must not contain u.
func ValidateCSR(c CSR, n, cols int, noDiag bool) error {
	if len(c.Ptr) != n+1 {
		return fmt.Errorf("CSR has %d row pointers for %d rows", len(c.Ptr), n)
	}
	if c.Ptr[0] != 0 {
		return fmt.Errorf("CSR row pointer 0 is %d, want 0", c.Ptr[0])
	}
	if int(c.Ptr[n]) != len(c.Idx) {
		return fmt.Errorf("CSR last row pointer %d does not match %d entries", c.Ptr[n], len(c.Idx))
	}
	// Monotone pointers from 0 to len(Idx) keep every row slice in bounds.
	for u := 0; u < n; u++ {
		if c.Ptr[u] > c.Ptr[u+1] {
			return fmt.Errorf("CSR row pointers decrease at row %d", u)
		}
	}
	for u := 0; u < n; u++ {
		a, b := c.Ptr[u], c.Ptr[u+1]
		prev := int32(-1)
		for _, v := range c.Idx[a:b] {
			if v < 0 || int(v) >= cols {
				return fmt.Errorf("CSR row %d holds %d outside 0..%d", u, v, cols-1)
			}
			if v <= prev {
				return fmt.Errorf("CSR row %d is not strictly ascending at %d", u, v)
			}
			if noDiag && int(v) == u {
				return fmt.Errorf("CSR row %d contains itself", u)
			}
			prev = v
		}
	}
	return nil
}

// Validate checks the graph against the contract of Graph and the
// vocabulary of ds: a symmetric simple adjacency, labels, edge types and
// class within range, and slices of the right lengths.
func (g *Graph) Validate(ds *Dataset) error {
	if g.N < 0 {
		return fmt.Errorf("negative node count %d", g.N)
	}
	if err := ValidateCSR(g.Adj, g.N, g.N, true); err != nil {
		return fmt.Errorf("adjacency: %w", err)
	}
	for u := 0; u < g.N; u++ {
		for _, v := range g.Adj.Row(u) {
			if !hasEntry(g.Adj.Row(int(v)), int32(u)) {
				return fmt.Errorf("adjacency is not symmetric: edge %d->%d has no reverse", u, v)
			}
		}
	}
	if g.EdgeType != nil {
		if len(g.EdgeType) != len(g.Adj.Idx) {
			return fmt.Errorf("%d edge types for %d edge entries", len(g.EdgeType), len(g.Adj.Idx))
		}
		for i, t := range g.EdgeType {
			if t < 0 || int(t) >= ds.NumEdgeTypes {
				return fmt.Errorf("edge entry %d has type %d outside 0..%d", i, t, ds.NumEdgeTypes-1)
			}
		}
	}
	if g.EdgeFeat != nil {
		w := len(ds.EdgeFeatVocab)
		if len(g.EdgeFeat) != len(g.Adj.Idx)*w {
			return fmt.Errorf("%d edge feature values for %d edge entries × %d features", len(g.EdgeFeat), len(g.Adj.Idx), w)
		}
		for i, f := range g.EdgeFeat {
			if c := i % w; f < 0 || int(f) >= ds.EdgeFeatVocab[c] {
				return fmt.Errorf("edge entry %d feature %d is %d outside 0..%d", i/w, c, f, ds.EdgeFeatVocab[c]-1)
			}
		}
	}
	if g.NodeCat != nil {
		w := len(ds.NodeCatVocab)
		if len(g.NodeCat) != g.N*w {
			return fmt.Errorf("%d categorical node feature values for %d nodes × %d features", len(g.NodeCat), g.N, w)
		}
		for i, f := range g.NodeCat {
			if c := i % w; f < 0 || int(f) >= ds.NodeCatVocab[c] {
				return fmt.Errorf("node %d feature %d is %d outside 0..%d", i/w, c, f, ds.NodeCatVocab[c]-1)
			}
		}
	}
	if g.Labels != nil {
		if len(g.Labels) != g.N {
			return fmt.Errorf("%d node labels for %d nodes", len(g.Labels), g.N)
		}
		for u, l := range g.Labels {
			if l < 0 || int(l) >= ds.NumLabels {
				return fmt.Errorf("node %d has label %d outside 0..%d", u, l, ds.NumLabels-1)
			}
		}
	}
	if g.Attrs != nil && len(g.Attrs) != g.N*ds.AttrDim {
		return fmt.Errorf("%d attribute values for %d nodes × %d attributes", len(g.Attrs), g.N, ds.AttrDim)
	}
	if ds.NumClasses > 0 && (g.Y < 0 || g.Y >= ds.NumClasses) {
		return fmt.Errorf("class %d outside 0..%d", g.Y, ds.NumClasses-1)
	}
	if g.Target != nil && len(g.Target) != ds.NumTargets {
		return fmt.Errorf("%d targets, want %d", len(g.Target), ds.NumTargets)
	}
	switch ds.TaskOf() {
	case TaskBinary:
		for t, y := range g.Target {
			if !math.IsNaN(y) && y != 0 && y != 1 {
				return fmt.Errorf("task %d has label %v, want 0, 1 or NaN (missing)", t, y)
			}
		}
	case TaskRegression:
		// NaN is a missing target, skipped by the loss and the metrics.
		for t, y := range g.Target {
			if math.IsInf(y, 0) {
				return fmt.Errorf("target %d is %v", t, y)
			}
		}
	}
	return nil
}

func hasEntry(row []int32, v int32) bool {
	lo, hi := 0, len(row)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if row[m] < v {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo < len(row) && row[lo] == v
}

// Validate checks every graph and every split of the dataset: split indices
// in range, no graph both in a split's test part and its train or
// validation part.
func (ds *Dataset) Validate() error {
	if ds.NumLabels < 0 || ds.AttrDim < 0 || ds.NumEdgeTypes < 0 || ds.NumClasses < 0 || ds.NumTargets < 0 {
		return fmt.Errorf("dataset %q: negative vocabulary size", ds.Name)
	}
	for _, v := range [][]int{ds.NodeCatVocab, ds.EdgeFeatVocab} {
		for _, n := range v {
			if n < 1 {
				return fmt.Errorf("dataset %q: categorical feature vocabulary of size %d", ds.Name, n)
			}
		}
	}
	switch ds.Task {
	case "", TaskClassification, TaskRegression:
	case TaskBinary:
		if ds.NumTargets < 1 {
			return fmt.Errorf("dataset %q: binary task with %d targets", ds.Name, ds.NumTargets)
		}
	default:
		return fmt.Errorf("dataset %q: unknown task %q", ds.Name, ds.Task)
	}
	for i := range ds.Graphs {
		if err := ds.Graphs[i].Validate(ds); err != nil {
			return fmt.Errorf("dataset %q: graph %d: %w", ds.Name, i, err)
		}
	}
	for i, s := range ds.Splits {
		if err := s.Validate(len(ds.Graphs)); err != nil {
			return fmt.Errorf("dataset %q: split %d: %w", ds.Name, i, err)
		}
	}
	return nil
}

// Validate checks that every index is in 0..n-1, that no index repeats
// within a part, and that the test part is disjoint from train and
// validation.
func (s Split) Validate(n int) error {
	where := make(map[int]string, len(s.Train)+len(s.Val)+len(s.Test))
	parts := []struct {
		name string
		idx  []int
	}{{"train", s.Train}, {"validation", s.Val}, {"test", s.Test}}
	for _, p := range parts {
		for _, i := range p.idx {
			if i < 0 || i >= n {
				return fmt.Errorf("%s index %d outside 0..%d", p.name, i, n-1)
			}
			if prev, ok := where[i]; ok && prev == p.name {
				return fmt.Errorf("graph %d is twice in %s", i, p.name)
			} else if ok {
				return fmt.Errorf("graph %d is in both %s and %s", i, prev, p.name)
			}
			where[i] = p.name
		}
	}
	return nil
}
