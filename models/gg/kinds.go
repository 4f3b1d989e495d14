package gg

import (
	"fmt"

	"github.com/spn-project/spn/models"
	"github.com/spn-project/spn/models/kernels"
	"github.com/spn-project/spn/models/nn"
	"github.com/spn-project/spn/schema"
)

// Kinds returns the registry of every model kind spn builds (through
// Gorgonia): the one Go list of model kinds. The schema's #Model union
// lists the same names (a test checks both agree); train, predict and
// checkpoints build models through it, and spn vet and plan check model
// sections with its Kind.Check.
func Kinds() models.Registry {
	return models.NewRegistry(
		spnKind{}, spnKind{gin: true},
		gcnKind{}, gatKind{}, graphormerKind{},
		baselineKind{},
		typedKind{KindRSPN}, typedKind{KindESPN},
	)
}

// errf is one FieldError.
func errf(field, format string, args ...any) schema.FieldError {
	return schema.FieldError{Field: field, Msg: fmt.Sprintf(format, args...)}
}

// checkCommon checks the fields every message-passing kind reads (their
// CUE definitions bound them too; this guards configurations that do not
// come from a spec, e.g. a checkpoint).
func checkCommon(m schema.Model) []schema.FieldError {
	var errs []schema.FieldError
	if m.Layers < 1 {
		errs = append(errs, errf("layers", "layers = %d: need at least 1 layer", m.Layers))
	}
	if m.Hidden < 1 {
		errs = append(errs, errf("hidden", "hidden = %d: need a positive width", m.Hidden))
	}
	if m.Dropout < 0 || m.Dropout >= 1 {
		errs = append(errs, errf("dropout", "dropout = %v: need 0 ≤ p < 1", m.Dropout))
	}
	if m.Pool != nn.PoolSum && m.Pool != nn.PoolMean && m.Pool != nn.PoolMax {
		errs = append(errs, errf("pool", "unknown pooling %q (want sum, mean or max)", m.Pool))
	}
	return errs
}

// checkDirect requires k == 1 of the kinds that aggregate over direct
// neighbours.
func checkDirect(errs []schema.FieldError, kind string, k int) []schema.FieldError {
	if k != 1 {
		errs = append(errs, errf("k", "%s aggregates over direct neighbours only (k = 1), got k = %d", kind, k))
	}
	return errs
}

// checkHeads requires heads ≥ 1 dividing hidden.
func checkHeads(errs []schema.FieldError, m schema.Model) []schema.FieldError {
	switch {
	case m.Heads < 1:
		errs = append(errs, errf("heads", "heads = %d: need at least 1 head", m.Heads))
	case m.Hidden >= 1 && m.Hidden%m.Heads != 0:
		errs = append(errs, errf("heads", "hidden = %d is not a multiple of heads = %d", m.Hidden, m.Heads))
	}
	return errs
}

// spnKind is the SPN (Abboud et al. 2022) and, with gin, GIN: the SPN with
// k = 1 over the adjacency.
type spnKind struct{ gin bool }

func (s spnKind) Name() string {
	if s.gin {
		return "gin"
	}
	return "spn"
}

func (s spnKind) Check(m schema.Model, d schema.DatasetInfo) []schema.FieldError {
	errs := checkCommon(m)
	if s.gin && m.K != 1 {
		return append(errs, errf("k", "gin requires k == 1 (GIN is SPN with k = 1), got k = %d", m.K))
	}
	return checkHops(errs, m, d)
}

// checkHops requires 1 ≤ k ≤ dataset.kmax of the kinds that aggregate
// over N_1..N_k.
func checkHops(errs []schema.FieldError, m schema.Model, d schema.DatasetInfo) []schema.FieldError {
	switch {
	case m.K < 1:
		errs = append(errs, errf("k", "k = %d: need at least 1 hop", m.K))
	case d.KMax > 0 && m.K > d.KMax:
		errs = append(errs, errf("k", "k = %d exceeds dataset.kmax = %d (hops are precomputed up to kmax)", m.K, d.KMax))
	}
	return errs
}

func (spnKind) New(cfg models.Config, seed uint64, be kernels.Backend) (models.Model, error) {
	return New(cfg, seed, be)
}

// gcnKind is Kipf & Welling's GCN (paper's Table 2).
type gcnKind struct{}

func (gcnKind) Name() string { return KindGCN }

func (gcnKind) Check(m schema.Model, _ schema.DatasetInfo) []schema.FieldError {
	return checkDirect(checkCommon(m), KindGCN, m.K)
}

func (gcnKind) New(cfg models.Config, seed uint64, be kernels.Backend) (models.Model, error) {
	return NewCompetitor(cfg, seed, be)
}

// gatKind is Veličković et al.'s GAT (paper's Table 2).
type gatKind struct{}

func (gatKind) Name() string { return KindGAT }

func (gatKind) Check(m schema.Model, _ schema.DatasetInfo) []schema.FieldError {
	return checkHeads(checkDirect(checkCommon(m), KindGAT, m.K), m)
}

func (gatKind) New(cfg models.Config, seed uint64, be kernels.Backend) (models.Model, error) {
	return NewCompetitor(cfg, seed, be)
}

// graphormerKind is Ying et al.'s Graphormer (paper's Table 2).
type graphormerKind struct{}

func (graphormerKind) Name() string { return KindGraphormer }

func (graphormerKind) Check(m schema.Model, d schema.DatasetInfo) []schema.FieldError {
	errs := checkHeads(checkCommon(m), m)
	if m.MaxDist < 1 {
		return append(errs, errf("max_dist", "max_dist = %d: need at least 1", m.MaxDist))
	}
	if d.KMax > 0 && m.MaxDist > d.KMax {
		errs = append(errs, errf("max_dist", "graphormer's max_dist = %d exceeds dataset.kmax = %d (its distance buckets read the hop sets up to max_dist)", m.MaxDist, d.KMax))
	}
	return errs
}

func (graphormerKind) New(cfg models.Config, seed uint64, be kernels.Backend) (models.Model, error) {
	return NewCompetitor(cfg, seed, be)
}

// baselineKind is Errica et al.'s structure-agnostic baseline (Table 3).
type baselineKind struct{}

func (baselineKind) Name() string { return "baseline" }

func (baselineKind) Check(m schema.Model, _ schema.DatasetInfo) []schema.FieldError {
	var errs []schema.FieldError
	if m.Hidden < 1 {
		errs = append(errs, errf("hidden", "hidden = %d: need a positive width", m.Hidden))
	}
	if m.Dropout != 0 {
		errs = append(errs, errf("dropout", "dropout = %v: the baseline has no dropout (Errica et al.); set model.dropout: 0", m.Dropout))
	}
	return errs
}

func (baselineKind) New(cfg models.Config, seed uint64, be kernels.Backend) (models.Model, error) {
	return NewAgnostic(cfg, seed, be)
}
