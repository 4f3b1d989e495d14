package fit

import (
	"fmt"
	"math"

	"github.com/spn-project/spn/models/curve"
	"github.com/spn-project/spn/models/metric"
	"github.com/spn-project/spn/schema/modelspec"
)

// LearningRate returns the learning rate of 1-based epoch under the step
// schedule: lr·γ^⌊(epoch−1)/StepEvery⌋ (constant when StepEvery is 0).
// A reduce-on-plateau schedule (Training.Plateau) depends on the
// validation values seen, not on the epoch alone: Plateau keeps it.
func LearningRate(tr modelspec.Training, epoch int) float64 {
	if tr.StepEvery <= 0 {
		return tr.LR
	}
	return tr.LR * math.Pow(tr.StepGamma, float64((epoch-1)/tr.StepEvery))
}

// plateauEps is PyTorch's ReduceLROnPlateau eps: a reduction smaller
// than it is ignored.
const plateauEps = 1e-8

// Plateau is PyTorch's torch.optim.lr_scheduler.ReduceLROnPlateau with
// threshold_mode "rel" and eps 1e-8, step for step: Step takes the
// monitored value of an epoch and LR is the learning rate of the next.
type Plateau struct {
	cfg modelspec.Plateau
	// max is the mode: true when higher monitored values are better.
	max bool
	lr  float64
	// best is the best value so far (±Inf before the first Step).
	best float64
	// bad counts the epochs without improvement, cooldown the epochs of
	// the cooldown that remain.
	bad, cooldown int
}

// NewPlateau returns the schedule cfg starting at lr; higherIsBetter
// sets its mode (max when true).
func NewPlateau(lr float64, cfg modelspec.Plateau, higherIsBetter bool) *Plateau {
	p := &Plateau{cfg: cfg, max: higherIsBetter, lr: lr, best: math.Inf(1)}
	if p.max {
		p.best = math.Inf(-1)
	}
	return p
}

// PlateauFor returns the schedule of tr.Plateau under the metric named
// metricName (its direction sets the mode of a "val_metric" monitor),
// or nil when tr has none.
func PlateauFor(tr modelspec.Training, metricName string) *Plateau {
	if tr.Plateau == nil {
		return nil
	}
	higher := tr.Plateau.Monitor == modelspec.MonitorValMetric && metric.HigherIsBetter(metricName)
	return NewPlateau(tr.LR, *tr.Plateau, higher)
}

// LR returns the current learning rate.
func (p *Plateau) LR() float64 { return p.lr }

// Step records the monitored value v of an epoch, as
// ReduceLROnPlateau.step(v): a value that is not better (NaN included)
// counts as a bad epoch, bad epochs during a cooldown are forgotten, and
// more than Patience bad epochs reduce the learning rate to
// max(lr·Factor, MinLR) (unless that changes it by less than 1e-8) and
// start the cooldown.
func (p *Plateau) Step(v float64) {
	if p.better(v) {
		p.best = v
		p.bad = 0
	} else {
		p.bad++
	}
	if p.cooldown > 0 {
		p.cooldown--
		p.bad = 0
	}
	if p.bad > p.cfg.Patience {
		if next := math.Max(p.lr*p.cfg.Factor, p.cfg.MinLR); p.lr-next > plateauEps {
			p.lr = next
		}
		p.cooldown = p.cfg.Cooldown
		p.bad = 0
	}
}

// better reports whether v improves on the best value by the relative
// threshold, as ReduceLROnPlateau.is_better in "rel" mode.
func (p *Plateau) better(v float64) bool {
	if p.max {
		return v > p.best*(1+p.cfg.Threshold)
	}
	return v < p.best*(1-p.cfg.Threshold)
}

// checkPlateau checks tr.Plateau (when set) as spn vet does: the bounds of
// its fields, and no step schedule beside it.
func checkPlateau(tr modelspec.Training) error {
	p := tr.Plateau
	if p == nil {
		return nil
	}
	switch {
	case tr.StepEvery > 0:
		return fmt.Errorf("training.plateau: a reduce-on-plateau schedule cannot be combined with the step schedule (step_every = %d)", tr.StepEvery)
	case p.Monitor != modelspec.MonitorValLoss && p.Monitor != modelspec.MonitorValMetric:
		return fmt.Errorf("training.plateau.monitor %q is unknown (want %s or %s)", p.Monitor, modelspec.MonitorValLoss, modelspec.MonitorValMetric)
	case !(p.Factor > 0 && p.Factor < 1):
		return fmt.Errorf("training.plateau.factor = %v: need a factor in (0, 1)", p.Factor)
	case p.Patience < 0 || p.Cooldown < 0:
		return fmt.Errorf("training.plateau: patience %d and cooldown %d must not be negative", p.Patience, p.Cooldown)
	case !(p.Threshold >= 0) || !(p.MinLR >= 0):
		return fmt.Errorf("training.plateau: threshold %v and min_lr %v must not be negative", p.Threshold, p.MinLR)
	}
	return nil
}

// stepPlateau gives the plateau schedule (if any) the epoch's monitored
// value: its validation loss or validation score.
func (t *trainer) stepPlateau(rec curve.EpochRecord) {
	if t.plateau == nil {
		return
	}
	v := rec.ValLoss
	if t.o.Training.Plateau.Monitor == modelspec.MonitorValMetric {
		v = rec.ValScore
	}
	t.plateau.Step(v)
}
