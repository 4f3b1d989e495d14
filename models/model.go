// Package models holds spn's graph models behind one interface, a
// constructor registry built by value, checkpoints, losses and metrics.
//
// The model kinds are one package each (models/spn, gcn, …) on the runtime
// models/rt, all listed by models/kinds; their parameters are models/param's.
package models

import (
	"fmt"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/models/kernels"
	"github.com/spn-project/spn/models/param"
	"github.com/spn-project/spn/schema/modelspec"
)

// Task kinds.
const (
	TaskClassification = "classification"
	TaskRegression     = "regression"
	// TaskBinary is multi-task binary classification with missing labels
	// (data.TaskBinary): Out logits per graph, BCE with logits over the
	// labelled entries.
	TaskBinary = "binary"
)

// Pooling kinds (model.pool): how node states are reduced to a graph's.
const (
	PoolSum  = "sum"
	PoolMean = "mean"
	PoolMax  = "max"
)

// Config is everything needed to build a model: the spec's model section and
// the dataset dimensions.
type Config struct {
	Model modelspec.Model `json:"model"`
	// NumLabels and AttrDim describe the node inputs (Dataset fields).
	NumLabels int `json:"num_labels"`
	AttrDim   int `json:"attr_dim"`
	// NodeCatVocab and EdgeFeatVocab are the vocabularies of the
	// categorical node and edge feature columns, NumEdgeTypes the number
	// of relations (Dataset fields; nil/0 when absent).
	NodeCatVocab  []int `json:"node_cat_vocab,omitempty"`
	EdgeFeatVocab []int `json:"edge_feat_vocab,omitempty"`
	NumEdgeTypes  int   `json:"num_edge_types,omitempty"`
	// Task is "classification", "regression" or "binary"; Out is the
	// number of classes, targets or binary tasks.
	Task string `json:"task"`
	Out  int    `json:"out"`
}

// ConfigFor returns the model configuration m for dataset ds.
func ConfigFor(m modelspec.Model, ds *data.Dataset) (Config, error) {
	c := Config{Model: m, NumLabels: ds.NumLabels, AttrDim: ds.AttrDim,
		NodeCatVocab: ds.NodeCatVocab, EdgeFeatVocab: ds.EdgeFeatVocab, NumEdgeTypes: ds.NumEdgeTypes}
	switch {
	case ds.TaskOf() == data.TaskBinary && ds.NumTargets > 0 && ds.NumClasses == 0:
		c.Task, c.Out = TaskBinary, ds.NumTargets
	case ds.NumClasses > 0 && ds.NumTargets == 0:
		c.Task, c.Out = TaskClassification, ds.NumClasses
	case ds.NumTargets > 0 && ds.NumClasses == 0:
		c.Task, c.Out = TaskRegression, ds.NumTargets
	default:
		return c, fmt.Errorf("dataset %q: need exactly one of NumClasses (%d) and NumTargets (%d)", ds.Name, ds.NumClasses, ds.NumTargets)
	}
	return c, nil
}

// CheckNodeInputs returns an error when the node inputs of b (labels in
// the vocabulary, attribute width) do not fit the model configuration c.
func (c Config) CheckNodeInputs(b *data.Batch) error {
	if c.NumLabels > 0 && len(b.Labels) != b.N {
		return fmt.Errorf("model expects %d node labels per node, batch has %d labels for %d nodes", c.NumLabels, len(b.Labels), b.N)
	}
	for u, l := range b.Labels {
		if c.NumLabels > 0 && (l < 0 || int(l) >= c.NumLabels) {
			return fmt.Errorf("node %d has label %d outside the model's vocabulary [0,%d)", u, l, c.NumLabels)
		}
	}
	if c.AttrDim > 0 && (b.AttrDim != c.AttrDim || len(b.Attrs) != b.N*c.AttrDim) {
		return fmt.Errorf("model expects %d attributes per node, batch has %d (%d values)", c.AttrDim, b.AttrDim, len(b.Attrs))
	}
	return nil
}

// Model is a trainable graph-level model. Forward and Backward are a pair:
// Backward propagates through the most recent Forward.
type Model interface {
	// Forward returns the NumGraphs×Out outputs (logits or regression values)
	// for b; train selects batch statistics and dropout.
	Forward(b *data.Batch, train bool) ([]float32, error)
	// Backward accumulates parameter gradients for the output gradient dOut.
	Backward(dOut []float32)
	// Params returns the trainable parameters in a fixed order, with unique names.
	Params() []*param.Param
	// Buffers returns the non-trainable state (e.g. batch-norm running
	// statistics) by unique name.
	Buffers() map[string][]float64
	// Config returns the configuration the model was built from.
	Config() Config
	// Hops is how many hop sets (Batch.Hop) the model reads from a batch.
	Hops() int
}

// Stepper is implemented by models whose computation graph holds the loss
// (the Gorgonia models of models/rt): Step runs the training-mode forward
// pass, the loss (cross-entropy or MSE by Config.Task) and the backward pass
// on b in one go, adds the gradients into Params, and returns the mean loss
// and the outputs. Training uses Step instead of Forward+Backward when a
// model has it.
type Stepper interface {
	Step(b *data.Batch) (loss float64, out []float32, err error)
}

// AsyncStepper is implemented by models whose training step can run on
// a device without the host waiting for it (the Gorgonia models of
// models/rt on a device): StepAsync does what Step does, but returns once
// the step's work is enqueued on the device, with resolve, which waits
// for the step and returns Step's loss and outputs. Between the two the
// caller may prepare and enqueue the next step (and its optimiser step),
// so that the host's work overlaps the device's. The steps run in the
// order they were enqueued, and their results are what Step's would be,
// bit for bit; resolve may be called once or more, in any order. Without
// a device StepAsync runs Step and resolve returns its results.
type AsyncStepper interface {
	StepAsync(b *data.Batch) (resolve func() (loss float64, out []float32, err error), err error)
}

// Backed is implemented by models that compute on a kernels.Backend (the
// Gorgonia models of models/rt): training runs the optimiser step on the
// same backend, so on the same threads.
type Backed interface {
	Backend() kernels.Backend
}

// HopWeights is implemented by models with learned hop weights (SPN): it
// returns α per layer and ε per layer.
type HopWeights interface {
	HopWeights() (alpha [][]float64, eps []float64)
}

// UnreachableReader is implemented by models that can aggregate over N_∞
// (Batch.Unreachable, the nodes of a graph in other connected
// components): ReadsUnreachable says whether this one does.
type UnreachableReader interface {
	ReadsUnreachable() bool
}

// BatchOptions returns the neighbourhoods m reads from a batch: its hop
// sets N_1..N_k (Model.Hops) and N_∞ when it reads it
// (UnreachableReader). Every place that builds batches for a model asks
// here.
func BatchOptions(m Model) data.BatchOptions {
	o := data.BatchOptions{K: m.Hops()}
	if u, ok := m.(UnreachableReader); ok {
		o.Unreachable = u.ReadsUnreachable()
	}
	return o
}
