// Package separation runs concrete random SPNs on graph pairs: whether
// a model of kind spn tells the two graphs of a pair apart, the concrete
// side of spn expressivity (data/expressivity decides the pairs by colour
// refinement).
package separation

import (
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/data/expressivity"
	"github.com/spn-project/spn/models"
	"github.com/spn-project/spn/models/kernels"
	"github.com/spn-project/spn/models/kinds"
	"github.com/spn-project/spn/models/predict"
	"github.com/spn-project/spn/schema/modelspec"
)

// The concrete SPNs of spn expressivity (Tolerance is exported for the
// report's note): the production model (kind spn,
// built by the train stage's registry, run through predict.Graphs in
// evaluation mode) with random initial weights, sum pooling, no dropout.
// Production models compute in float32, so two outputs count as different
// when they differ by more than Tolerance relative to the larger output
// magnitude: float32 sums of the same numbers in another order (an
// isomorphic graph's node order) differ by about 1e-7 relative, far below
// it.
const (
	Tolerance = 1e-4
	hidden    = 32
	outputs   = 4
	// layers: one more than the most refinement rounds SP-MPNN(k) needed
	// on any pair, between minLayers and maxLayers.
	minLayers = 2
	maxLayers = 8
)

// Description describes the concrete SPNs, for a report's note.
const Description = "float32, hidden 32, sum pooling, layers = refinement rounds + 1 in 2..8, 4 outputs, initial α uniform"

// SPN (an expressivity.Separator) runs, for every k asked and seeds seeds, one random SPN on
// the graphs of all pairs at once (so a model is built once per k and
// seed) and returns each pair's separations, parallel to pairs. results[i]
// is pairs[i]'s refinement; the layers for k are one more than the most
// rounds its SP-MPNN(k) refinement needed on any pair, within
// minLayers..maxLayers. With unreachable the SPNs also aggregate
// over N_∞ (model.unreachable), as results' refinement then does.
func SPN(ctx context.Context, pairs []expressivity.Pair, results []*expressivity.Result, seeds int, unreachable bool) ([][]expressivity.Separation, error) {
	var graphs []data.Graph
	numLabels, attrDim := 1, -1
	for pi := range pairs {
		for _, g := range []data.Graph{pairs[pi].A, pairs[pi].B} {
			if g.NodeCat != nil {
				return nil, fmt.Errorf("pair %s: the SPN check does not take categorical node features (\"node_feat\"); use --spn-seeds 0", pairs[pi].Name)
			}
			if g.Labels == nil {
				g.Labels = make([]int32, g.N) // label 0, as the refinement assumes
			}
			for _, l := range g.Labels {
				numLabels = max(numLabels, int(l)+1)
			}
			if g.N > 0 {
				d := len(g.Attrs) / g.N
				if attrDim >= 0 && d != attrDim {
					return nil, fmt.Errorf("pair %s: graphs with %d and %d attributes per node; the SPN check needs one width", pairs[pi].Name, attrDim, d)
				}
				attrDim = d
			}
			graphs = append(graphs, g)
		}
	}
	attrDim = max(attrDim, 0)
	// The ks asked, each with the layers its refinement calls for.
	layers := map[int]int{}
	var ks []int
	for _, r := range results {
		for _, kr := range r.SPMPNN {
			if _, ok := layers[kr.K]; !ok {
				ks = append(ks, kr.K)
			}
			layers[kr.K] = max(layers[kr.K], min(max(kr.Rounds+1, minLayers), maxLayers))
		}
	}
	slices.Sort(ks)
	reg := kinds.All()
	be := kernels.CPU{Threads: 1}
	out := make([][]expressivity.Separation, len(pairs))
	for _, k := range ks {
		cfg := models.Config{
			Model:     modelspec.Model{Kind: "spn", K: k, Layers: layers[k], Hidden: hidden, Pool: "sum", Unreachable: unreachable},
			NumLabels: numLabels, AttrDim: attrDim, Task: models.TaskRegression, Out: outputs,
		}
		seps := make([]expressivity.Separation, len(pairs))
		for pi := range seps {
			seps[pi] = expressivity.Separation{K: k, Layers: layers[k], Seeds: seeds}
		}
		for seed := 1; seed <= seeds; seed++ {
			m, err := reg.New(cfg, uint64(seed), be)
			if err != nil {
				return nil, fmt.Errorf("SPN k=%d: %w", k, err)
			}
			preds, err := predict.Graphs(ctx, m, graphs, 1, 0)
			if err != nil {
				return nil, fmt.Errorf("SPN k=%d: %w", k, err)
			}
			for pi := range seps {
				d := relDiff(preds[2*pi].Values, preds[2*pi+1].Values)
				seps[pi].MaxRelDiff = max(seps[pi].MaxRelDiff, d)
				if d > Tolerance {
					seps[pi].Separating++
				}
			}
		}
		for pi, sp := range seps {
			if slices.ContainsFunc(results[pi].SPMPNN, func(kr expressivity.KResult) bool { return kr.K == k }) {
				out[pi] = append(out[pi], sp)
			}
		}
	}
	return out, nil
}

// relDiff returns max|a−b| / max(1, max|a|, max|b|).
func relDiff(a, b []float64) float64 {
	diff, scale := 0.0, 1.0
	for i := range a {
		diff = max(diff, math.Abs(a[i]-b[i]))
		scale = max(scale, math.Abs(a[i]), math.Abs(b[i]))
	}
	return diff / scale
}
