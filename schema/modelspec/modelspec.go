// Package modelspec holds the parts of a spec that the model library
// reads (a model section, a training configuration, what a dataset
// declares) and the field errors the model kinds report, as plain Go
// structs. It imports nothing: package schema loads spec files (with CUE)
// into these types and re-exports them, so the models depend on them
// without depending on CUE.
package modelspec

import (
	"fmt"
	"strings"
)

// Model is one model configuration.
type Model struct {
	// Kind names a model kind of the registry (models/kinds), e.g. "spn".
	Kind    string  `json:"kind"`
	K       int     `json:"k"`
	Layers  int     `json:"layers"`
	Hidden  int     `json:"hidden"`
	Dropout float64 `json:"dropout"`
	// Pool is "sum", "mean" or "max".
	Pool string `json:"pool"`
	// Eps is the initial ε; LearnEps makes it trainable.
	Eps      float64 `json:"eps"`
	LearnEps bool    `json:"learn_eps"`
	// Heads is the number of attention heads (gat, graphormer).
	Heads int `json:"heads,omitempty"`
	// MaxDist clamps distances for Graphormer's spatial bias.
	MaxDist int `json:"max_dist,omitempty"`
	// GlobalReadout adds the global readout term (Σ_{v∈G} h_v)·W to every
	// layer of the SPN kinds (SP-MPNN with global readout, paper §3).
	GlobalReadout bool `json:"global_readout,omitempty"`
	// GatedReadout replaces the layer readout by GNN-FiLM's gated sum over
	// the nodes (rspn).
	GatedReadout bool `json:"gated_readout,omitempty"`
	// LayerNorm puts a layer norm of its own on every layer's pooled
	// state before its map in the layer-sum readout (not on the input
	// embedding's), as the official code's --layer_norm does (spn, gin,
	// espn).
	LayerNorm bool `json:"layer_norm,omitempty"`
	// Linear makes gcn and gat the official code's linear layers (no MLP
	// between layers).
	Linear bool `json:"linear,omitempty"`
	// AlphaInit is the SPN kinds' initial hop-weight logits: AlphaZeros
	// (also "") or AlphaNormal.
	AlphaInit string `json:"alpha_init,omitempty"`
	// Unreachable adds the aggregation over N_∞(u), the nodes of u's
	// graph in other connected components, with a hop weight α_∞ of its
	// own (the paper's appendix, on disconnected graphs): kind spn.
	Unreachable bool `json:"unreachable,omitempty"`
	// Conv is DRew's map per hop set (kind drew): ConvGIN, ConvGINE or
	// ConvGCN.
	Conv string `json:"conv,omitempty"`
	// Delay is DRew's delay ν (kind drew): ν ≥ 1, or DelayNone for ν = ∞.
	Delay Delay `json:"delay,omitempty"`
	// Weights is DRew's hop weighting (kind drew): WeightsEqual or
	// WeightsLearned.
	Weights string `json:"weights,omitempty"`
}

// Values of Model.Conv and Model.Weights (kind drew).
const (
	ConvGIN        = "gin"
	ConvGINE       = "gine"
	ConvGCN        = "gcn"
	WeightsEqual   = "equal"
	WeightsLearned = "learned"
)

// Delay is DRew's delay ν: an integer ν ≥ 1, or DelayNone (no delay,
// ν = ∞), which specs write "none".
type Delay int

// DelayNone is ν = ∞: every hop reads the current layer's states.
const DelayNone Delay = 0

// UnmarshalJSON reads an integer or "none".
func (d *Delay) UnmarshalJSON(b []byte) error {
	s := strings.TrimSpace(string(b))
	if s == `"none"` {
		*d = DelayNone
		return nil
	}
	var v int
	if _, err := fmt.Sscan(s, &v); err != nil || fmt.Sprint(v) != s {
		return fmt.Errorf("delay %s: want an integer ≥ 1 or \"none\"", s)
	}
	*d = Delay(v)
	return nil
}

// MarshalJSON writes ν, or "none" for DelayNone.
func (d Delay) MarshalJSON() ([]byte, error) {
	if d == DelayNone {
		return []byte(`"none"`), nil
	}
	return []byte(fmt.Sprint(int(d))), nil
}

// String is ν, or "none".
func (d Delay) String() string {
	if d == DelayNone {
		return "none"
	}
	return fmt.Sprint(int(d))
}

// HopTerms is the number of hop weights α of one layer of an SPN kind:
// one per hop set N_1..N_k, and one for N_∞ with Unreachable.
func (m Model) HopTerms() int {
	if m.Unreachable {
		return m.K + 1
	}
	return m.K
}

// Values of Model.AlphaInit: zero hop-weight logits (uniform α, the
// default) or logits drawn from N(0, 1), as the official code does
// (torch.randn in GIN_HSP_Layer).
const (
	AlphaZeros  = "zeros"
	AlphaNormal = "normal"
)

// Canonical returns m with every optional field that holds its default
// spelled as absent, so that a spec writing a default out and one leaving
// it out describe the same model (and name the same stages).
func (m Model) Canonical() Model {
	if m.AlphaInit == AlphaZeros {
		m.AlphaInit = ""
	}
	return m
}

// Training is one optimisation configuration.
type Training struct {
	Optimizer   string  `json:"optimizer"`
	LR          float64 `json:"lr"`
	WeightDecay float64 `json:"weight_decay"`
	BatchSize   int     `json:"batch_size"`
	Epochs      int     `json:"epochs"`
	// Selection is "best_val_loss", "best_val_metric" or "early_stopping".
	Selection string `json:"selection"`
	Patience  int    `json:"patience,omitempty"`
	// StepEvery/StepGamma: multiply lr by StepGamma every StepEvery epochs (0 = off).
	StepEvery int     `json:"step_every,omitempty"`
	StepGamma float64 `json:"step_gamma,omitempty"`
	// Plateau, when set, is a reduce-on-plateau schedule (PyTorch's
	// ReduceLROnPlateau) in place of the step schedule; nil (absent from
	// the JSON, so from the stage keys) when the spec does not set it.
	Plateau *Plateau `json:"plateau,omitempty"`
}

// Values of Plateau.Monitor: the quantity a reduce-on-plateau schedule
// watches after each epoch.
const (
	MonitorValLoss   = "val_loss"
	MonitorValMetric = "val_metric"
)

// Plateau is a reduce-on-plateau learning-rate schedule, with the fields
// and defaults of PyTorch's torch.optim.lr_scheduler.ReduceLROnPlateau
// (threshold_mode "rel", eps 1e-8): after each epoch the monitored value
// is compared with the best so far, and lr becomes max(lr·Factor, MinLR)
// once more than Patience epochs in a row have not improved on it. The
// mode (min or max) follows the monitor: min for the validation loss,
// the metric's direction for the validation metric.
type Plateau struct {
	// Monitor is MonitorValLoss or MonitorValMetric.
	Monitor string `json:"monitor"`
	// Factor multiplies lr on a plateau, in (0, 1).
	Factor float64 `json:"factor"`
	// Patience is the number of epochs without improvement tolerated
	// before lr is reduced.
	Patience int `json:"patience"`
	// Threshold is the relative improvement that counts: in min mode a
	// value v improves on the best b when v < b·(1−Threshold).
	Threshold float64 `json:"threshold"`
	// MinLR is the lower bound of lr.
	MinLR float64 `json:"min_lr"`
	// Cooldown is the number of epochs after a reduction during which
	// epochs without improvement are not counted.
	Cooldown int `json:"cooldown"`
}

// DatasetInfo is what a dataset section declares about its graphs without
// loading them: what the model kinds check a model section against (spn
// vet and plan), so that a model reading inputs the dataset lacks fails
// before training.
type DatasetInfo struct {
	// Kind is the dataset kind; Known is false for a kind this table does
	// not describe (its Relations and feature fields are then unknown and
	// the checks that need them are skipped). schema.InfoOf fills it from a
	// dataset section; models.InfoFor from a loaded dataset.
	Kind  string
	Known bool
	// KMax is the largest precomputed hop distance (dataset.kmax);
	// Unreachable whether N_∞ is kept.
	KMax        int
	Unreachable bool
	// Relations is the number of edge types (0: untyped edges).
	Relations int
	// EdgeFeatures and NodeCategories say whether the graphs carry
	// categorical edge features and categorical node features.
	EdgeFeatures, NodeCategories bool
}

// FieldError is a problem with one field of a model section, found by a
// model kind's Check (schema.ModelChecker); Field is relative to the section (e.g. "k").
type FieldError struct {
	Field string
	Msg   string
}

// Error implements error as "model.FIELD: MSG", or "model.MSG" when the
// message starts with the field ("k = 0: need at least 1 hop").
func (e FieldError) Error() string {
	if strings.HasPrefix(e.Msg, e.Field+" ") {
		return "model." + e.Msg
	}
	return "model." + e.Field + ": " + e.Msg
}
