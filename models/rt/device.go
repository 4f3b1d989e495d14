package rt

import (
	"errors"
	"fmt"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/spn-project/spn/models/cuda"
	"github.com/spn-project/spn/models/cuda/engine"
	"github.com/spn-project/spn/models/param"
)

// DevicePreparer is what a kind with per-batch data of its own supplies
// for the device path: PrepareDevice copies that data (set by Prepare) to
// the device and returns what frees it after the step.
type DevicePreparer interface {
	PrepareDevice(e *engine.Engine) (free func() error, err error)
}

// deviceState is a model's device: the engine, the parameters' device
// tensors and what one step put on the device.
type deviceState struct {
	e      *engine.Engine
	params map[*param.Param]*tensor.Dense
	free   []func() error
	// masks are the device tensors of the dropout-mask nodes.
	masks map[*G.Node]*tensor.Dense
	// adam, when not nil, keeps the parameters and their gradients on the
	// device (NewDeviceAdam).
	adam *DeviceAdam
	// bns are the batch norms whose running statistics are on the
	// device, in the order of their first device forward.
	bns []*bnStats
}

// UseDevice makes the model's training steps run on the device engine
// dev: the graph is Gorgonia's as on the CPU, run by a TapeMachine with
// dev's engine, every op by its device math. It must come before the
// first step. On the device path Step returns the loss and the outputs
// (the dropout masks drawn on the host as on the CPU path and uploaded); the parameters are uploaded before each step
// and their gradients downloaded after it (the optimiser runs on the
// host), unless a DeviceAdam (NewDeviceAdam) keeps parameters, gradients
// and moments on the device. The batch norms' running statistics stay on
// the device (SyncHost copies them and the parameters to the host). Predict, Forward and Backward are not wired to the device.
func (e *Engine) UseDevice(dev *engine.Engine) error {
	if n, _ := e.CachedGraphs(); n > 0 || e.CacheMisses > 0 {
		return errors.New("UseDevice: the model has built graphs on the CPU")
	}
	e.dev = &deviceState{e: dev, params: map[*param.Param]*tensor.Dense{}, masks: map[*G.Node]*tensor.Dense{}}
	return nil
}

// errNoDevicePath is the error of the entry points the device path lacks.
func errNoDevicePath(what string) error {
	return fmt.Errorf("%s is not wired to the device (only Step is)", what)
}

// bind binds the node of a parameter to its device tensor, made (and
// filled) on first use.
func (d *deviceState) bind(pb *paramBinding) error {
	t, ok := d.params[pb.p]
	if !ok {
		var err error
		if t, err = d.e.FromHost(pb.p.W, pb.p.Shape...); err != nil {
			return fmt.Errorf("binding parameter %s: %w", pb.p.Name, err)
		}
		d.params[pb.p] = t
	}
	if err := G.Let(pb.node, t); err != nil {
		return fmt.Errorf("binding parameter %s: %w", pb.p.Name, err)
	}
	return nil
}

// prepare copies to the device what a run of p reads: the parameters'
// current values, the batch's data and the kind's own (DevicePreparer).
func (d *deviceState) prepare(a Arch, p *Program, o Opts) error {
	if o.seed != nil {
		return errors.New("the device path runs training steps only (no output gradient)")
	}
	// The dropout masks, drawn on the host from the model's generator as
	// on the CPU path (zero in the padding rows), go to the device.
	if len(o.masks) != len(p.maskNodes) {
		return fmt.Errorf("%d dropout masks for %d mask nodes", len(o.masks), len(p.maskNodes))
	}
	for t, n := range p.maskNodes {
		mt, ok := d.masks[n]
		if !ok {
			var err error
			if mt, err = d.e.Tensor(n.Shape()...); err != nil {
				return err
			}
			if err := G.Let(n, mt); err != nil {
				return fmt.Errorf("binding dropout mask %d: %w", t, err)
			}
			d.masks[n] = mt
		}
		mk := make([]float32, len(p.masks[t])) // G×Out, Out = len/G
		copy(mk, o.masks[t][:p.bd.G*len(mk)/p.key.G])
		b, err := d.e.Buffer(mt)
		if err == nil {
			err = cuda.Upload(b, mk)
		}
		if err != nil {
			return fmt.Errorf("uploading dropout mask %d: %w", t, err)
		}
	}
	for _, pb := range p.params {
		if d.adam != nil {
			break // the parameters live on the device
		}
		b, err := d.e.Buffer(d.params[pb.p])
		if err == nil {
			err = cuda.Upload(b, pb.p.W)
		}
		if err != nil {
			return fmt.Errorf("uploading parameter %s: %w", pb.p.Name, err)
		}
	}
	db, err := UploadBatch(d.e, p.bd)
	if err != nil {
		return err
	}
	p.bd.Dev = db
	d.free = append(d.free, db.Free)
	if dp, ok := a.(DevicePreparer); ok {
		free, err := dp.PrepareDevice(d.e)
		if err != nil {
			return errors.Join(err, d.release(p))
		}
		d.free = append(d.free, free)
	}
	return nil
}

// release frees what one step put on the device.
func (d *deviceState) release(p *Program) error {
	errs := []error{d.e.Reset()}
	for _, f := range d.free {
		errs = append(errs, f())
	}
	d.free = d.free[:0]
	p.bd.Dev = nil
	return errors.Join(errs...)
}

// step runs p (built by prepare) and returns the loss, adds the
// gradients to ps[i].G and returns the first g×c outputs.
func (d *deviceState) step(p *Program, ps []*param.Param, c int) (loss float64, out []float32, err error) {
	defer func() { err = errors.Join(err, d.release(p)) }()
	if err := p.run(); err != nil {
		return 0, nil, err
	}
	lv, ok := p.vals.loss.Data().(float32)
	if !ok {
		return 0, nil, fmt.Errorf("loss node holds %T, want float32", p.vals.loss.Data())
	}
	if len(p.gradNodes) != len(ps) {
		return 0, nil, fmt.Errorf("graph has %d gradients for %d parameters", len(p.gradNodes), len(ps))
	}
	host := func(n *G.Node, what string, want int) ([]float32, error) {
		t, ok := n.Value().(tensor.Tensor)
		if !ok {
			return nil, fmt.Errorf("%s holds %T, want a device tensor", what, n.Value())
		}
		v, err := d.e.ToHost(t)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		if want >= 0 && len(v) != want {
			return nil, fmt.Errorf("%s has %d values, want %d", what, len(v), want)
		}
		return v, nil
	}
	for i, gn := range p.gradNodes {
		if d.adam != nil {
			t, ok := gn.Value().(tensor.Tensor)
			if !ok {
				return 0, nil, fmt.Errorf("gradient of %s holds %T, want a device tensor", ps[i].Name, gn.Value())
			}
			if err := d.adam.accumulate(ps[i], t); err != nil {
				return 0, nil, err
			}
			continue
		}
		g, err := host(gn, "gradient of "+ps[i].Name, len(ps[i].G))
		if err != nil {
			return 0, nil, err
		}
		for j, v := range g {
			ps[i].G[j] += v
		}
	}
	o, err := host(p.outNode, "output", -1)
	if err != nil {
		return 0, nil, err
	}
	return float64(lv), append([]float32(nil), o[:p.bd.G*c]...), nil
}

// SyncHost copies the model's state on the device into its host values:
// the parameters (Param.W) when a DeviceAdam keeps them on the device,
// and the batch norms' running statistics (the model's Buffers). After
// it, a CPU model given these values computes what the device model
// would in evaluation mode; the device state is unchanged.
func (e *Engine) SyncHost() error {
	d := e.dev
	if d == nil {
		return errors.New("SyncHost: the model is not on the device path (UseDevice)")
	}
	if d.adam != nil {
		if err := d.adam.Sync(); err != nil {
			return err
		}
	}
	for i, st := range d.bns {
		if err := st.Dev.Download(st); err != nil {
			return fmt.Errorf("batch norm %d: running statistics: %w", i, err)
		}
	}
	return nil
}
