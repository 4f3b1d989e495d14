package nbop

import (
	"fmt"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/models/cuda"
	"github.com/spn-project/spn/models/cuda/engine"
	"github.com/spn-project/spn/models/kernels"
	"github.com/spn-project/spn/models/op"
)

// HopCombine is the SPN layer's aggregation (paper eq. 1) over the N×W
// node states H, the k hop weights α and ε:
//
//	y = (1+ε)·H + Σ_{i=1..k} α_i·A_i·H
//
// A_i the 0/1 matrix of the i-th set of Data.SetHop1: D.Hop1 (N_1, or the
// adjacency for GIN), then D.Hops (N_2..N_k, N_∞ last with
// model.unreachable). Its gradient: dH = (1+ε)·dy + Σ_i α_i·A_iᵀ·dy,
// dα_i = ⟨dy, A_i·H⟩, dε = ⟨dy, H⟩.
//
// The forward pass is one fused pass over the rows
// (kernels.Backend.HopAggregateSums) that keeps the hop sums A_i·H in the
// op for the backward pass of the same run: use it by pointer
// (&HopCombine{…}), one per graph node. Its scratch comes from Be when Be
// hands out buffers (op.Buffers, as rt.Env does).
type HopCombine struct {
	ID      string
	Be      kernels.Backend
	D       *Data
	K, N, W int // hops, padded rows, width

	// sums and devSums are the hop sums the last forward pass kept, on
	// the host and on the device.
	sums    [][]float32
	devSums *cuda.Buffer
}

// Sig implements op.Op: inputs H (N×W), α (K), ε (1).
func (o *HopCombine) Sig() op.Sig {
	nd := []int{o.N, o.W}
	return op.Sig{ID: o.ID, In: [][]int{nd, {o.K}, {1}}, Out: nd, Sets: true}
}

// hops returns N_1..N_k, transposed with t.
func (o *HopCombine) hops(t bool) ([]data.CSR, error) {
	if len(o.D.Hops) != o.K-1 || len(o.D.HopsT) != len(o.D.Hops) {
		return nil, fmt.Errorf("%s: %d higher hop sets for k = %d", o.ID, len(o.D.Hops), o.K)
	}
	h1, hs := o.D.Hop1, o.D.Hops
	if t {
		h1, hs = o.D.Hop1T, o.D.HopsT
	}
	if h1.Len() != o.D.N {
		return nil, fmt.Errorf("%s: first hop set has %d rows for %d nodes", o.ID, h1.Len(), o.D.N)
	}
	return append([]data.CSR{h1}, hs...), nil
}

// aggregate sets y's n real rows to (1+ε)·H + Σ_i α_i·A_i·H and returns
// the hop sums A_i·H (scratch).
func (o *HopCombine) aggregate(y, H, alpha, eps []float32) ([][]float32, error) {
	hops, err := o.hops(false)
	if err != nil {
		return nil, err
	}
	n, d := o.D.N, o.W
	sums := make([][]float32, o.K)
	for i := range sums {
		sums[i] = scratch(o.Be, n*d)
	}
	o.Be.HopAggregateSums(y[:n*d], sums, H[:n*d], kernels.HopMix{Hops: hops, Coef: alpha, Scale: 1 + eps[0]}, n, d)
	return sums, nil
}

// Forward implements op.Op.
func (o *HopCombine) Forward(in [][]float32, y []float32) error {
	n, d := o.D.N, o.W
	clear(y[n*d:])
	sums, err := o.aggregate(y, in[0], in[1], in[2])
	o.sums = sums
	return err
}

// Backward implements op.Op: the hop sums of the forward pass (computed
// again when there are none of this batch's size).
func (o *HopCombine) Backward(in [][]float32, _, dy []float32, g [][]float32) error {
	H, alpha, eps := in[0], in[1], in[2]
	n, d := o.D.N, o.W
	hopsT, err := o.hops(true)
	if err != nil {
		return err
	}
	sums := o.sums
	if len(sums) != o.K || len(sums[0]) != n*d {
		if sums, err = o.aggregate(scratch(o.Be, n*d), H, alpha, eps); err != nil {
			return err
		}
	}
	clear(g[0][n*d:]) // Sig.Sets: the rows below are all set
	o.Be.HopAggregate(g[0][:n*d], dy[:n*d], kernels.HopMix{Hops: hopsT, Coef: alpha, Scale: 1 + eps[0]}, n, d)
	dots := o.Be.Dots(dy[:n*d], append(sums[:o.K:o.K], H[:n*d]), n, d)
	for i := 0; i < o.K; i++ {
		g[1][i] = float32(dots[i])
	}
	g[2][0] = float32(dots[o.K])
	return nil
}

// scratch returns n floats of scratch whose every value the caller
// overwrites: from be when it hands out buffers (op.Buffers), else new.
func scratch(be kernels.Backend, n int) []float32 {
	if b, ok := be.(op.Buffers); ok {
		return b.Buf(n)
	}
	return make([]float32, n)
}

// devHops returns N_1..N_k on the device.
func (o *HopCombine) devHops() (*DeviceHops, error) {
	return o.D.devHops(o.ID, o.K, o.K)
}

// devAggregate runs y = (1+ε)·H + Σ_i α_i·S_i on the device over the real
// rows of y, which is zeroed (its padding rows stay zero), and returns
// the hop sums S_i = A_i·H (scratch of e's run).
func (o *HopCombine) devAggregate(e *engine.Engine, h *DeviceHops, y, H, alpha, eps *cuda.Buffer) (*cuda.Buffer, error) {
	n, d := o.D.N, o.W
	sb, err := op.ScratchBuffer(e, o.K*n*d)
	if err != nil {
		return nil, err
	}
	if err := e.Launch("spn_hop_aggregate", n*d, y, sb, H, h.Ptr, h.Idx, alpha, eps, o.K, n, d); err != nil {
		return nil, err
	}
	return sb, nil
}

// ZeroOut implements op.ZeroOut: DeviceForward writes the real rows.
func (*HopCombine) ZeroOut() {}

// DeviceForward implements op.DeviceOp: the gather by rows of
// spn_hop_aggregate (the CPU's bits), the hop sums kept for the backward
// pass.
func (o *HopCombine) DeviceForward(e *engine.Engine, in []*cuda.Buffer, y *cuda.Buffer) error {
	h, err := o.devHops()
	if err != nil {
		return err
	}
	o.devSums, err = o.devAggregate(e, h, y, in[0], in[1], in[2])
	return err
}

// DeviceBackward implements op.DeviceOp: dH is the same gather of dy over
// the transposed hop sets, dα_i = ⟨dy, S_i⟩ and dε = ⟨dy, H⟩ together by
// op.DeviceDots (in double, rows, then chunks of rows, in order).
func (o *HopCombine) DeviceBackward(e *engine.Engine, in []*cuda.Buffer, _, dy *cuda.Buffer, g []*cuda.Buffer) error {
	h, err := o.devHops()
	if err != nil {
		return err
	}
	H, alpha, eps := in[0], in[1], in[2]
	n, d := o.D.N, o.W
	sums := o.devSums
	if sums == nil {
		tb, err := e.Zeros(o.N * d)
		if err != nil {
			return err
		}
		if sums, err = o.devAggregate(e, h, tb, H, alpha, eps); err != nil {
			return err
		}
	}
	if err := e.Launch("spn_hop_aggregate", n*d, g[0], nil, dy, h.PtrT, h.IdxT, alpha, eps, o.K, n, d); err != nil {
		return err
	}
	return op.DeviceDots(e, op.Dots{G: dy, Xs: sums, T: o.K, X1: H}, n, d, g[1], g[2])
}
