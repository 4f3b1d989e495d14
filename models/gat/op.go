package gat

import (
	"fmt"
	"math"

	"github.com/spn-project/spn/models/cuda"
	"github.com/spn-project/spn/models/cuda/engine"
	"github.com/spn-project/spn/models/kernels"
	"github.com/spn-project/spn/models/op"
	"github.com/spn-project/spn/models/rt"
)

// GATSlope is the negative slope of GAT's LeakyReLU.
const GATSlope = 0.2

// gatState is what a GAT attention forward keeps for its backward: the
// attention weights α and the pre-activations, per (edge, head).
type gatState struct {
	alpha, pre []float32
	// devAlpha and devPre are the same on a device (scratch buffers of
	// the run, nil on the CPU path).
	devAlpha, devPre *cuda.Buffer
}

// gatAttnOp is GAT's attention aggregation for inputs z (N×d), a_src and
// a_dst (H × d/H): for every destination node u, head h and source v in
// N(u) ∪ {u} (graphData.loops),
//
//	e_uv = LeakyReLU_0.2(⟨a_dst_h, z_u^h⟩ + ⟨a_src_h, z_v^h⟩)
//	α_uv = softmax_v(e_uv)   (per destination node u and head h)
//	y_u^h = Σ_v α_uv · z_v^h
//
// where z^h is the h-th block of d/H columns; the heads are concatenated
// (y is N×d). Rows are independent, so the forward runs in parallel row
// chunks with no reduction.
type gatAttn struct {
	id      string
	be      rt.Env
	bd      *rt.BatchData
	gd      *graphData
	H, N, d int
	st      *gatState
}

// attnShape is the shape of a newGATAttn op: Heads attention heads over
// N padded node rows of width D (D/Heads per head).
type attnShape struct {
	Heads, N, D int
}

func newGATAttn(id string, be rt.Env, bd *rt.BatchData, gd *graphData, s attnShape) gatAttn {
	return gatAttn{id: id, be: be, bd: bd, gd: gd, H: s.Heads, N: s.N, d: s.D, st: &gatState{}}
}

// Sig implements op.Op.
func (o gatAttn) Sig() op.Sig {
	return op.Sig{ID: o.id, In: [][]int{{o.N, o.d}, {o.H, o.d / o.H}, {o.H, o.d / o.H}}, Out: []int{o.N, o.d}}
}

// Forward implements op.Op.
func (o gatAttn) Forward(in [][]float32, y []float32) error {
	z, aSrc, aDst := in[0], in[1], in[2]
	n, d, H, gd := o.bd.N, o.d, o.H, o.gd
	lp := gd.loops
	if lp.Len() != n {
		return fmt.Errorf("neighbourhoods cover %d nodes, batch has %d", lp.Len(), n)
	}
	dh := d / H
	E := len(lp.Idx)
	o.st.alpha = rt.Resize(o.st.alpha, E*H)
	o.st.pre = rt.Resize(o.st.pre, E*H)
	alpha, pre := o.st.alpha, o.st.pre
	clear(y)
	o.be.ForEachChunk(n, func(_, lo, hi int) {
		for u := lo; u < hi; u++ {
			e0, e1 := lp.Ptr[u], lp.Ptr[u+1]
			for h := 0; h < H; h++ {
				c := h * dh
				sd := rt.Dot32(aDst[c:c+dh], z[u*d+c:u*d+c+dh])
				m := math.Inf(-1)
				for e := e0; e < e1; e++ {
					v := int(lp.Idx[e])
					p := sd + rt.Dot32(aSrc[c:c+dh], z[v*d+c:v*d+c+dh])
					pre[int(e)*H+h] = float32(p)
					if p < 0 {
						p *= GATSlope
					}
					alpha[int(e)*H+h] = float32(p)
					m = math.Max(m, p)
				}
				var s float64
				for e := e0; e < e1; e++ {
					x := math.Exp(float64(alpha[int(e)*H+h]) - m)
					alpha[int(e)*H+h] = float32(x)
					s += x
				}
				yu := y[u*d+c : u*d+c+dh]
				for e := e0; e < e1; e++ {
					a := float32(float64(alpha[int(e)*H+h]) / s)
					alpha[int(e)*H+h] = a
					v := int(lp.Idx[e])
					for j, zv := range z[v*d+c : v*d+c+dh] {
						yu[j] += a * zv
					}
				}
			}
		}
	})
	return nil
}

// Backward implements op.Op, for inputs z, a_src, a_dst and dy:
// with dα_uv = ⟨dy_u^h, z_v^h⟩ and dp_uv = α_uv(dα_uv − Σ_w α_uw dα_uw)·
// LeakyReLU'(pre_uv),
//
//	dz_v^h = Σ_{u: v∈N(u)∪{u}} (α_uv dy_u^h + dp_uv a_src_h) + Σ_w dp_vw a_dst_h
//	da_src_h = Σ_uv dp_uv z_v^h,   da_dst_h = Σ_uv dp_uv z_u^h.
//
// The first pass computes dp per destination row and per-chunk partial
// sums of the attention-vector gradients (added in chunk order); the second
// gathers dz per source row through the reverse edges, so no two
// goroutines write one row.
func (f gatAttn) Backward(in [][]float32, _, dy []float32, dIn [][]float32) error {
	z, aSrc, aDst := in[0], in[1], in[2]
	n, d, H, lp, rev := f.bd.N, f.d, f.H, f.gd.loops, f.gd.rev
	dh := d / H
	E := len(lp.Idx)
	alpha, pre := f.st.alpha, f.st.pre
	if len(alpha) != E*H || len(rev) != E {
		return fmt.Errorf("no forward attention recorded for %d edges", E)
	}
	dp := make([]float32, E*H)
	nc := kernels.NumChunks(n)
	part := make([]float64, nc*2*d) // per chunk: [da_src (d); da_dst (d)]
	f.be.ForEachChunk(n, func(ch, lo, hi int) {
		ps := part[ch*2*d : (ch+1)*2*d]
		for u := lo; u < hi; u++ {
			e0, e1 := lp.Ptr[u], lp.Ptr[u+1]
			for h := 0; h < H; h++ {
				c := h * dh
				dyu := dy[u*d+c : u*d+c+dh]
				var s float64
				for e := e0; e < e1; e++ {
					v := int(lp.Idx[e])
					da := rt.Dot32(dyu, z[v*d+c:v*d+c+dh])
					dp[int(e)*H+h] = float32(da)
					s += float64(alpha[int(e)*H+h]) * da
				}
				for e := e0; e < e1; e++ {
					i := int(e)*H + h
					g := float64(alpha[i]) * (float64(dp[i]) - s)
					if pre[i] < 0 {
						g *= GATSlope
					}
					dp[i] = float32(g)
					v := int(lp.Idx[e])
					for j := 0; j < dh; j++ {
						ps[c+j] += g * float64(z[v*d+c+j])
						ps[d+c+j] += g * float64(z[u*d+c+j])
					}
				}
			}
		}
	})
	dz := dIn[0]
	f.be.ForEachChunk(n, func(_, lo, hi int) {
		for v := lo; v < hi; v++ {
			dzv := dz[v*d : (v+1)*d]
			for e := lp.Ptr[v]; e < lp.Ptr[v+1]; e++ {
				u, r := int(lp.Idx[e]), int(rev[e]) // r = edge (u ← v) in row u
				for h := 0; h < H; h++ {
					c := h * dh
					a, gs, gd := alpha[r*H+h], dp[r*H+h], dp[int(e)*H+h]
					for j := 0; j < dh; j++ {
						dzv[c+j] += a*dy[u*d+c+j] + gs*aSrc[c+j] + gd*aDst[c+j]
					}
				}
			}
		}
	})
	sums := rt.SumChunks(part, nc, 2*d)
	for j := 0; j < d; j++ {
		dIn[1][j] = float32(sums[j])
		dIn[2][j] = float32(sums[d+j])
	}
	return nil
}

// devGraph returns the neighbourhoods on the device, which must be the
// batch's.
func (o gatAttn) devGraph() (*deviceGraph, error) {
	dg := o.gd.dev
	if dg == nil {
		return nil, fmt.Errorf("%s: the neighbourhoods are not on the device", o.id)
	}
	if o.gd.n != o.bd.N {
		return nil, fmt.Errorf("%s: neighbourhoods of %d nodes on the device, the batch has %d", o.id, o.gd.n, o.bd.N)
	}
	return dg, nil
}

// ZeroOut implements op.ZeroOut: DeviceForward writes the real rows.
func (gatAttn) ZeroOut() {}

// DeviceForward implements op.DeviceOp: into the zeroed y (op.ZeroOut),
// per node and head the attention over its row and the weighted sum
// (spn_gat_forward, the CPU's order; the C library's exp against Go's),
// keeping α and the pre-activations for the backward pass.
func (o gatAttn) DeviceForward(e *engine.Engine, in []*cuda.Buffer, y *cuda.Buffer) error {
	dg, err := o.devGraph()
	if err != nil {
		return err
	}
	n, E := o.bd.N, len(o.gd.loops.Idx)
	if o.st.devAlpha, err = op.ScratchBuffer(e, E*o.H); err != nil {
		return err
	}
	if o.st.devPre, err = op.ScratchBuffer(e, E*o.H); err != nil {
		return err
	}
	return e.Launch("spn_gat_forward", n*o.H, y, o.st.devAlpha, o.st.devPre, in[0], in[1], in[2], dg.ptr, dg.idx, n, o.H, o.d)
}

// DeviceBackward implements op.DeviceOp: the score gradients per node and
// head (spn_gat_backward_dp), the attention vectors' gradients by chunks
// of rows added in chunk order (spn_gat_backward_vec, spn_sum_chunks),
// and dz per source node over its reverse entries (spn_gat_backward_dz):
// gathers, no atomics.
func (o gatAttn) DeviceBackward(e *engine.Engine, in []*cuda.Buffer, _, dy *cuda.Buffer, dIn []*cuda.Buffer) (err error) {
	dg, err := o.devGraph()
	if err != nil {
		return err
	}
	if o.st.devAlpha == nil || o.st.devPre == nil {
		return fmt.Errorf("%s: no forward attention on the device", o.id)
	}
	n, d, H, E := o.bd.N, o.d, o.H, len(o.gd.loops.Idx)
	nc := kernels.NumChunks(n)
	g, err := e.Scratch64(max(E*H, 1))
	if err != nil {
		return err
	}
	part, err := e.Scratch64(max(2*nc*d, 1))
	if err != nil {
		return err
	}
	psrc, err := part.Slice(0, nc*d)
	if err != nil {
		return err
	}
	pdst, err := part.Slice(nc*d, nc*d)
	if err != nil {
		return err
	}
	dp, err := op.ScratchBuffer(e, E*H)
	if err != nil {
		return err
	}
	z, aSrc, aDst := in[0], in[1], in[2]
	if err := e.Launch("spn_gat_backward_dp", n*H, g, dp, dy, z, o.st.devAlpha, o.st.devPre, dg.ptr, dg.idx, n, H, d); err != nil {
		return err
	}
	if err := e.Launch("spn_gat_backward_vec", nc*2*d, psrc, pdst, g, z, dg.ptr, dg.idx, n, H, d); err != nil {
		return err
	}
	if err := e.Launch("spn_sum_chunks", d, dIn[1], nil, psrc, nc, d, 0, d, d); err != nil {
		return err
	}
	if err := e.Launch("spn_sum_chunks", d, dIn[2], nil, pdst, nc, d, 0, d, d); err != nil {
		return err
	}
	return e.Launch("spn_gat_backward_dz", n*d, dIn[0], dy, o.st.devAlpha, dp, aSrc, aDst, dg.ptr, dg.idx, dg.rev, n, H, d)
}
