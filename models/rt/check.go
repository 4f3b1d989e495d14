package rt

import (
	"fmt"

	"github.com/spn-project/spn/models"
	"github.com/spn-project/spn/schema/modelspec"
)

// Errf is one FieldError.
func Errf(field, format string, args ...any) modelspec.FieldError {
	return modelspec.FieldError{Field: field, Msg: fmt.Sprintf(format, args...)}
}

// CheckCommon checks the fields every message-passing kind reads (their
// CUE definitions bound them too; this guards configurations that do not
// come from a spec, e.g. a checkpoint).
func CheckCommon(m modelspec.Model) []modelspec.FieldError {
	var errs []modelspec.FieldError
	if m.Layers < 1 {
		errs = append(errs, Errf("layers", "layers = %d: need at least 1 layer", m.Layers))
	}
	if m.Hidden < 1 {
		errs = append(errs, Errf("hidden", "hidden = %d: need a positive width", m.Hidden))
	}
	if m.Dropout < 0 || m.Dropout >= 1 {
		errs = append(errs, Errf("dropout", "dropout = %v: need 0 ≤ p < 1", m.Dropout))
	}
	if m.Pool != models.PoolSum && m.Pool != models.PoolMean && m.Pool != models.PoolMax {
		errs = append(errs, Errf("pool", "unknown pooling %q (want sum, mean or max)", m.Pool))
	}
	return errs
}

// CheckDirect requires k == 1 of the kinds that aggregate over direct
// neighbours.
func CheckDirect(errs []modelspec.FieldError, kind string, k int) []modelspec.FieldError {
	if k != 1 {
		errs = append(errs, Errf("k", "%s aggregates over direct neighbours only (k = 1), got k = %d", kind, k))
	}
	return errs
}

// CheckHeads requires heads ≥ 1 dividing hidden.
func CheckHeads(errs []modelspec.FieldError, m modelspec.Model) []modelspec.FieldError {
	switch {
	case m.Heads < 1:
		errs = append(errs, Errf("heads", "heads = %d: need at least 1 head", m.Heads))
	case m.Hidden >= 1 && m.Hidden%m.Heads != 0:
		errs = append(errs, Errf("heads", "hidden = %d is not a multiple of heads = %d", m.Hidden, m.Heads))
	}
	return errs
}

// CheckHops requires 1 ≤ k ≤ dataset.kmax of the kinds that aggregate
// over N_1..N_k, a known alpha_init, and dataset.unreachable of a model
// that reads N_∞ (where the dataset's kmax is known).
func CheckHops(errs []modelspec.FieldError, m modelspec.Model, d modelspec.DatasetInfo) []modelspec.FieldError {
	switch m.AlphaInit {
	case "", modelspec.AlphaZeros, modelspec.AlphaNormal:
	default:
		errs = append(errs, Errf("alpha_init", "must be %q or %q, got %q", modelspec.AlphaZeros, modelspec.AlphaNormal, m.AlphaInit))
	}
	switch {
	case m.K < 1:
		errs = append(errs, Errf("k", "k = %d: need at least 1 hop", m.K))
	case d.KMax > 0 && m.K > d.KMax:
		errs = append(errs, Errf("k", "k = %d exceeds dataset.kmax = %d (hops are precomputed up to kmax)", m.K, d.KMax))
	}
	if m.Unreachable && d.KMax > 0 && !d.Unreachable {
		errs = append(errs, Errf("unreachable", "the model reads N_∞, which the precompute keeps only with dataset.unreachable: true"))
	}
	return errs
}

// CheckDevice returns why the model of cfg cannot train on a device (nil:
// it can), as far as the parts every kind shares go: the device math
// covers the classification, regression and multi-task binary (BCE)
// losses, the layer readout with sum, mean or max pooling and GNN-FiLM's
// gated readout (which pools nothing), and the global readout. A task ""
// (not known yet) is not checked.
func CheckDevice(cfg models.Config) error {
	m := cfg.Model
	switch {
	case cfg.Task != "" && cfg.Task != models.TaskClassification && cfg.Task != models.TaskRegression && cfg.Task != models.TaskBinary:
		return fmt.Errorf("task %s has no device loss (only %s, %s and %s)", cfg.Task, models.TaskClassification, models.TaskRegression, models.TaskBinary)
	case !m.GatedReadout && m.Pool != models.PoolSum && m.Pool != models.PoolMean && m.Pool != models.PoolMax:
		return fmt.Errorf("pool %q has no device math (only %s, %s and %s)", m.Pool, models.PoolSum, models.PoolMean, models.PoolMax)
	}
	return nil
}
