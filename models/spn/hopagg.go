package spn

import (
	"fmt"
	"github.com/spn-project/spn/models/rt"

	"github.com/spn-project/spn/models/op"
)

// hopAgg is the SPN aggregation as one fused op over the kernels' CSR
// SpMM:
//
//	y = (1+ε)·x + Σ_{i=1..k} α_i · A_i·x
//
// with inputs x (N×d), α (k) and ε (1), where A_i is the 0/1 matrix of N_i
// (the batch's hop set i). Its gradient is the transposed aggregation for x
// and one fused pass of dots for α and ε:
//
//	dx = (1+ε)·dy + Σ_i α_i·A_iᵀ·dy,  dα_i = ⟨dy, A_i x⟩,  dε = ⟨dy, x⟩.
type hopAgg struct {
	id      string
	be      rt.Env
	bd      *rt.BatchData
	k, N, d int
	// sums are the hop sums S_i = A_i·x (n×d each) of the last Forward,
	// which the gradient of α reads.
	sums *[][]float32
}

func newHopAgg(id string, be rt.Env, bd *rt.BatchData, k, N, d int) hopAgg {
	return hopAgg{id: id, be: be, bd: bd, k: k, N: N, d: d, sums: new([][]float32)}
}

// Sig implements op.Op.
func (o hopAgg) Sig() op.Sig {
	return op.Sig{ID: o.id, In: [][]int{{o.N, o.d}, {o.k}, {1}}, Out: []int{o.N, o.d}}
}

// Forward implements op.Op.
func (o hopAgg) Forward(in [][]float32, y []float32) error {
	x, alpha, eps := in[0], in[1], in[2]
	n, d := o.bd.N, o.d
	clear(y[n*d:])
	s := make([][]float32, o.k)
	for i := range s {
		s[i] = o.be.Buf(n * d)
	}
	*o.sums = s
	o.be.HopAggregateSums(y[:n*d], s, x[:n*d], o.bd.Hops[:o.k], alpha, 1+eps[0], n, d)
	return nil
}

// Backward implements op.Op.
func (o hopAgg) Backward(in [][]float32, _, dy []float32, dIn [][]float32) error {
	x, alpha, eps := in[0], in[1], in[2]
	n, d := o.bd.N, o.d
	if len(*o.sums) != o.k {
		return fmt.Errorf("no forward hop sums recorded")
	}
	o.be.HopAggregate(dIn[0][:n*d], dy[:n*d], o.bd.HopsT[:o.k], alpha, 1+eps[0], n, d)
	// ⟨dy, S_i⟩ and ⟨dy, x⟩ in one pass.
	xs := append(append(make([][]float32, 0, o.k+1), *o.sums...), x[:n*d])
	dots := o.be.Dots(dy[:n*d], xs, n, d)
	for i := 0; i < o.k; i++ {
		dIn[1][i] = float32(dots[i])
	}
	dIn[2][0] = float32(dots[o.k])
	return nil
}
