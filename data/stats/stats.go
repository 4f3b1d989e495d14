// Package stats summarises a dataset: sizes, vocabulary and the
// distance-based statistics of package sp (diameter, connectivity) over all
// graphs.
package stats

import (
	"context"
	"fmt"
	"slices"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/data/sp"
	"github.com/spn-project/spn/internal/par"
)

// Summary is the statistics of one dataset. Diameters are per graph the
// largest distance within a connected component.
type Summary struct {
	Name           string  `json:"name"`
	Graphs         int     `json:"graphs"`
	MeanNodes      float64 `json:"mean_nodes"`
	MeanEdges      float64 `json:"mean_edges"`
	MaxNodes       int     `json:"max_nodes"`
	NodeLabels     int     `json:"node_labels"`
	AttrDim        int     `json:"node_attributes"`
	Classes        int     `json:"classes"`
	DiameterMean   float64 `json:"diameter_mean"`
	DiameterMedian float64 `json:"diameter_median"`
	DiameterMax    int     `json:"diameter_max"`
	FracConnected  float64 `json:"fraction_connected"`
	// ClassCounts[c] is the number of graphs of class c.
	ClassCounts []int `json:"class_counts,omitempty"`
	// Splits is the number of fixed splits (folds).
	Splits int `json:"splits"`
	// NegativesViolating is, for h-Proximity, the fraction of class-0
	// graphs that really violate the rule (set by the caller, which knows
	// h; nil otherwise).
	NegativesViolating *float64 `json:"negatives_violating,omitempty"`
}

// Compute summarises ds, running the per-graph BFS on up to threads
// goroutines (0: GOMAXPROCS); results are combined in graph order.
func Compute(ctx context.Context, ds *data.Dataset, threads int) (Summary, error) {
	s := Summary{Name: ds.Name, Graphs: len(ds.Graphs), NodeLabels: ds.NumLabels, AttrDim: ds.AttrDim, Classes: ds.NumClasses, Splits: len(ds.Splits)}
	if len(ds.Graphs) == 0 {
		return s, nil
	}
	per := make([]sp.GraphStats, len(ds.Graphs))
	err := par.Each(ctx, len(ds.Graphs), threads, func(i int) error {
		st, err := sp.Stats(ctx, &ds.Graphs[i])
		if err != nil {
			return fmt.Errorf("graph %d: %w", i, err)
		}
		st.Eccentricity = nil // not needed here; keeps memory flat
		per[i] = st
		return nil
	})
	if err != nil {
		return s, fmt.Errorf("statistics of %s: %w", ds.Name, err)
	}
	diam := make([]int, len(per))
	var nodes, edges, conn, dsum int
	if ds.NumClasses > 0 {
		s.ClassCounts = make([]int, ds.NumClasses)
	}
	for i, st := range per {
		nodes += st.Nodes
		edges += st.Edges
		s.MaxNodes = max(s.MaxNodes, st.Nodes)
		if st.Connected {
			conn++
		}
		diam[i] = st.Diameter
		dsum += st.Diameter
		if y := ds.Graphs[i].Y; s.ClassCounts != nil && y >= 0 && y < len(s.ClassCounts) {
			s.ClassCounts[y]++
		}
	}
	n := float64(len(per))
	s.MeanNodes = float64(nodes) / n
	s.MeanEdges = float64(edges) / n
	s.FracConnected = float64(conn) / n
	s.DiameterMean = float64(dsum) / n
	slices.Sort(diam)
	s.DiameterMax = diam[len(diam)-1]
	if len(diam)%2 == 1 {
		s.DiameterMedian = float64(diam[len(diam)/2])
	} else {
		s.DiameterMedian = float64(diam[len(diam)/2-1]+diam[len(diam)/2]) / 2
	}
	return s, nil
}
