// Package predict runs a trained model on new graphs: it computes their hop
// sets on the fly and returns one prediction per graph (class and class
// probabilities, or regression values).
package predict

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/data/sp"
	"github.com/spn-project/spn/models"
	"github.com/spn-project/spn/models/fit"
	"github.com/spn-project/spn/models/rt"
)

// Prediction is the model's output for one graph.
type Prediction struct {
	// Class is the arg-max class (classification only).
	Class *int `json:"class,omitempty"`
	// Probabilities are the softmax class probabilities (classification).
	Probabilities []float64 `json:"probabilities,omitempty"`
	// TaskProbabilities are, per binary task, the probability of label 1
	// (the sigmoid of the task's logit; multi-task binary sets like OGB's).
	TaskProbabilities []float64 `json:"task_probabilities,omitempty"`
	// Values are the regression outputs (regression only).
	Values []float64 `json:"values,omitempty"`
}

// GraphError is an error about one input graph of Graphs, by its index.
type GraphError struct {
	Graph int
	Err   error
}

// Error returns "graph I: error".
func (e *GraphError) Error() string { return fmt.Sprintf("graph %d: %v", e.Graph, e.Err) }

// Unwrap returns the error about the graph.
func (e *GraphError) Unwrap() error { return e.Err }

// Graphs returns m's predictions (evaluation mode) for graphs, whose node
// labels and attributes must fit the model's input vocabulary. threads
// bounds the hop-set computation, and maxHopEntries the entries of one
// graph's hop sets N_1..N_k and, for a model that reads it, N_∞ (as
// sp.ComputeLimit's limit). A graph that does not fit is a *GraphError.
func Graphs(ctx context.Context, m models.Model, graphs []data.Graph, threads int, maxHopEntries int64) ([]Prediction, error) {
	cfg := m.Config()
	graphs = slices.Clone(graphs) // the fields set below must not reach the caller
	ds := &data.Dataset{Name: "input", Graphs: graphs, NumLabels: cfg.NumLabels, AttrDim: cfg.AttrDim,
		NumEdgeTypes: cfg.NumEdgeTypes, NodeCatVocab: cfg.NodeCatVocab, EdgeFeatVocab: cfg.EdgeFeatVocab}
	// Targets are not known: give every graph class 0 (or zero targets) so
	// the batch builder's checks pass; they are never read here.
	if cfg.Task == models.TaskClassification {
		ds.NumClasses = cfg.Out
	}
	for i := range graphs {
		g := &graphs[i]
		if cfg.NumLabels > 0 && len(g.Labels) != g.N {
			return nil, &GraphError{i, fmt.Errorf("the model needs one node label per node (%d), got %d", g.N, len(g.Labels))}
		}
		if cfg.NumLabels == 0 {
			g.Labels = nil
		}
		if cfg.AttrDim > 0 && len(g.Attrs) != g.N*cfg.AttrDim {
			return nil, &GraphError{i, fmt.Errorf("the model needs %d attributes per node, got %d values for %d nodes", cfg.AttrDim, len(g.Attrs), g.N)}
		}
		if cfg.AttrDim == 0 {
			g.Attrs = nil
		}
		if w := len(cfg.NodeCatVocab); w > 0 && len(g.NodeCat) != g.N*w {
			return nil, &GraphError{i, fmt.Errorf("the model needs %d categorical features per node, got %d values for %d nodes", w, len(g.NodeCat), g.N)}
		} else if w == 0 {
			g.NodeCat = nil
		}
		if w := len(cfg.EdgeFeatVocab); w > 0 && len(g.EdgeFeat) != len(g.Adj.Idx)*w {
			return nil, &GraphError{i, fmt.Errorf("the model needs %d categorical features per edge, got %d values for %d edges", w, len(g.EdgeFeat), g.NumEdges())}
		} else if w == 0 {
			g.EdgeFeat = nil
		}
		g.Y = 0
		g.Target = nil
		// Feature values must lie in the vocabularies the model was trained on.
		if err := g.Validate(ds); err != nil {
			return nil, &GraphError{i, err}
		}
	}
	var hops *data.Hops
	if o := models.BatchOptions(m); o.K > 0 || o.Unreachable {
		var err error
		if hops, err = sp.ComputeLimit(ctx, graphs, o.K, o.Unreachable, threads, maxHopEntries); err != nil {
			if le := (*sp.LimitError)(nil); errors.As(err, &le) {
				sets := fmt.Sprintf("N_1..N_%d", o.K)
				if o.K == 1 {
					sets = "N_1"
				}
				if o.Unreachable {
					sets += " and N_∞"
				}
				return nil, &GraphError{le.Graph, fmt.Errorf("its hop sets %s have more than %d entries", sets, le.Limit)}
			}
			return nil, err
		}
	}
	idx := make([]int, len(graphs))
	for i := range idx {
		idx[i] = i
	}
	out, _, err := fit.Predict(m, ds, hops, idx, 256)
	if err != nil {
		return nil, err
	}
	preds := make([]Prediction, len(graphs))
	c := cfg.Out
	for i := range preds {
		row := out[i*c : (i+1)*c]
		if cfg.Task == models.TaskRegression {
			preds[i].Values = make([]float64, c)
			for j, v := range row {
				preds[i].Values[j] = float64(v)
			}
			continue
		}
		if cfg.Task == models.TaskBinary {
			preds[i].TaskProbabilities = make([]float64, c)
			for j, v := range row {
				preds[i].TaskProbabilities[j] = 1 / (1 + math.Exp(-float64(v)))
			}
			continue
		}
		preds[i].Probabilities = softmax(row)
		class := 0
		for j, p := range preds[i].Probabilities {
			if p > preds[i].Probabilities[class] {
				class = j
			}
		}
		preds[i].Class = &class
	}
	return preds, nil
}

func softmax(row []float32) []float64 {
	p := make([]float64, len(row))
	rt.Softmax(p, row)
	return p
}
