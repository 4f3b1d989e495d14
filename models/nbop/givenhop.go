package nbop

import (
	"fmt"

	"github.com/spn-project/spn/models/cuda"
	"github.com/spn-project/spn/models/cuda/engine"
	"github.com/spn-project/spn/models/kernels"
	"github.com/spn-project/spn/models/op"
)

// GivenFirstHop is the SP-MPNN combination whose first-hop term R is
// given (E-SPN's edge messages, R-SPN's relation sums) over N×W node
// states:
//
//	y = (1+ε)·S + α_1·R + Σ_{i=2..k} α_i·A_i·H
//
// with inputs S, R, H (N×W), α (K) and ε (1), A_i the 0/1 matrix of N_i
// (D.Hops: N_2..N_k). Its gradient: dS = (1+ε)·dy, dR = α_1·dy,
// dH = Σ_{i≥2} α_i·A_iᵀ·dy, dα_1 = ⟨dy, R⟩, dα_i = ⟨A_iᵀ·dy, H⟩,
// dε = ⟨dy, S⟩.
type GivenFirstHop struct {
	ID      string
	Be      kernels.Backend
	D       *Data
	K, N, W int // hops, padded rows, width
}

// Sig implements op.Op.
func (o GivenFirstHop) Sig() op.Sig {
	nd := []int{o.N, o.W}
	return op.Sig{ID: o.ID, In: [][]int{nd, nd, nd, {o.K}, {1}}, Out: nd, Sets: true}
}

// Forward implements op.Op.
func (o GivenFirstHop) Forward(in [][]float32, y []float32) error {
	S, R, H, alpha, eps := in[0], in[1], in[2], in[3], in[4]
	if len(o.D.Hops) != o.K-1 {
		return fmt.Errorf("%s: %d higher hop sets for k = %d", o.ID, len(o.D.Hops), o.K)
	}
	n, d := o.D.N, o.W
	clear(y[n*d:])
	o.Be.HopAggregate(y[:n*d], H[:n*d], kernels.HopMix{Hops: o.D.Hops, Coef: alpha[1:], Scale: 0}, n, d)
	s, a1 := 1+eps[0], alpha[0]
	for i := range y[:n*d] {
		y[i] += s*S[i] + a1*R[i]
	}
	return nil
}

// Backward implements op.Op.
func (o GivenFirstHop) Backward(in [][]float32, _, dy []float32, g [][]float32) error {
	S, R, H, alpha, eps := in[0], in[1], in[2], in[3], in[4]
	n, d := o.D.N, o.W
	clear(g[0][n*d:]) // Sig.Sets: the rows below are all set
	s, a1 := 1+eps[0], alpha[0]
	for i, v := range dy[:n*d] {
		g[0][i], g[1][i] = s*v, a1*v
	}
	T := make([][]float32, len(o.D.HopsT)) // the hop sums A_iᵀ·dy, scratch
	for i := range T {
		T[i] = scratch(o.Be, n*d)
		defer op.Release(o.Be, T[i])
	}
	o.Be.HopAggregateSums(g[2][:n*d], T, dy[:n*d], kernels.HopMix{Hops: o.D.HopsT, Coef: alpha[1:], Scale: 0}, n, d)
	dots := o.Be.Dots(dy[:n*d], [][]float32{R[:n*d], S[:n*d]}, n, d)
	g[3][0], g[4][0] = float32(dots[0]), float32(dots[1])
	for i, v := range o.Be.Dots(H[:n*d], T, n, d) {
		g[3][i+1] = float32(v)
	}
	return nil
}

// higherCoef returns α_2..α_k, the coefficients of the higher hops, as a
// view of α (nil for k = 1: no higher hops).
func (o GivenFirstHop) higherCoef(alpha *cuda.Buffer) (*cuda.Buffer, error) {
	if o.K == 1 {
		return nil, nil
	}
	return alpha.Slice(1, o.K-1)
}

// ZeroOut implements op.ZeroOut: DeviceForward writes the real rows.
func (GivenFirstHop) ZeroOut() {}

// DeviceForward implements op.DeviceOp: the higher hops' gather without ε
// (spn_hop_aggregate), then (1+ε)·S + α_1·R added (spn_combine_terms),
// the CPU's bits; zero in the padding.
func (o GivenFirstHop) DeviceForward(e *engine.Engine, in []*cuda.Buffer, y *cuda.Buffer) error {
	h, coef, err := o.devHigher(in)
	if err != nil {
		return err
	}
	S, R, H, alpha, eps := in[0], in[1], in[2], in[3], in[4]
	n, d := o.D.N, o.W
	if err := e.Launch("spn_hop_aggregate", n*d, y, nil, H, h.Ptr, h.Idx, coef, nil, o.K-1, n, d); err != nil {
		return err
	}
	return e.Launch("spn_combine_terms", n*d, y, S, R, alpha, eps, n*d)
}

// DeviceBackward implements op.DeviceOp: dS = (1+ε)·dy and dR = α_1·dy
// (spn_combine_terms_backward), dH the higher hops' gather of dy over
// their transposes keeping the sums T_i = A_iᵀ·dy, then dα_1 = ⟨dy, R⟩,
// dα_i = ⟨H, T_i⟩ and dε = ⟨dy, S⟩ by one op.DeviceDots.
func (o GivenFirstHop) DeviceBackward(e *engine.Engine, in []*cuda.Buffer, _, dy *cuda.Buffer, g []*cuda.Buffer) error {
	h, coef, err := o.devHigher(in)
	if err != nil {
		return err
	}
	S, R, H, alpha, eps := in[0], in[1], in[2], in[3], in[4]
	n, d := o.D.N, o.W
	if err := e.Launch("spn_combine_terms_backward", n*d, g[0], g[1], dy, alpha, eps, n*d); err != nil {
		return err
	}
	var T *cuda.Buffer
	if o.K > 1 {
		if T, err = op.ScratchBuffer(e, (o.K-1)*n*d); err != nil {
			return err
		}
	}
	if err := e.Launch("spn_hop_aggregate", n*d, g[2], T, dy, h.PtrT, h.IdxT, coef, nil, o.K-1, n, d); err != nil {
		return err
	}
	return op.DeviceDots(e, op.Dots{G: dy, Xs: R, T: 1, H: H, Ys: T, U: o.K - 1, X1: S}, n, d, g[3], g[4])
}

// devHigher returns what both device passes gather the higher hops with:
// the k − 1 hop sets on the device and their coefficients α_2..α_k
// (from α, the op's input 3). The hop sets are checked first: a caller
// whose hops are missing may give no inputs.
func (o GivenFirstHop) devHigher(in []*cuda.Buffer) (*DeviceHops, *cuda.Buffer, error) {
	h, err := o.D.devHops(o.ID, o.K, o.K-1)
	if err != nil {
		return nil, nil, err
	}
	coef, err := o.higherCoef(in[3])
	if err != nil {
		return nil, nil, err
	}
	return h, coef, nil
}

// devHops returns the k' = want hop sets of an op over k hops on the
// device, or an error naming the op id.
func (d *Data) devHops(id string, k, want int) (*DeviceHops, error) {
	h := d.Dev
	if h == nil {
		return nil, fmt.Errorf("%s: the hop sets are not on the device", id)
	}
	if h.K != want {
		return nil, fmt.Errorf("%s: %d hop sets on the device, want %d for k = %d", id, h.K, want, k)
	}
	return h, nil
}
