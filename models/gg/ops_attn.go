package gg

import (
	"fmt"
	"math"

	"github.com/spn-project/spn/models/kernels"
	"github.com/spn-project/spn/models/op"
)

// GATSlope is the negative slope of GAT's LeakyReLU.
const GATSlope = 0.2

// gatState is what a GAT attention forward keeps for its backward: the
// attention weights α and the pre-activations, per (edge, head).
type gatState struct {
	alpha, pre []float32
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
	be      env
	bd      *batchData
	gd      *graphData
	H, N, d int
	st      *gatState
}

func newGATAttn(id string, be env, bd *batchData, gd *graphData, heads, N, d int) gatAttn {
	return gatAttn{id: id, be: be, bd: bd, gd: gd, H: heads, N: N, d: d, st: &gatState{}}
}

// Sig implements op.Op.
func (o gatAttn) Sig() op.Sig {
	return op.Sig{ID: o.id, In: [][]int{{o.N, o.d}, {o.H, o.d / o.H}, {o.H, o.d / o.H}}, Out: []int{o.N, o.d}}
}

// Forward implements op.Op.
func (o gatAttn) Forward(in [][]float32, y []float32) error {
	z, aSrc, aDst := in[0], in[1], in[2]
	n, d, H, gd := o.bd.n, o.d, o.H, o.gd
	lp := gd.loops
	if lp.Len() != n {
		return fmt.Errorf("neighbourhoods cover %d nodes, batch has %d", lp.Len(), n)
	}
	dh := d / H
	E := len(lp.Idx)
	o.st.alpha = resize(o.st.alpha, E*H)
	o.st.pre = resize(o.st.pre, E*H)
	alpha, pre := o.st.alpha, o.st.pre
	clear(y)
	o.be.ForEachChunk(n, func(_, lo, hi int) {
		for u := lo; u < hi; u++ {
			e0, e1 := lp.Ptr[u], lp.Ptr[u+1]
			for h := 0; h < H; h++ {
				c := h * dh
				sd := dot32(aDst[c:c+dh], z[u*d+c:u*d+c+dh])
				m := math.Inf(-1)
				for e := e0; e < e1; e++ {
					v := int(lp.Idx[e])
					p := sd + dot32(aSrc[c:c+dh], z[v*d+c:v*d+c+dh])
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
	n, d, H, lp, rev := f.bd.n, f.d, f.H, f.gd.loops, f.gd.rev
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
					da := dot32(dyu, z[v*d+c:v*d+c+dh])
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
	sums := sumChunks(part, nc, 2*d)
	for j := 0; j < d; j++ {
		dIn[1][j] = float32(sums[j])
		dIn[2][j] = float32(sums[d+j])
	}
	return nil
}

// attnState is what a graph attention forward keeps for its backward: the
// attention probabilities of every graph, head and query row.
type attnState struct {
	p []float32
}

// graphAttnOp is Graphormer's multi-head self-attention with spatial bias,
// block-diagonal over the batch, for inputs q, k, v (N×d) and bias (B×H):
// for nodes u, w of the same graph and head h (columns h·d/H.. of q, k, v),
//
//	s_uw = ⟨q_u^h, k_w^h⟩/√(d/H) + bias[bucket(u,w), h]
//	P_uw = softmax_w(s_uw),   y_u^h = Σ_w P_uw v_w^h
//
// with the distance buckets of graphData. Every (graph, head) block is
// computed by one goroutine with two GEMMs over strided views of q, k, v
// (no reduction across goroutines), so the result does not depend on the
// thread count. P (Σ_j n_j² × H values) is kept for the backward.
type graphAttn struct {
	id         string
	be         env
	bd         *batchData
	gd         *graphData
	H, B, N, d int
	st         *attnState
}

func newGraphAttn(id string, be env, bd *batchData, gd *graphData, heads, buckets, N, d int) graphAttn {
	return graphAttn{id: id, be: be, bd: bd, gd: gd, H: heads, B: buckets, N: N, d: d, st: &attnState{}}
}

// Sig implements op.Op.
func (o graphAttn) Sig() op.Sig {
	nd := []int{o.N, o.d}
	return op.Sig{ID: o.id, In: [][]int{nd, nd, nd, {o.B, o.H}}, Out: nd}
}

// block returns the graph and head of task t (t = j·H + h), the offset of
// its n_j×n_j probability block in P, its first node and n_j.
func (o graphAttn) block(t int) (j, h, off, p0, nj int) {
	gd := o.gd
	j, h = t/o.H, t%o.H
	p0 = int(gd.ptr[j])
	nj = int(gd.ptr[j+1]) - p0
	return j, h, gd.boff[j]*o.H + h*nj*nj, p0, nj
}

func (o graphAttn) check(n int) error {
	gd := o.gd
	if len(gd.gof) != n || len(gd.boff) != o.bd.g+1 || len(gd.ptr) != o.bd.g+1 || gd.n != n {
		return fmt.Errorf("distance buckets do not cover the batch's %d nodes", n)
	}
	return nil
}

// forEachTask runs f on every (graph, head) task in parallel: every task
// is one fixed chunk of the backend (ChunkRows rows per chunk), so each
// task is computed by one goroutine whatever the thread count.
func forEachTask(be env, tasks int, f func(t int)) {
	be.ForEachChunk(tasks*kernels.ChunkRows, func(ch, _, _ int) { f(ch) })
}

// Forward implements op.Op: per graph j and head h, S = Q_j K_jᵀ/√(d/H) +
// bias (one GEMM), row softmax into P, Y_j = P V_j (one GEMM), where Q_j is
// the strided n_j × d/H block of q (no copies).
func (o graphAttn) Forward(in [][]float32, y []float32) error {
	q, k, v, bias := in[0], in[1], in[2], in[3]
	n, d, H, gd := o.bd.n, o.d, o.H, o.gd
	if err := o.check(n); err != nil {
		return err
	}
	dh := d / H
	scale := float32(1 / math.Sqrt(float64(dh)))
	o.st.p = resize(o.st.p, gd.boff[len(gd.boff)-1]*H)
	P := o.st.p
	clear(y)
	forEachTask(o.be, o.bd.g*H, func(t int) {
		j, h, off, p0, nj := o.block(t)
		if nj == 0 {
			return
		}
		c := h * dh
		S := P[off : off+nj*nj]
		o.be.Gemm(false, true, nj, nj, dh, scale, q[p0*d+c:], d, k[p0*d+c:], d, 0, S, nj)
		bk := gd.bucket[gd.boff[j] : gd.boff[j]+nj*nj]
		for i := 0; i < nj; i++ {
			row, br := S[i*nj:(i+1)*nj], bk[i*nj:(i+1)*nj]
			m := float32(math.Inf(-1))
			for w := range row {
				row[w] += bias[int(br[w])*H+h]
				m = max(m, row[w])
			}
			var sum float64
			for w, x := range row {
				e := math.Exp(float64(x - m))
				row[w] = float32(e)
				sum += e
			}
			inv := float32(1 / sum)
			for w := range row {
				row[w] *= inv
			}
		}
		o.be.Gemm(false, false, nj, dh, nj, 1, S, nj, v[p0*d+c:], d, 0, y[p0*d+c:], d)
	})
	return nil
}

// Backward implements op.Op: with dP_uw = ⟨dy_u^h, v_w^h⟩ and dS_uw = P_uw(dP_uw − Σ_x P_ux dP_ux),
//
//	dq_u^h = Σ_w dS_uw k_w^h/√(d/H),  dk_w^h = Σ_u dS_uw q_u^h/√(d/H),
//	dv_w^h = Σ_u P_uw dy_u^h,         dbias[b,h] = Σ_{bucket(u,w)=b} dS_uw.
//
// Per (graph, head) task: four GEMMs (dP = dY Vᵀ, dQ = dS K, dK = dSᵀ Q,
// dV = Pᵀ dY) into disjoint blocks of the outputs, and a per-task partial
// of dbias; the partials are added in task order.
func (f graphAttn) Backward(in [][]float32, _, dy []float32, dIn [][]float32) error {
	q, k, v := in[0], in[1], in[2]
	n, d, H, B, gd := f.bd.n, f.d, f.H, f.B, f.gd
	if err := f.check(n); err != nil {
		return err
	}
	P := f.st.p
	if len(P) != gd.boff[len(gd.boff)-1]*H {
		return fmt.Errorf("no forward attention recorded")
	}
	dh := d / H
	scale := float32(1 / math.Sqrt(float64(dh)))
	dq, dk, dv := dIn[0], dIn[1], dIn[2]
	dS := f.be.buf(len(P)) // every block is overwritten by its first GEMM
	tasks := f.bd.g * H
	part := make([]float64, tasks*B)
	forEachTask(f.be, tasks, func(t int) {
		j, h, off, p0, nj := f.block(t)
		if nj == 0 {
			return
		}
		c := h * dh
		pr, sr := P[off:off+nj*nj], dS[off:off+nj*nj]
		f.be.Gemm(false, true, nj, nj, dh, 1, dy[p0*d+c:], d, v[p0*d+c:], d, 0, sr, nj)
		bk := gd.bucket[gd.boff[j] : gd.boff[j]+nj*nj]
		pb := part[t*B : (t+1)*B]
		for i := 0; i < nj; i++ {
			prow, srow, br := pr[i*nj:(i+1)*nj], sr[i*nj:(i+1)*nj], bk[i*nj:(i+1)*nj]
			var s float64
			for w, x := range srow {
				s += float64(prow[w]) * float64(x)
			}
			for w := range srow {
				g := float64(prow[w]) * (float64(srow[w]) - s)
				srow[w] = float32(g)
				pb[br[w]] += g
			}
		}
		f.be.Gemm(false, false, nj, dh, nj, scale, sr, nj, k[p0*d+c:], d, 0, dq[p0*d+c:], d)
		f.be.Gemm(true, false, nj, dh, nj, scale, sr, nj, q[p0*d+c:], d, 0, dk[p0*d+c:], d)
		f.be.Gemm(true, false, nj, dh, nj, 1, pr, nj, dy[p0*d+c:], d, 0, dv[p0*d+c:], d)
	})
	db := make([]float64, B*H)
	for t := 0; t < tasks; t++ {
		h := t % H
		for b, x := range part[t*B : (t+1)*B] {
			db[b*H+h] += x
		}
	}
	for i, x := range db {
		dIn[3][i] = float32(x)
	}
	return nil
}

// dot32 returns ⟨a, b⟩ accumulated in float64.
func dot32(a, b []float32) float64 {
	var s float64
	for i, x := range a {
		s += float64(x) * float64(b[i])
	}
	return s
}

// sumChunks adds the nc per-chunk partial vectors of width w in part, in
// chunk order (the fixed-order reduction that makes results independent of
// the thread count).
func sumChunks(part []float64, nc, w int) []float64 {
	s := make([]float64, w)
	for ch := 0; ch < nc; ch++ {
		for i, x := range part[ch*w : (ch+1)*w] {
			s[i] += x
		}
	}
	return s
}
