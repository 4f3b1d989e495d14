package baseline

import (
	"errors"
	"fmt"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/models"
	"github.com/spn-project/spn/models/cuda"
	"github.com/spn-project/spn/models/cuda/engine"
	"github.com/spn-project/spn/models/op"
	"github.com/spn-project/spn/models/param"
	"github.com/spn-project/spn/models/rt"
)

// CheckDevice implements models.DeviceKind: every baseline trains on a
// device.
func (Kind) CheckDevice(models.Config) error { return nil }

var _ models.DeviceKind = Kind{}

// devState is the model's device: the engine, the parameters' device
// tensors (rows×cols, as the graph binds them) and the run's packed
// inputs.
type devState struct {
	e      *engine.Engine
	params map[*param.Param]*tensor.Dense
	// adam, when not nil, keeps the parameters and their gradients on the
	// device (NewDeviceAdam).
	adam *rt.DeviceAdam
	// pk gathers a run's inputs (x, the pooling matrix, the output
	// gradient) for one host→device copy into packed, kept from run to
	// run while it is large enough.
	pk     cuda.Pack
	packed *cuda.Buffer
}

// devNodes are the nodes of a device graph that a run binds or reads.
type devNodes struct {
	x, pool, seed *G.Node
	params        G.Nodes // in Params order
	out           *G.Node
	grads         G.Nodes // in Params order (grad graphs)
}

// UseDevice makes the model's Forward and Backward run on the device
// engine e: the same layers of Gorgonia's own ops (Model.layers) run by a
// TapeMachine with e, whose built-ins (MatMul, Mul, Gte, Repeat, Sum,
// Add) compute on the device. ⟨out, dOut⟩ is op.Dot (device math of
// models/op) where the CPU graph has Gorgonia's HadamardProd and Sum: the
// gradient of Gorgonia's Sum repeats a host scalar, which a device tensor
// cannot be multiplied with. A run sends the node inputs, the pooling
// matrix and the output gradient in one packed copy and brings back the
// outputs; the parameters are uploaded before each run and their
// gradients downloaded after a Backward, unless a DeviceAdam
// (NewDeviceAdam) keeps them on the device. It must come before the first
// Forward.
func (b *Model) UseDevice(e *engine.Engine) error {
	if b.cache.Len() > 0 {
		return errors.New("UseDevice: the model has built graphs on the CPU")
	}
	b.dev = &devState{e: e, params: map[*param.Param]*tensor.Dense{}}
	b.cache.OnDevice()
	return nil
}

// NewDeviceAdam implements fit.DeviceModel: the device optimiser of params
// (the model's Params), which keeps the parameters, their gradients and
// Adam's moments on the device.
func (b *Model) NewDeviceAdam(params []*param.Param, lr, weightDecay float64) (*rt.DeviceAdam, error) {
	d := b.dev
	if d == nil {
		return nil, errors.New("NewDeviceAdam: the model is not on the device path (UseDevice)")
	}
	if d.adam != nil {
		return nil, errors.New("NewDeviceAdam: the model has a device optimiser")
	}
	shapes := map[*param.Param][]int{}
	for _, l := range b.lins {
		shapes[l.W], shapes[l.B] = []int{l.In, l.Out}, []int{1, l.Out}
	}
	shape := func(p *param.Param) []int {
		if s, ok := shapes[p]; ok {
			return s
		}
		return p.Shape
	}
	a, err := rt.NewDeviceAdamOf(d.e, d.params, params, shape, lr, weightDecay)
	if err != nil {
		return nil, err
	}
	d.adam = a
	return a, nil
}

// SyncHost implements fit.DeviceModel: the parameters' device values into
// Param.W (the baseline has no running statistics).
func (b *Model) SyncHost() error {
	if b.dev == nil {
		return errors.New("SyncHost: the model is not on the device path (UseDevice)")
	}
	if b.dev.adam != nil {
		return b.dev.adam.Sync()
	}
	return nil
}

// SyncHopWeights implements fit.DeviceModel: the baseline has no hop
// weights.
func (b *Model) SyncHopWeights() error { return nil }

// tensor returns the device tensor of p as a rows×cols matrix, made from
// Param.W on first use.
func (d *devState) tensor(p *param.Param, rows, cols int) (*tensor.Dense, error) {
	if t, ok := d.params[p]; ok {
		return t, nil
	}
	t, err := d.e.FromHost(p.W, rows, cols)
	if err != nil {
		return nil, fmt.Errorf("parameter %s: %w", p.Name, err)
	}
	d.params[p] = t
	return t, nil
}

// compileDevice builds the device graph of key: the layers over input
// nodes that each run binds to device tensors, and for a gradient graph
// ⟨out, seed⟩ (op.Dot) differentiated with respect to the parameters.
func (b *Model) compileDevice(key agnKey) (*agnProg, error) {
	g := G.NewGraph()
	p := &agnProg{g: g, vals: &agnVals{}, nodes: &devNodes{}}
	nd := p.nodes
	rows := key.G
	if b.form == FormDeepMultisets {
		rows = key.N
	}
	p.x = make([]float32, rows*b.feat)
	input := func(name string, rows, cols int) *G.Node {
		return G.NewMatrix(g, G.Float32, G.WithShape(rows, cols), G.WithName(name))
	}
	nd.x = input("x", rows, b.feat)
	var err error
	nd.out, nd.params, err = b.layers(nd.x,
		func(prm *param.Param, rows, cols int) *G.Node { return input(prm.Name, rows, cols) },
		func() *G.Node {
			p.pool = make([]float32, key.G*key.N)
			nd.pool = input("pool", key.G, key.N)
			return nd.pool
		})
	if err != nil {
		return nil, err
	}
	if key.grad {
		p.seed = make([]float32, key.G*b.cfg.Out)
		nd.seed = input("seed", key.G, b.cfg.Out)
		cost, err := op.ApplyDevice(b.dev.e, op.Dot{ID: "baseline.seed", Shape: []int{key.G, b.cfg.Out}}, nd.out, nd.seed)
		if err != nil {
			return nil, fmt.Errorf("building ⟨out, seed⟩: %w", err)
		}
		if nd.grads, err = G.Grad(cost, nd.params...); err != nil {
			return nil, fmt.Errorf("differentiating the baseline graph: %w", err)
		}
	}
	p.vm = G.NewTapeMachine(g, G.WithEngine(b.dev.e))
	return p, nil
}

// runDevice runs p, loaded with the batch (load) and for a gradient graph
// its output gradient, on the device: one packed copy of the inputs, the
// parameters bound (uploaded unless a DeviceAdam keeps them there), the
// gradients added to Params()[i].G or to the DeviceAdam's, and the first
// g outputs' values brought back.
func (b *Model) runDevice(p *agnProg, g int) (out []float32, err error) {
	d, nd := b.dev, p.nodes
	defer func() { err = errors.Join(err, d.e.Reset()) }()
	d.pk.Reset()
	var xb, poolb, seedb *cuda.Buffer
	cuda.Put(&d.pk, &xb, p.x)
	if nd.pool != nil {
		cuda.Put(&d.pk, &poolb, p.pool)
	}
	if nd.seed != nil {
		cuda.Put(&d.pk, &seedb, p.seed)
	}
	if d.packed, err = d.pk.Upload(d.e.Context(), d.packed, 2*d.pk.Len()); err != nil {
		return nil, err
	}
	for _, in := range []struct {
		n *G.Node
		b *cuda.Buffer
	}{{nd.x, xb}, {nd.pool, poolb}, {nd.seed, seedb}} {
		if in.n == nil {
			continue
		}
		t, err := d.e.View(in.b, in.n.Shape()...)
		if err == nil {
			err = G.Let(in.n, t)
		}
		if err != nil {
			return nil, fmt.Errorf("binding %s: %w", in.n.Name(), err)
		}
	}
	ps := b.Params()
	for i, n := range nd.params {
		t, err := d.tensor(ps[i], n.Shape()[0], n.Shape()[1])
		if err != nil {
			return nil, err
		}
		if d.adam == nil {
			pb, err := d.e.Buffer(t)
			if err == nil {
				err = cuda.Upload(pb, ps[i].W)
			}
			if err != nil {
				return nil, fmt.Errorf("uploading parameter %s: %w", ps[i].Name, err)
			}
		}
		if err := G.Let(n, t); err != nil {
			return nil, fmt.Errorf("binding parameter %s: %w", ps[i].Name, err)
		}
	}
	p.vm.Reset()
	if err := p.vm.RunAll(); err != nil {
		return nil, fmt.Errorf("running the baseline graph on the device: %w", err)
	}
	// A forward run has no gradients; a backward run those of ps.
	if err := rt.AddGradients(d.e, d.adam, ps[:min(len(ps), len(nd.grads))], nd.grads); err != nil {
		return nil, err
	}
	if nd.seed != nil {
		return nil, nil
	}
	t, ok := nd.out.Value().(tensor.Tensor)
	if !ok {
		return nil, fmt.Errorf("output holds %T, want a device tensor", nd.out.Value())
	}
	o, err := d.e.ToHost(t)
	if err != nil {
		return nil, fmt.Errorf("output: %w", err)
	}
	n := g * b.cfg.Out
	if len(o) < n {
		return nil, fmt.Errorf("output has %d values, want %d", len(o), n)
	}
	return o[:n], nil
}

// forwardDevice is Forward on the device.
func (b *Model) forwardDevice(bt *data.Batch) ([]float32, error) {
	p, err := b.program(bt, false)
	if err != nil {
		return nil, err
	}
	return b.runDevice(p, bt.NumGraphs)
}
