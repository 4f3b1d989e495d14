package models

import (
	"errors"
	"fmt"
	"math"
	"sort"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/models/kernels"
	"github.com/spn-project/spn/models/metric"
	"github.com/spn-project/spn/schema/modelspec"
)

// Kind is one model architecture (model.kind): the one place that knows
// its name, its configuration constraints beyond the field ranges of its
// CUE definition, and how to build it. Schema checks (spn vet, plan),
// training, prediction and checkpoints all consult the Kind of a model
// through a Registry.
type Kind interface {
	// Name is the model.kind value of specs.
	Name() string
	// Check returns the problems of model section m for a dataset that
	// declares d (d.KMax ≤ 0: kmax not known, skip that check; !d.Known:
	// its inputs not known, skip those checks), each naming its field.
	Check(m modelspec.Model, d modelspec.DatasetInfo) []modelspec.FieldError
	// New builds the model for cfg (which has passed Check); all random
	// initialisation and dropout derive from seed.
	New(cfg Config, seed uint64, be kernels.Backend) (Model, error)
	// ParamCount is the number of parameter values of the model New
	// builds for cfg, computed from cfg alone (with param.Prod's
	// saturating arithmetic, so that it never overflows), so that a
	// configuration too large for memory is refused before anything is
	// allocated. It equals the lengths of the built model's Params.
	ParamCount(cfg Config) int64
}

// MaxParamValues bounds the parameter values of a model: 2³⁰, which
// with their gradients and Adam's two moments take 16 GiB. The paper's
// largest models hold about a million (E-SPN, d = 300).
const MaxParamValues = 1 << 30

// MaxLayers bounds model.layers: 64. The paper's models have at most 5
// layers, a message-passing network loses what tells nodes apart long
// before 64 (over-smoothing), and past it the cost stops making sense:
// the expression graph is built and differentiated for every batch
// shape, at a cost that grows faster than the layers (a model of 1,000
// layers spent minutes building its first graph, during which a signal
// could not stop it).
const MaxLayers = 64

// Revised is a Kind whose math or parameters changed in a way that moves
// its results (the order of a sum, a parameter's layout): Revision, from
// 2 on, enters the key of every train stage of the kind, so that results
// cached before the change are not taken for the new code's. A kind
// without it is at revision 1. A kind whose checkpoints changed layout
// also reads the older ones (Upgrader).
type Revised interface {
	Kind
	// Revision is the kind's revision; raise it with each such change and
	// say why in its doc comment.
	Revision() int
}

// Revision returns the revision of kind name: Revised's, else 1 (and 1
// for a kind the registry does not have; Check reports that).
func (r Registry) Revision(name string) int {
	if k, ok := r[name].(Revised); ok {
		return k.Revision()
	}
	return 1
}

// Registry holds the model kinds by name.
type Registry map[string]Kind

// NewRegistry returns the registry of kinds (a later kind of the same
// name replaces an earlier one).
func NewRegistry(kinds ...Kind) Registry {
	r := Registry{}
	for _, k := range kinds {
		r[k.Name()] = k
	}
	return r
}

// Names returns the kind names, sorted.
func (r Registry) Names() []string {
	ns := make([]string, 0, len(r))
	for n := range r {
		ns = append(ns, n)
	}
	sort.Strings(ns)
	return ns
}

// Lookup returns the kind called name.
func (r Registry) Lookup(name string) (Kind, error) {
	k, ok := r[name]
	if !ok {
		return nil, fmt.Errorf("model.kind %q is unknown to this model registry (have %v)", name, r.Names())
	}
	return k, nil
}

// CheckMetric implements schema.MetricChecker: metric.Check, the one
// table of which metric suits which task.
func (r Registry) CheckMetric(name string, task data.Task, out int) error {
	return metric.Check(name, task, out)
}

// CheckModel implements schema.ModelChecker: the problems of m's kind
// (an unknown kind is one, on field kind), then its size: a model whose
// parameters without the dataset's inputs and outputs (which spec
// checks do not know) are already over MaxParamValues is a problem on
// field hidden, or on layers when one layer would fit.
func (r Registry) CheckModel(m modelspec.Model, d modelspec.DatasetInfo) []modelspec.FieldError {
	k, ok := r[m.Kind]
	if !ok {
		return []modelspec.FieldError{{Field: "kind", Msg: fmt.Sprintf("model kind %q is not built by this spn (have %v)", m.Kind, r.Names())}}
	}
	if errs := k.Check(m, d); len(errs) > 0 {
		return errs
	}
	least := func(m modelspec.Model) int64 { return k.ParamCount(Config{Model: m, NumEdgeTypes: d.Relations}) }
	n := least(m)
	if n <= MaxParamValues {
		if m.Layers > MaxLayers {
			return []modelspec.FieldError{{Field: "layers", Msg: fmt.Sprintf("%d layers; at most %d are allowed (the paper's models have at most 5, and the cost of building and differentiating deeper models grows faster than the layers)", m.Layers, MaxLayers)}}
		}
		return nil
	}
	field, one := "hidden", m
	one.Layers = 1
	if least(one) <= MaxParamValues {
		field = "layers"
	}
	return []modelspec.FieldError{{Field: field, Msg: fmt.Sprintf("hidden = %d, layers = %d: the model would hold at least %s parameter values; at most %d (2^30) are allowed", m.Hidden, m.Layers, sizeText(n), MaxParamValues)}}
}

// Size checks cfg.Model against its kind and returns the number of
// parameter values of its model (Kind.ParamCount), an error when that is
// over MaxParamValues. It builds nothing.
func (r Registry) Size(cfg Config) (int64, error) {
	k, err := r.Lookup(cfg.Model.Kind)
	if err != nil {
		return 0, err
	}
	if errs := k.Check(cfg.Model, ConfigInfo(cfg)); len(errs) > 0 {
		es := make([]error, len(errs))
		for i, e := range errs {
			es[i] = e
		}
		return 0, errors.Join(es...)
	}
	n := k.ParamCount(cfg)
	if n > MaxParamValues {
		return n, fmt.Errorf("model.kind %q with hidden = %d, layers = %d: %s parameter values; at most %d (2^30) are allowed", cfg.Model.Kind, cfg.Model.Hidden, cfg.Model.Layers, sizeText(n), MaxParamValues)
	}
	if cfg.Model.Layers > MaxLayers {
		return 0, fmt.Errorf("model.kind %q with layers = %d: at most %d layers are allowed", cfg.Model.Kind, cfg.Model.Layers, MaxLayers)
	}

	return n, nil
}

// sizeText writes a parameter count n, "more than 9.2e+18" when it
// saturated.
func sizeText(n int64) string {
	if n == math.MaxInt64 {
		return fmt.Sprintf("more than %.1e", float64(n))
	}
	return fmt.Sprintf("%d (%.1e)", n, float64(n))
}

// New checks cfg.Model against its kind and its size (Size) and builds
// the model.
func (r Registry) New(cfg Config, seed uint64, be kernels.Backend) (Model, error) {
	if _, err := r.Size(cfg); err != nil {
		return nil, err
	}
	k := r[cfg.Model.Kind] // Size looked it up
	if be == nil {
		return nil, fmt.Errorf("model.kind %q: nil kernel backend", cfg.Model.Kind)
	}
	return k.New(cfg, seed, be)
}

// InfoFor returns what dataset ds provides, with hop sets precomputed up
// to kmax (0: not known) and N_∞ kept or not: the properties the model
// kinds check.
func InfoFor(ds *data.Dataset, kmax int, unreachable bool) modelspec.DatasetInfo {
	return modelspec.DatasetInfo{Kind: ds.Name, Known: true, KMax: kmax, Unreachable: unreachable, Relations: ds.NumEdgeTypes,
		EdgeFeatures: len(ds.EdgeFeatVocab) > 0, NodeCategories: len(ds.NodeCatVocab) > 0}
}

// ConfigInfo returns what the dataset a model was configured for provides
// (cfg's relation count and vocabularies; kmax not known).
func ConfigInfo(cfg Config) modelspec.DatasetInfo {
	return modelspec.DatasetInfo{Known: true, Relations: cfg.NumEdgeTypes,
		EdgeFeatures: len(cfg.EdgeFeatVocab) > 0, NodeCategories: len(cfg.NodeCatVocab) > 0}
}

// DeviceKind is a Kind whose models (some of them) train on a device
// (models/rt's device path).
type DeviceKind interface {
	Kind
	// CheckDevice returns why the model of cfg cannot train on a device
	// (nil: it can); a task "" (not known yet) is not checked.
	CheckDevice(cfg Config) error
}

// CheckDevice returns an error naming the kind and device when the model
// of cfg cannot train on device (e.g. "cuda:0"): its kind has no device
// math, or the kind's CheckDevice refuses cfg.
func (r Registry) CheckDevice(cfg Config, device string) error {
	k, err := r.Lookup(cfg.Model.Kind)
	if err != nil {
		return err
	}
	dk, ok := k.(DeviceKind)
	if !ok {
		var have []string
		for _, n := range r.Names() {
			if _, ok := r[n].(DeviceKind); ok {
				have = append(have, n)
			}
		}
		return fmt.Errorf("model kind %q cannot train on device %s: it has no device math (kinds that have: %v)", cfg.Model.Kind, device, have)
	}
	if err := dk.CheckDevice(cfg); err != nil {
		return fmt.Errorf("model kind %q cannot train on device %s: %w", cfg.Model.Kind, device, err)
	}
	return nil
}
