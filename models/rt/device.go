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
// for the device path: PackDevice adds that data (set by Prepare) to the
// run's pack, which goes to the device in one copy with the batch, and
// returns what drops the kind's references to it after the run.
type DevicePreparer interface {
	PackDevice(pk *cuda.Pack) (release func(), err error)
}

// deviceState is a model's device: the engine, the parameters' device
// tensors and what one step put on the device.
//
// An asynchronous step (StepAsync) leaves its work on the device when it
// returns, and the next step reuses what it used: the compiled Program
// of the same padded sizes (the graph cache), the engine's scratch
// memory (engine.Reset gives it back to the arena at the end of the
// step), the packed device buffer. That is safe because everything a
// step does on the device, the copies of its loss and outputs back to
// the host included, is enqueued on the default stream during the step,
// before the next step enqueues anything: the stream runs it all before
// the next step's copy and kernels. The host side holds nothing of the
// step after it returns but the page-locked buffers its copies go
// through: the staging of the pack and the results, each used in turn
// and each refilled only after the host has waited for the event
// recorded after its last copy.
type deviceState struct {
	e      *engine.Engine
	params map[*param.Param]*tensor.Dense
	// pk gathers a run's batch data, dropout masks and the kind's data
	// for one host→device copy into packed, the device buffer kept from
	// run to run while it is large enough; an asynchronous step's copy
	// goes through stage (made on its first use).
	pk     cuda.Pack
	packed *cuda.Buffer
	stage  *cuda.Staging
	// results are the page-locked buffers the asynchronous steps' losses
	// and outputs come back into, used in turn (last: the last one
	// used).
	results [stepResults]*stepResult
	last    int
	// release drops the kinds' references to a run's packed data.
	release []func()
	// adam, when not nil, keeps the parameters and their gradients on the
	// device (NewDeviceAdam).
	adam *DeviceAdam
	// bns are the batch norms whose running statistics are on the
	// device, in the order of their first device forward.
	bns []*bnStats
}

// UseDevice makes the model's training steps and evaluation (Step,
// StepAsync, Predict, Forward and Backward) run on the device engine dev:
// the graph is Gorgonia's as on the CPU, run by a TapeMachine with dev's
// engine, every op by its device math. It must come before the first
// step. A run sends the batch's data, the dropout masks (drawn on the
// host as on the CPU path) and the kind's data (DevicePreparer) in one
// packed copy; a step brings back the loss and the outputs, an
// evaluation the outputs. Step's copies wait for the device; StepAsync's
// go through page-locked memory and do not, until its result is
// resolved. The parameters are uploaded before each run
// (one copy each) and their gradients downloaded after a step (the
// optimiser runs on the host), unless a DeviceAdam (NewDeviceAdam) keeps
// parameters, gradients and moments on the device. The batch norms'
// running statistics stay on the device (SyncHost copies them and the
// parameters to the host). The models.Model adaptor runs there too: a
// training-mode Forward brings back the outputs, and Backward sends the
// output gradient with the batch and adds the parameters' gradients as
// Step does.
func (e *Engine) UseDevice(dev *engine.Engine) error {
	if n, _ := e.CachedGraphs(); n > 0 || e.CacheMisses > 0 {
		return errors.New("UseDevice: the model has built graphs on the CPU")
	}
	e.dev = &deviceState{e: dev, params: map[*param.Param]*tensor.Dense{}}
	e.cache.OnDevice()
	return nil
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

// prepare copies to the device what a run of p reads: the batch's data,
// the dropout masks, the output gradient (the adaptor's Backward) and
// the kind's own (DevicePreparer) in one packed copy, and the
// parameters' current values unless a DeviceAdam keeps them on the
// device (one copy each).
func (d *deviceState) prepare(a Arch, p *Program, o Opts) (err error) {
	if (o.seed != nil) != (p.seedNode != nil) {
		return errors.New("the output gradient does not match the graph")
	}
	if len(o.masks) != len(p.maskNodes) {
		return fmt.Errorf("%d dropout masks for %d mask nodes", len(o.masks), len(p.maskNodes))
	}
	defer func() {
		if err != nil {
			d.end(p, &err)
		}
	}()
	d.pk.Reset()
	// The dropout masks, drawn on the host from the model's generator as
	// on the CPU path (zero in the padding rows), in the host backing of
	// the mask nodes, which the device path does not read otherwise.
	maskBufs := make([]*cuda.Buffer, len(p.maskNodes))
	for t, mk := range p.masks {
		g := p.bd.G * len(mk) / p.key.G
		copy(mk, o.masks[t][:g])
		clear(mk[g:])
		cuda.Put(&d.pk, &maskBufs[t], mk)
	}
	// The output gradient of the adaptor's Backward, zero in the padding.
	var seedBuf *cuda.Buffer
	if o.seed != nil {
		copy(p.seed, o.seed)
		clear(p.seed[len(o.seed):])
		cuda.Put(&d.pk, &seedBuf, p.seed)
	}
	db, err := PackBatch(&d.pk, p.bd)
	if err != nil {
		return err
	}
	if dp, ok := a.(DevicePreparer); ok {
		rel, err := dp.PackDevice(&d.pk)
		if err != nil {
			return err
		}
		d.release = append(d.release, rel)
	}
	if o.async {
		if d.stage == nil {
			if d.stage, err = cuda.NewStaging(d.e.Context()); err != nil {
				return err
			}
		}
		d.packed, err = d.pk.UploadAsync(d.stage, d.packed, 2*d.pk.Len())
	} else {
		d.packed, err = d.pk.Upload(d.e.Context(), d.packed, 2*d.pk.Len())
	}
	if err != nil {
		return err
	}
	p.bd.Dev = db
	if p.lossData != nil {
		p.lossData.DevTarget = db.Target
	}
	for t, n := range p.maskNodes {
		mt, err := d.e.View(maskBufs[t], n.Shape()...)
		if err == nil {
			err = G.Let(n, mt)
		}
		if err != nil {
			return fmt.Errorf("binding dropout mask %d: %w", t, err)
		}
	}
	if seedBuf != nil {
		st, err := d.e.View(seedBuf, p.seedNode.Shape()...)
		if err == nil {
			err = G.Let(p.seedNode, st)
		}
		if err != nil {
			return fmt.Errorf("binding the output gradient: %w", err)
		}
	}
	if d.adam == nil {
		for _, pb := range p.params {
			b, err := d.e.Buffer(d.params[pb.p])
			if err == nil {
				err = cuda.Upload(b, pb.p.W)
			}
			if err != nil {
				return fmt.Errorf("uploading parameter %s: %w", pb.p.Name, err)
			}
		}
	}
	return nil
}

// end ends the run of p (done), setting *err to done's error unless
// the run failed already: after a failure (a kernel's fault spoils the
// context) the driver calls of ending it fail too, and the run's error
// is the one that says what happened.
func (d *deviceState) end(p *Program, err *error) {
	if derr := d.done(p); *err == nil {
		*err = derr
	}
}

// done frees what one run put on the device (its scratch tensors; the
// packed buffer stays for the next run) and drops the references to it.
func (d *deviceState) done(p *Program) error {
	err := d.e.Reset()
	for _, rel := range d.release {
		rel()
	}
	d.release = d.release[:0]
	p.bd.Dev = nil
	if p.lossData != nil {
		p.lossData.DevTarget = nil
	}
	return err
}

// output downloads the first g×c values of p's output node.
func (d *deviceState) output(p *Program, c int) ([]float32, error) {
	b, err := d.outputBuffer(p, c)
	if err != nil {
		return nil, err
	}
	o := make([]float32, b.Len())
	if err := cuda.Download(o, b); err != nil {
		return nil, fmt.Errorf("output: %w", err)
	}
	return o[:p.bd.G*c], nil
}

// outputBuffer returns the device buffer of p's output node, which holds
// at least its first g×c values.
func (d *deviceState) outputBuffer(p *Program, c int) (*cuda.Buffer, error) {
	b, err := d.nodeBuffer(p.outNode, "output")
	if err != nil {
		return nil, err
	}
	if b.Len() < p.bd.G*c {
		return nil, fmt.Errorf("output has %d values, want %d", b.Len(), p.bd.G*c)
	}
	return b, nil
}

// forward runs p (a graph without a gradient, built by prepare) and
// returns the first g×c outputs, the one copy back to the host.
func (d *deviceState) forward(p *Program, c int) (out []float32, err error) {
	defer d.end(p, &err)
	if err := p.run(); err != nil {
		return nil, err
	}
	return d.output(p, c)
}

// AddGradients adds a device run's gradients, the values of nodes
// (device tensors of e), to those of ps[i]: on the device when adam is
// not nil (DeviceAdam's gradients), else to Param.G on the host (one copy
// each).
func AddGradients(e *engine.Engine, adam *DeviceAdam, ps []*param.Param, nodes G.Nodes) error {
	if len(nodes) != len(ps) {
		return fmt.Errorf("%d gradients for %d parameters", len(nodes), len(ps))
	}
	grads := make([]tensor.Tensor, len(ps))
	for i, n := range nodes {
		t, ok := n.Value().(tensor.Tensor)
		if !ok {
			return fmt.Errorf("gradient of %s holds %T, want a device tensor", ps[i].Name, n.Value())
		}
		grads[i] = t
	}
	if adam != nil {
		return adam.accumulate(ps, grads)
	}
	for i, t := range grads {
		g, err := e.ToHost(t)
		if err != nil {
			return fmt.Errorf("gradient of %s: %w", ps[i].Name, err)
		}
		if len(g) != len(ps[i].G) {
			return fmt.Errorf("gradient of %s has %d values, want %d", ps[i].Name, len(g), len(ps[i].G))
		}
		for j, v := range g {
			ps[i].G[j] += v
		}
	}
	return nil
}

// run runs p (built by prepare) and adds the gradients to ps[i].G (or
// to the DeviceAdam's gradients on the device).
func (d *deviceState) run(p *Program, ps []*param.Param) error {
	if err := p.run(); err != nil {
		return err
	}
	if len(p.gradNodes) != len(ps) {
		return fmt.Errorf("graph has %d gradients for %d parameters", len(p.gradNodes), len(ps))
	}
	return AddGradients(d.e, d.adam, ps, p.gradNodes)
}

// step runs p (built by prepare), adds the gradients to ps[i].G (or to
// the DeviceAdam's gradients on the device) and returns the loss and the
// first g×c outputs, copied back when the step is done (neither when c
// is 0: the adaptor's Backward, whose graph has no loss).
func (d *deviceState) step(p *Program, ps []*param.Param, c int) (loss float64, out []float32, err error) {
	defer d.end(p, &err)
	if err := d.run(p, ps); err != nil {
		return 0, nil, err
	}
	if c == 0 {
		return 0, nil, nil
	}
	lb, err := d.lossBuffer(p)
	if err != nil {
		return 0, nil, err
	}
	var lv [1]float32
	if err := cuda.Download(lv[:], lb); err != nil {
		return 0, nil, fmt.Errorf("loss: %w", err)
	}
	o, err := d.output(p, c)
	if err != nil {
		return 0, nil, err
	}
	return float64(lv[0]), o, nil
}

// lossBuffer returns the device buffer of p's loss (one value).
func (d *deviceState) lossBuffer(p *Program) (*cuda.Buffer, error) {
	if p.lossNode == nil {
		return nil, errors.New("the graph has no loss")
	}
	b, err := d.nodeBuffer(p.lossNode, "loss")
	if err != nil {
		return nil, err
	}
	if b.Len() != 1 {
		return nil, fmt.Errorf("loss has %d values, want 1", b.Len())
	}
	return b, nil
}

// nodeBuffer returns the device buffer of n's value, a device tensor of
// the run; what names the node in the errors.
func (d *deviceState) nodeBuffer(n *G.Node, what string) (*cuda.Buffer, error) {
	t, ok := n.Value().(tensor.Tensor)
	if !ok {
		return nil, fmt.Errorf("%s holds %T, want a device tensor", what, n.Value())
	}
	b, err := d.e.Buffer(t)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return b, nil
}

// stepResults is the number of page-locked buffers the asynchronous
// steps' results come back into, used in turn: a step's result can wait
// for the caller while the next step's comes back.
const stepResults = 2

// stepResult is a page-locked buffer of asynchronous steps' results: the
// loss, then the outputs (float32 values), and the event recorded after
// the step's copies into it.
type stepResult struct {
	host *cuda.HostBuffer
	ev   *cuda.Event
	// owner is the step whose results the buffer holds or will hold,
	// until it resolves (nil: the buffer is free).
	owner *pendingStep
}

// pendingStep is an asynchronous step's result: in its page-locked
// buffer (r) until it resolves, then its own.
type pendingStep struct {
	r    *stepResult // nil once resolved
	n    int         // outputs
	loss float64
	out  []float32
	err  error
}

// resolve waits for the step's copies (once) and returns its loss and
// outputs.
func (ps *pendingStep) resolve() (float64, []float32, error) {
	if ps.r != nil {
		ps.take()
	}
	return ps.loss, ps.out, ps.err
}

// take waits for the event after the step's copies and takes the loss
// and the outputs out of the page-locked buffer, which is then free.
func (ps *pendingStep) take() {
	r := ps.r
	ps.r, r.owner = nil, nil
	if err := r.ev.Wait(); err != nil {
		ps.err = fmt.Errorf("waiting for the step's results: %w", err)
		return
	}
	v := cuda.HostValues[float32](r.host)
	ps.loss = float64(v[0])
	ps.out = append([]float32(nil), v[1:1+ps.n]...)
}

// result returns the next page-locked buffer of results, free and
// holding at least n values. A buffer still holding an unresolved step's
// results (a caller two steps behind) first gives them to that step,
// after waiting for them.
func (d *deviceState) result(n int) (*stepResult, error) {
	k := (d.last + 1) % stepResults
	r := d.results[k]
	if r == nil {
		ev, err := d.e.Context().NewEvent()
		if err != nil {
			return nil, fmt.Errorf("step results: %w", err)
		}
		r = &stepResult{ev: ev}
		d.results[k] = r
	}
	if r.owner != nil {
		r.owner.take()
	}
	d.last = k
	if r.host == nil || r.host.Len() < 4*n {
		if r.host != nil {
			h := r.host
			r.host = nil
			if err := h.Free(); err != nil {
				return nil, fmt.Errorf("step results: %w", err)
			}
		}
		h, err := d.e.Context().AllocHost(4 * n)
		if err != nil {
			return nil, fmt.Errorf("step results: %w", err)
		}
		r.host = h
	}
	return r, nil
}

// stepAsync is step without waiting for the device: it runs p (built by
// prepare with o.async), enqueues the copies of the loss and the first
// g×c outputs into a page-locked buffer of results and records the
// buffer's event after them, and returns what resolves them. The copies
// are enqueued before done gives the step's scratch memory back to the
// engine's arena, so they run before the next step's kernels reuse it.
func (d *deviceState) stepAsync(p *Program, ps []*param.Param, c int) (resolve func() (float64, []float32, error), err error) {
	defer d.end(p, &err)
	if err := d.run(p, ps); err != nil {
		return nil, err
	}
	lb, err := d.lossBuffer(p)
	if err != nil {
		return nil, err
	}
	ob, err := d.outputBuffer(p, c)
	if err != nil {
		return nil, err
	}
	// Room for the loss and the padded outputs: the next batches of the
	// same padded size fit.
	r, err := d.result(1 + ob.Len())
	if err != nil {
		return nil, err
	}
	n := p.bd.G * c
	if ob, err = ob.Slice(0, n); err != nil {
		return nil, fmt.Errorf("output: %w", err)
	}
	v := cuda.HostValues[float32](r.host)
	err = cuda.DownloadAsync(v[:1], lb)
	if err != nil {
		err = fmt.Errorf("loss: %w", err)
	} else if err = cuda.DownloadAsync(v[1:1+n], ob); err != nil {
		err = fmt.Errorf("output: %w", err)
	}
	// The event follows whatever copy was enqueued, so that the buffer's
	// next use waits for it.
	if rerr := r.ev.Record(); rerr != nil {
		err = errors.Join(err, fmt.Errorf("step results: %w", rerr))
	}
	if err != nil {
		return nil, err
	}
	pending := &pendingStep{r: r, n: n}
	r.owner = pending
	return pending.resolve, nil
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
