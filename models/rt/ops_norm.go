package rt

import (
	"errors"
	"fmt"
	"math"

	"github.com/spn-project/spn/models/cuda"
	"github.com/spn-project/spn/models/cuda/engine"

	"github.com/spn-project/spn/models/kernels"
	"github.com/spn-project/spn/models/op"
)

// bnStats is the state one batch-norm layer keeps outside the graph: the
// running statistics (the model's buffers, changed only by a training-mode
// forward) and what the last forward computed for its backward.
type bnStats struct {
	// RunMean and RunVar alias the model's buffers.
	RunMean, RunVar []float64
	// Momentum and Eps follow PyTorch's BatchNorm1d (0.1, 1e-5).
	Momentum, Eps float64

	xhat   []float32 // normalised input of the last forward
	invStd []float32

	// Dev holds the running statistics on a device (uploaded by the first
	// device forward) and what the last device forward computed for its
	// backward (nil on the CPU path).
	Dev *DeviceBN
}

// DeviceBN is a batch norm's state on a device: the running statistics
// (double, as the model's buffers) and the last forward's x̂ and
// 1/√(σ²+eps) (scratch buffers of the engine).
type DeviceBN struct {
	RunMean, RunVar *cuda.Buffer
	xhat, inv       *cuda.Buffer
}

// uploadBN copies st's running statistics to e's device.
func uploadBN(e *engine.Engine, st *bnStats) (*DeviceBN, error) {
	m, err := cuda.NewBuffer(e.Context(), st.RunMean)
	if err != nil {
		return nil, fmt.Errorf("uploading the running mean: %w", err)
	}
	v, err := cuda.NewBuffer(e.Context(), st.RunVar)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("uploading the running variance: %w", err), m.Free())
	}
	return &DeviceBN{RunMean: m, RunVar: v}, nil
}

// Download copies the running statistics on the device into st's.
func (b *DeviceBN) Download(st *bnStats) error {
	if err := cuda.Download(st.RunMean, b.RunMean); err != nil {
		return err
	}
	return cuda.Download(st.RunVar, b.RunVar)
}

// Free releases the running statistics on the device.
func (b *DeviceBN) Free() error { return errors.Join(b.RunMean.Free(), b.RunVar.Free()) }

// bnReLU is the fused y = ReLU(γ·(x−μ)/√(σ²+ε) + β) for inputs x (n×d),
// γ (d), β (d): batch statistics in training mode (and a running-statistics
// update), running statistics in evaluation mode. Gorgonia's BatchNorm is
// not used: its training-mode machine resets the running statistics and
// nil scale/bias become random parameters. With dz = dy·[y>0] its gradient
// is
//
//	dγ = Σ_rows dz·x̂,  dβ = Σ_rows dz,
//	dx = γ/σ·(dz − mean(dz) − x̂·mean(dz·x̂))  (training; γ/σ·dz in evaluation).
type bnReLU struct {
	id     string
	be     Env
	st     *bnStats
	train  bool
	update bool // training mode only: update the running statistics
	bd     *BatchData
	N, d   int
}

// graphOpts is what the ops of one compiled graph are built with: the
// environment, the batch data, the padded row count N, and whether the
// graph trains (batch statistics) and updates the running statistics
// (training only).
type graphOpts struct {
	be            Env
	bd            *BatchData
	train, update bool
	N             int
}

// mode is the graph's mode in op ids: "train" or "eval".
func (g graphOpts) mode() string {
	if g.train {
		return "train"
	}
	return "eval"
}

// newBNReLU returns batch norm + ReLU over d columns with the running
// statistics st, for graph g.
func newBNReLU(id string, g graphOpts, st *bnStats, d int) bnReLU {
	return bnReLU{id: id + "." + g.mode(), be: g.be, bd: g.bd, st: st, train: g.train, update: g.train && g.update, N: g.N, d: d}
}

// Sig implements op.Op.
func (o bnReLU) Sig() op.Sig {
	return op.Sig{ID: o.id, In: [][]int{{o.N, o.d}, {o.d}, {o.d}}, Out: []int{o.N, o.d}}
}

// Forward implements op.Op.
func (o bnReLU) Forward(in [][]float32, y []float32) error {
	n, d, st := o.bd.N, o.d, o.st
	x, g, bt := in[0], in[1], in[2]
	mean := make([]float64, d)
	variance := make([]float64, d)
	if o.train && n > 0 {
		s := kernels.ColSums(o.be, x, nil, n, d)
		for j := range mean {
			mean[j] = s[j] / float64(n)
		}
		sq := kernels.ColSums(o.be, x, mean, n, d)
		for j := range variance {
			variance[j] = sq[j] / float64(n)
			unbiased := variance[j]
			if n > 1 {
				unbiased = variance[j] * float64(n) / float64(n-1)
			}
			if o.update {
				st.RunMean[j] = (1-st.Momentum)*st.RunMean[j] + st.Momentum*mean[j]
				st.RunVar[j] = (1-st.Momentum)*st.RunVar[j] + st.Momentum*unbiased
			}
		}
	} else {
		copy(mean, st.RunMean)
		copy(variance, st.RunVar)
	}
	mu := make([]float32, d)
	st.invStd = make([]float32, d)
	for j := range mu {
		mu[j] = float32(mean[j])
		st.invStd[j] = float32(1 / math.Sqrt(variance[j]+st.Eps))
	}
	st.xhat = o.be.Buf(n * d)
	clear(y[n*d:])
	kernels.BNReLUForward(o.be, kernels.BNReLUArgs{XHat: st.xhat, Y: y, X: x, Mu: mu, Inv: st.invStd, Gamma: g, Beta: bt, N: n, D: d})
	return nil
}

// output sets y (N×d) to the output of the last forward pass from its x̂
// and γ, β: y = max(γ·x̂+β, 0) over the real rows, the padding zero. It is
// BNReLUForward with μ = 0 and 1/σ = 1, whose x̂' = (x̂−0)·1 is x̂ bit for
// bit (written over x̂ itself), so y has the forward pass's bits.
func (o bnReLU) output(y, gamma, beta []float32) error {
	n, d, st := o.bd.N, o.d, o.st
	if len(st.xhat) != n*d {
		return fmt.Errorf("no forward pass recorded for %d×%d rows", n, d)
	}
	mu, one := make([]float32, d), make([]float32, d)
	for j := range one {
		one[j] = 1
	}
	clear(y[n*d:])
	kernels.BNReLUForward(o.be, kernels.BNReLUArgs{XHat: st.xhat, Y: y, X: st.xhat, Mu: mu, Inv: one, Gamma: gamma, Beta: beta, N: n, D: d})
	return nil
}

// Backward implements op.Op: dz and its column sums once, then [dγ; dβ]
// and dx from them.
func (o bnReLU) Backward(in [][]float32, y, dy []float32, dIn [][]float32) error {
	n, d, st := o.bd.N, o.d, o.st
	g := in[1]
	xhat, inv := st.xhat, st.invStd
	if len(xhat) != n*d || len(inv) != d {
		return fmt.Errorf("no forward pass recorded for %d×%d rows", n, d)
	}
	dz := o.be.Buf(n * d)
	defer o.be.Release(dz)
	kernels.ReLUMask(o.be, dz, y, dy, n, d)
	sdz, sdzx := kernels.ColSumsPair(o.be, dz, xhat, n, d)
	for j := 0; j < d; j++ {
		dIn[1][j] = float32(sdzx[j])
		dIn[2][j] = float32(sdz[j])
	}
	dx := dIn[0]
	if !o.train {
		o.be.ForEachChunk(n, func(_, lo, hi int) {
			for r := lo; r < hi; r++ {
				xr, zr := dx[r*d:(r+1)*d], dz[r*d:(r+1)*d]
				for j := range xr {
					xr[j] = zr[j] * (g[j] * inv[j])
				}
			}
		})
		return nil
	}
	gi := make([]float32, d)
	mdz := make([]float32, d)
	mdzx := make([]float32, d)
	for j := 0; j < d; j++ {
		gi[j] = g[j] * inv[j]
		mdz[j] = float32(sdz[j] / float64(n))
		mdzx[j] = float32(sdzx[j] / float64(n))
	}
	kernels.BNBackward(o.be, kernels.BNBackwardArgs{DX: dx, DZ: dz, XHat: xhat, GI: gi, M: mdz, MX: mdzx, N: n, D: d})
	return nil
}

// ZeroOut implements op.ZeroOut: DeviceForward writes the real rows.
func (bnReLU) ZeroOut() {}

// DeviceForward implements op.DeviceOp. In training mode (with real
// rows) the column statistics come as partials per chunk of rows and
// column, the mean's (spn_bn_part) then the variance's about it
// (spn_bn_part again), and each thread of spn_bn_relu_train adds them up
// itself for x̂ and y, its row-0 threads keeping inv and updating the
// running statistics. Otherwise (evaluation, or no rows) the running
// statistics give μ and inv (spn_bn_eval_stats) for spn_bn_relu. The
// padding rows of the zeroed y stay zero (op.ZeroOut).
func (o bnReLU) DeviceForward(e *engine.Engine, in []*cuda.Buffer, y *cuda.Buffer) error {
	return o.deviceForward(e, in[0], nil, in[1], in[2], y)
}

// deviceForward is DeviceForward of the input x + bias (bias, d values,
// broadcast over the rows; nil for x alone), the sum made by the kernels
// as they read x instead of a launch of its own: the fused MLP's linear
// map before the batch norm is its product alone (linear.deviceProduct),
// with the same bits as the linear map's y = product + b followed by the
// batch norm.
func (o bnReLU) deviceForward(e *engine.Engine, x, bias, gamma, beta, y *cuda.Buffer) error {
	n, d, st := o.bd.N, o.d, o.st
	if st.Dev == nil { // first use: the running statistics go to the device and stay there
		dv, err := uploadBN(e, st)
		if err != nil {
			return fmt.Errorf("%s: %w", o.id, err)
		}
		st.Dev = dv
		if o.be.dev != nil {
			o.be.dev.bns = append(o.be.dev.bns, st)
		}
	}
	dv := st.Dev
	var bufs [2]*cuda.Buffer // inv, x̂
	for i, size := range []int{d, n * d} {
		var err error
		if bufs[i], err = op.ScratchBuffer(e, size); err != nil {
			return err
		}
	}
	inv, xhat := bufs[0], bufs[1]
	dv.xhat, dv.inv = xhat, inv
	if !o.train || n == 0 {
		mu, err := op.ScratchBuffer(e, d)
		if err != nil {
			return err
		}
		if err := e.Launch("spn_bn_eval_stats", d, mu, inv, dv.RunMean, dv.RunVar, d, st.Eps); err != nil {
			return err
		}
		return e.Launch("spn_bn_relu", n*d, xhat, y, x, bias, mu, inv, gamma, beta, n, d)
	}
	nc := kernels.NumChunks(n)
	part, err := e.Scratch64(2 * nc * d) // the mean's partials, then the variance's
	if err != nil {
		return err
	}
	msum, err := part.Slice(0, nc*d)
	if err != nil {
		return err
	}
	vsum, err := part.Slice(nc*d, nc*d)
	if err != nil {
		return err
	}
	if err := e.Launch("spn_bn_part", nc*d, msum, nil, x, bias, n, d); err != nil {
		return err
	}
	if err := e.Launch("spn_bn_part", nc*d, vsum, msum, x, bias, n, d); err != nil {
		return err
	}
	update := 0
	if o.update {
		update = 1
	}
	return e.Launch("spn_bn_relu_train", n*d, xhat, y, inv, dv.RunMean, dv.RunVar, x, bias, msum, vsum, gamma, beta, n, d, st.Momentum, st.Eps, update)
}

// DeviceBackward implements op.DeviceOp: dz through the ReLU with the
// partials of Σ dz and Σ dz·x̂ per chunk of rows and column
// (spn_bn_backward_part), then dx per chunk of rows and column, each
// thread adding the partials itself, its chunk-0 threads setting dγ and
// dβ (spn_bn_backward, in either mode).
func (o bnReLU) DeviceBackward(e *engine.Engine, in []*cuda.Buffer, y, dy *cuda.Buffer, dIn []*cuda.Buffer) error {
	return o.deviceBackward(e, in[1], y, dy, bnGrads{DX: dIn[0], DG: dIn[1], DB: dIn[2]})
}

// bnGrads are the gradient buffers bnReLU.deviceBackward sets: those of
// the input x (DX), of γ (DG) and of β (DB), and, when not nil, DBias,
// to which it adds Σ_rows dx.
type bnGrads struct {
	DX, DG, DB, DBias *cuda.Buffer
}

// deviceBackward is DeviceBackward of γ (gamma), the forward pass's
// output y and its gradient dy, setting the gradients dx, dγ (dg) and dβ
// (db) of g; when g.DBias is not nil it also adds Σ_rows dx to it, the
// gradient of the bias of the linear map before the batch norm (the fused
// MLP's), by the chunk partials spn_bn_backward keeps as it writes dx
// and, for more than one chunk, spn_col_sums: the bits of Engine.ColSums
// over dx, one launch fewer.
func (o bnReLU) deviceBackward(e *engine.Engine, gamma, y, dy *cuda.Buffer, g bnGrads) error {
	dx, dg, db, dbias := g.DX, g.DG, g.DB, g.DBias
	n, d, st := o.bd.N, o.d, o.st
	if st.Dev == nil || st.Dev.xhat == nil {
		return fmt.Errorf("%s: no device forward pass recorded", o.id)
	}
	dz, err := op.ScratchBuffer(e, n*d)
	if err != nil {
		return err
	}
	nc := kernels.NumChunks(n)
	part, err := e.Scratch64(max(2*nc*d, 1))
	if err != nil {
		return err
	}
	xhat, inv := st.Dev.xhat, st.Dev.inv
	if err := e.Launch("spn_bn_backward_part", nc*d, part, dz, y, dy, xhat, n, d); err != nil {
		return err
	}
	var bpart *cuda.Buffer
	if dbias != nil && nc > 1 {
		if bpart, err = e.Scratch32(nc * d); err != nil {
			return err
		}
	}
	train := 0
	if o.train {
		train = 1
	}
	if err := e.Launch("spn_bn_backward", nc*d, dx, dg, db, dbias, bpart, dz, xhat, gamma, inv, part, n, d, train); err != nil {
		return err
	}
	if bpart == nil {
		return nil
	}
	return e.Launch("spn_col_sums", d, dbias, bpart, nc, d)
}
