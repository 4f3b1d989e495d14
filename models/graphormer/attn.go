package graphormer

import (
	"fmt"
	"math"

	"github.com/spn-project/spn/models/kernels"
	"github.com/spn-project/spn/models/op"
	"github.com/spn-project/spn/models/rt"
)

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
	be         rt.Env
	bd         *rt.BatchData
	gd         *graphData
	H, B, N, d int
	st         *attnState
}

// attnShape is the shape of a newGraphAttn op: Heads attention heads with
// Buckets learnt biases each (one per distance bucket) over N padded node
// rows of width D (D/Heads per head).
type attnShape struct {
	Heads, Buckets, N, D int
}

func newGraphAttn(id string, be rt.Env, bd *rt.BatchData, gd *graphData, s attnShape) graphAttn {
	return graphAttn{id: id, be: be, bd: bd, gd: gd, H: s.Heads, B: s.Buckets, N: s.N, d: s.D, st: &attnState{}}
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
	if len(gd.gof) != n || len(gd.boff) != o.bd.G+1 || len(gd.ptr) != o.bd.G+1 || gd.n != n {
		return fmt.Errorf("distance buckets do not cover the batch's %d nodes", n)
	}
	return nil
}

// forEachTask runs f on every (graph, head) task in parallel: every task
// is one fixed chunk of the backend (ChunkRows rows per chunk), so each
// task is computed by one goroutine whatever the thread count.
func forEachTask(be rt.Env, tasks int, f func(t int)) {
	be.ForEachChunk(tasks*kernels.ChunkRows, func(ch, _, _ int) { f(ch) })
}

// Forward implements op.Op: per graph j and head h, S = Q_j K_jᵀ/√(d/H) +
// bias (one GEMM), row softmax into P, Y_j = P V_j (one GEMM), where Q_j is
// the strided n_j × d/H block of q (no copies).
func (o graphAttn) Forward(in [][]float32, y []float32) error {
	q, k, v, bias := in[0], in[1], in[2], in[3]
	n, d, H, gd := o.bd.N, o.d, o.H, o.gd
	if err := o.check(n); err != nil {
		return err
	}
	dh := d / H
	scale := float32(1 / math.Sqrt(float64(dh)))
	o.st.p = rt.Resize(o.st.p, gd.boff[len(gd.boff)-1]*H)
	P := o.st.p
	clear(y)
	forEachTask(o.be, o.bd.G*H, func(t int) {
		j, h, off, p0, nj := o.block(t)
		if nj == 0 {
			return
		}
		c := h * dh
		S := P[off : off+nj*nj]
		o.be.Gemm(kernels.GemmArgs{TB: true, M: nj, N: nj, K: dh, Alpha: scale, A: q[p0*d+c:], LdA: d, B: k[p0*d+c:], LdB: d, C: S, LdC: nj})
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
		o.be.Gemm(kernels.GemmArgs{M: nj, N: dh, K: nj, Alpha: 1, A: S, LdA: nj, B: v[p0*d+c:], LdB: d, C: y[p0*d+c:], LdC: d})
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
	n, d, H, B, gd := f.bd.N, f.d, f.H, f.B, f.gd
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
	dS := f.be.Buf(len(P)) // every block is overwritten by its first GEMM
	tasks := f.bd.G * H
	part := make([]float64, tasks*B)
	forEachTask(f.be, tasks, func(t int) {
		j, h, off, p0, nj := f.block(t)
		if nj == 0 {
			return
		}
		c := h * dh
		pr, sr := P[off:off+nj*nj], dS[off:off+nj*nj]
		f.be.Gemm(kernels.GemmArgs{TB: true, M: nj, N: nj, K: dh, Alpha: 1, A: dy[p0*d+c:], LdA: d, B: v[p0*d+c:], LdB: d, C: sr, LdC: nj})
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
		f.be.Gemm(kernels.GemmArgs{M: nj, N: dh, K: nj, Alpha: scale, A: sr, LdA: nj, B: k[p0*d+c:], LdB: d, C: dq[p0*d+c:], LdC: d})
		f.be.Gemm(kernels.GemmArgs{TA: true, M: nj, N: dh, K: nj, Alpha: scale, A: sr, LdA: nj, B: q[p0*d+c:], LdB: d, C: dk[p0*d+c:], LdC: d})
		f.be.Gemm(kernels.GemmArgs{TA: true, M: nj, N: dh, K: nj, Alpha: 1, A: pr, LdA: nj, B: dy[p0*d+c:], LdB: d, C: dv[p0*d+c:], LdC: d})
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
