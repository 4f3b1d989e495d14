package rt

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"

	"gorgonia.org/tensor"

	"github.com/spn-project/spn/models/cuda"
	"github.com/spn-project/spn/models/cuda/engine"
	"github.com/spn-project/spn/models/cuda/kern"
	"github.com/spn-project/spn/models/param"
)

// DeviceAdam is param.Adam for a model on the device path, with the
// parameters, their gradients and Adam's moments living on the device:
// Step keeps the gradients on the device (added to a device gradient per
// parameter) instead of downloading them, and DeviceAdam.Step updates
// the parameters there (spn_adam, param.Adam's arithmetic, bit for bit).
// The host values (Param.W) are stale until Sync.
//
// The values, gradients and moments of all parameters are one device
// array each, the parameters in groups of equal flags (frozen, decayed),
// and each parameter's device tensor is a view of its part of the
// values: Step launches spn_adam once per group rather than once per
// parameter, and Sync downloads the values in one copy.
type DeviceAdam struct {
	LR, Beta1, Beta2, Eps, WeightDecay float64

	d      *deviceState
	params []*param.Param
	// w, g, m and v are the values, gradients (zero after Step) and
	// moments; parameter i is the values off[i] .. off[i]+len(W) of each,
	// off[i] a multiple of AdamAlign.
	w, g, m, v *cuda.Buffer
	off        []int
	pos        map[*param.Param]int // index in params
	groups     []adamGroup
	t          int
}

// AdamAlign is the alignment of each parameter in DeviceAdam's arrays, in
// floats: 64 floats, 256 bytes, the alignment of a device allocation, so
// that cuBLAS reads every weight matrix from an aligned address (its
// vectorised loads need 16 bytes at least). The padding between the
// parameters holds zeros: values, gradients and moments of zero, which
// an Adam step leaves zero.
const AdamAlign = 64

// adamGroup is a run of parameters with the same flags in the arrays
// (the padding between them included).
type adamGroup struct {
	off, n        int
	decay, frozen int
}

// NewDeviceAdam returns the device optimiser of params (the model's
// Params) with param.NewAdam's hyperparameters; the model must be on the
// device path (UseDevice) and not have run there yet (the optimiser
// places the parameters), and its steps from then on keep their
// gradients on the device for it.
func (e *Engine) NewDeviceAdam(params []*param.Param, lr, weightDecay float64) (*DeviceAdam, error) {
	d := e.dev
	if d == nil {
		return nil, errors.New("NewDeviceAdam: the model is not on the device path (UseDevice)")
	}
	if d.adam != nil {
		return nil, errors.New("NewDeviceAdam: the model has a device optimiser")
	}
	return newDeviceAdam(d, params, func(p *param.Param) []int { return p.Shape }, lr, weightDecay)
}

// NewDeviceAdamOf returns the device optimiser of params for a model that
// is not a models/rt Net (the baseline, whose graph is Gorgonia's own
// ops): the optimiser puts each parameter's device tensor, of the shape
// shape(p) gives, in ts (which must not hold them yet). Step updates them
// in place; the model adds each step's gradients with AddGradients.
func NewDeviceAdamOf(e *engine.Engine, ts map[*param.Param]*tensor.Dense, params []*param.Param, shape func(*param.Param) []int, lr, weightDecay float64) (*DeviceAdam, error) {
	return newDeviceAdam(&deviceState{e: e, params: ts}, params, shape, lr, weightDecay)
}

// newDeviceAdam returns the device optimiser of params over d, whose
// parameters must not be on the device yet: the optimiser puts them in
// its array of values, parameter p a tensor of shape(p).
func newDeviceAdam(d *deviceState, params []*param.Param, shape func(*param.Param) []int, lr, weightDecay float64) (a *DeviceAdam, err error) {
	a = &DeviceAdam{LR: lr, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: weightDecay, d: d, params: params, off: make([]int, len(params)), pos: make(map[*param.Param]int, len(params))}
	for i, p := range params {
		a.pos[p] = i
	}
	flags := func(p *param.Param) (decay, frozen int) {
		if !p.NoDecay {
			decay = 1
		}
		if p.Frozen {
			frozen = 1
		}
		return decay, frozen
	}
	// The layout: the parameters grouped by their flags, in their order
	// within a group.
	order := make([]int, len(params))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(i, j int) int {
		di, fi := flags(params[i])
		dj, fj := flags(params[j])
		return cmp.Or(cmp.Compare(fi, fj), cmp.Compare(di, dj))
	})
	n := 0
	for _, i := range order {
		p := params[i]
		if _, ok := d.params[p]; ok {
			return nil, fmt.Errorf("parameter %s is on the device already: the device optimiser must come before the model's first run", p.Name)
		}
		decay, frozen := flags(p)
		n = RoundUp(n, AdamAlign)
		if k := len(a.groups) - 1; k < 0 || a.groups[k].decay != decay || a.groups[k].frozen != frozen {
			a.groups = append(a.groups, adamGroup{off: n, decay: decay, frozen: frozen})
		}
		a.off[i] = n
		n += len(p.W)
		g := &a.groups[len(a.groups)-1]
		g.n = n - g.off // the padding between its parameters too: zeros, which Adam leaves zero
	}
	host := make([]float32, n)
	for i, p := range params {
		copy(host[a.off[i]:], p.W)
	}
	ctx := d.e.Context()
	defer func() {
		if err != nil {
			for _, p := range params {
				if t, ok := d.params[p]; ok {
					err = errors.Join(err, d.e.FreeTensor(t))
					delete(d.params, p)
				}
			}
			for _, b := range []*cuda.Buffer{a.w, a.g, a.m, a.v} {
				if b != nil {
					err = errors.Join(err, b.Free())
				}
			}
		}
	}()
	if a.w, err = cuda.NewBuffer(ctx, host); err != nil {
		return nil, fmt.Errorf("the parameters' values: %w", err)
	}
	clear(host)
	for _, b := range []**cuda.Buffer{&a.g, &a.m, &a.v} {
		if *b, err = cuda.NewBuffer(ctx, host); err != nil {
			return nil, fmt.Errorf("the parameters' gradients and Adam's moments: %w", err)
		}
	}
	for i, p := range params {
		w, err := a.part(a.w, i)
		if err == nil {
			d.params[p], err = d.e.Alias(w, shape(p)...)
		}
		if err != nil {
			return nil, fmt.Errorf("parameter %s: %w", p.Name, err)
		}
	}
	d.adam = a
	return a, nil
}

// part returns parameter i's part of one of the arrays.
func (a *DeviceAdam) part(b *cuda.Buffer, i int) (*cuda.Buffer, error) {
	return b.Slice(a.off[i], len(a.params[i].W))
}

// index returns the position of p among the optimiser's parameters.
func (a *DeviceAdam) index(p *param.Param) (int, error) {
	if i, ok := a.pos[p]; ok {
		return i, nil
	}
	return 0, fmt.Errorf("parameter %s is not the device optimiser's", p.Name)
}

// accumulate adds the step's gradients grads[i] to the device gradients
// of ps[i]: spn_add_many, one launch per kern.AddMany parameters (a
// parameter twice starts a new launch, so that no launch adds to one
// value twice).
func (a *DeviceAdam) accumulate(ps []*param.Param, grads []tensor.Tensor) error {
	if len(ps) != len(grads) {
		return fmt.Errorf("%d gradients for %d parameters", len(grads), len(ps))
	}
	var (
		xs       [kern.AddMany]*cuda.Buffer
		offs, ns [kern.AddMany]int
		count    int
	)
	flush := func() error {
		if count == 0 {
			return nil
		}
		args := []any{a.g}
		for _, x := range xs {
			args = append(args, x)
		}
		for _, o := range offs {
			args = append(args, o)
		}
		total := 0
		for _, n := range ns {
			args = append(args, n)
			total += n
		}
		args = append(args, count)
		err := a.d.e.Launch("spn_add_many", total, args...)
		xs, offs, ns, count = [kern.AddMany]*cuda.Buffer{}, [kern.AddMany]int{}, [kern.AddMany]int{}, 0
		return err
	}
	for k, p := range ps {
		i, err := a.index(p)
		if err != nil {
			return err
		}
		db, err := a.d.e.Buffer(grads[k])
		if err != nil {
			return fmt.Errorf("gradient of %s: %w", p.Name, err)
		}
		if db.Len() != len(p.W) {
			return fmt.Errorf("gradient of %s has %d values, want %d", p.Name, db.Len(), len(p.W))
		}
		if count == kern.AddMany || slices.Contains(offs[:count], a.off[i]) {
			if err := flush(); err != nil {
				return err
			}
		}
		xs[count], offs[count], ns[count] = db, a.off[i], len(p.W)
		count++
	}
	return flush()
}

// Step updates the parameters on the device from their gradients
// (spn_adam, one launch per group of parameters with the same flags) and
// zeroes the gradients, as param.Adam.Step.
func (a *DeviceAdam) Step() error {
	a.t++
	bc1 := 1 - math.Pow(a.Beta1, float64(a.t))
	bc2 := 1 - math.Pow(a.Beta2, float64(a.t))
	for _, gr := range a.groups {
		var bs [4]*cuda.Buffer
		for j, b := range []*cuda.Buffer{a.w, a.g, a.m, a.v} {
			var err error
			if bs[j], err = b.Slice(gr.off, gr.n); err != nil {
				return err
			}
		}
		if err := a.d.e.Launch("spn_adam", gr.n, bs[0], bs[1], bs[2], bs[3], gr.n, a.LR, a.Beta1, a.Beta2, a.Eps, a.WeightDecay, bc1, bc2, gr.decay, gr.frozen); err != nil {
			return fmt.Errorf("the Adam step: %w", err)
		}
	}
	return nil
}

// Sync copies the parameters' device values into their host values
// (Param.W), for a checkpoint or an evaluation on the host.
func (a *DeviceAdam) Sync() error { return a.sync(a.params) }

// sync copies the device values of ps, parameters of the optimiser, into
// their host values (the values come back in one copy).
func (a *DeviceAdam) sync(ps []*param.Param) error {
	w := make([]float32, a.w.Len())
	if err := cuda.Download(w, a.w); err != nil {
		return fmt.Errorf("the parameters' values: %w", err)
	}
	for _, p := range ps {
		i, err := a.index(p)
		if err != nil {
			return err
		}
		copy(p.W, w[a.off[i]:a.off[i]+len(p.W)])
	}
	return nil
}
