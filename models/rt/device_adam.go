package rt

import (
	"errors"
	"fmt"
	"math"

	"gorgonia.org/tensor"

	"github.com/spn-project/spn/models/cuda"
	"github.com/spn-project/spn/models/cuda/engine"
	"github.com/spn-project/spn/models/param"
)

// DeviceAdam is param.Adam for a model on the device path, with the
// parameters, their gradients and Adam's moments living on the device:
// Step keeps the gradients on the device (added to a device gradient per
// parameter) instead of downloading them, and DeviceAdam.Step updates
// the parameters there (spn_adam, param.Adam's arithmetic, bit for bit).
// The host values (Param.W) are stale until Sync.
type DeviceAdam struct {
	LR, Beta1, Beta2, Eps, WeightDecay float64

	d      *deviceState
	params []*param.Param
	g      []*tensor.Dense // the gradients, zero after Step
	// spare holds, per parameter, the tensor the next accumulation
	// writes g + grad into (then the two swap), made on first use.
	spare []*tensor.Dense
	m, v  []*cuda.Buffer
	t     int
}

// NewDeviceAdam returns the device optimiser of params (the model's
// Params) with param.NewAdam's hyperparameters; the model must be on the
// device path (UseDevice), and its steps from then on keep their
// gradients on the device for it.
func (e *Engine) NewDeviceAdam(params []*param.Param, lr, weightDecay float64) (*DeviceAdam, error) {
	d := e.dev
	if d == nil {
		return nil, errors.New("NewDeviceAdam: the model is not on the device path (UseDevice)")
	}
	if d.adam != nil {
		return nil, errors.New("NewDeviceAdam: the model has a device optimiser")
	}
	return newDeviceAdam(d, params, lr, weightDecay)
}

// NewDeviceAdamOf returns the device optimiser of params for a model that
// is not a models/rt Net (the baseline, whose graph is Gorgonia's own
// ops): ts holds the parameters' device tensors of e, filled here from
// Param.W for those it lacks. Step updates them in place; the model adds
// each step's gradients with Accumulate.
func NewDeviceAdamOf(e *engine.Engine, ts map[*param.Param]*tensor.Dense, params []*param.Param, lr, weightDecay float64) (*DeviceAdam, error) {
	return newDeviceAdam(&deviceState{e: e, params: ts}, params, lr, weightDecay)
}

// newDeviceAdam returns the device optimiser of params over d.
func newDeviceAdam(d *deviceState, params []*param.Param, lr, weightDecay float64) (*DeviceAdam, error) {
	a := &DeviceAdam{LR: lr, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: weightDecay, d: d, params: params}
	for _, p := range params {
		if _, ok := d.params[p]; !ok {
			t, err := d.e.FromHost(p.W, p.Shape...)
			if err != nil {
				return nil, fmt.Errorf("parameter %s: %w", p.Name, err)
			}
			d.params[p] = t
		}
		g, err := d.e.Tensor(len(p.W))
		if err == nil {
			err = d.e.Fill(g, 0)
		}
		if err != nil {
			return nil, fmt.Errorf("gradient of %s: %w", p.Name, err)
		}
		a.g = append(a.g, g)
		for _, mv := range []*[]*cuda.Buffer{&a.m, &a.v} {
			b, err := cuda.NewBuffer(d.e.Context(), make([]float32, len(p.W)))
			if err != nil {
				return nil, fmt.Errorf("Adam's moments of %s: %w", p.Name, err)
			}
			*mv = append(*mv, b)
		}
	}
	d.adam = a
	return a, nil
}

// index returns the position of p among the optimiser's parameters.
func (a *DeviceAdam) index(p *param.Param) (int, error) {
	for i, q := range a.params {
		if q == p {
			return i, nil
		}
	}
	return 0, fmt.Errorf("parameter %s is not the device optimiser's", p.Name)
}

// Accumulate adds a step's gradient grad (a device tensor, e.g. a scratch
// tensor of the run) to p's device gradient, for a model of
// NewDeviceAdamOf.
func (a *DeviceAdam) Accumulate(p *param.Param, grad tensor.Tensor) error {
	return a.accumulate(p, grad)
}

// accumulate adds the step's gradient grad (a scratch tensor) to p's
// device gradient: g' = g + grad into the parameter's spare tensor, which
// then swaps with g (the sum's kernel reads and writes distinct arrays).
func (a *DeviceAdam) accumulate(p *param.Param, grad tensor.Tensor) error {
	i, err := a.index(p)
	if err != nil {
		return err
	}
	e := a.d.e
	gb, err := e.Buffer(a.g[i])
	if err != nil {
		return err
	}
	db, err := e.Buffer(grad)
	if err != nil {
		return err
	}
	if db.Len() != gb.Len() {
		return fmt.Errorf("gradient of %s has %d values, want %d", p.Name, db.Len(), gb.Len())
	}
	if a.spare == nil {
		a.spare = make([]*tensor.Dense, len(a.g))
	}
	if a.spare[i] == nil {
		if a.spare[i], err = e.Tensor(gb.Len()); err != nil {
			return err
		}
	}
	sb, _ := e.Buffer(a.spare[i])
	n := gb.Len()
	if err := e.Launch("spn_bias_relu", n, sb, gb, db, 1, n, 0); err != nil {
		return err
	}
	a.g[i], a.spare[i] = a.spare[i], a.g[i]
	return nil
}

// Step updates the parameters on the device from their gradients
// (spn_adam) and zeroes the gradients, as param.Adam.Step.
func (a *DeviceAdam) Step() error {
	a.t++
	bc1 := 1 - math.Pow(a.Beta1, float64(a.t))
	bc2 := 1 - math.Pow(a.Beta2, float64(a.t))
	e := a.d.e
	for i, p := range a.params {
		w, err := e.Buffer(a.d.params[p])
		if err != nil {
			return err
		}
		g, err := e.Buffer(a.g[i])
		if err != nil {
			return err
		}
		decay, frozen := 0, 0
		if !p.NoDecay {
			decay = 1
		}
		if p.Frozen {
			frozen = 1
		}
		n := len(p.W)
		if err := e.Launch("spn_adam", n, w, g, a.m[i], a.v[i], n, a.LR, a.Beta1, a.Beta2, a.Eps, a.WeightDecay, bc1, bc2, decay, frozen); err != nil {
			return fmt.Errorf("Adam step of %s: %w", p.Name, err)
		}
	}
	return nil
}

// Sync copies the parameters' device values into their host values
// (Param.W), for a checkpoint or an evaluation on the host.
func (a *DeviceAdam) Sync() error { return a.sync(a.params) }

// sync copies the device values of ps, parameters of the optimiser, into
// their host values.
func (a *DeviceAdam) sync(ps []*param.Param) error {
	for _, p := range ps {
		t, ok := a.d.params[p]
		if !ok {
			return fmt.Errorf("parameter %s is not on the device", p.Name)
		}
		w, err := a.d.e.ToHost(t)
		if err != nil {
			return fmt.Errorf("parameter %s: %w", p.Name, err)
		}
		copy(p.W, w)
	}
	return nil
}
