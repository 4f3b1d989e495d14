package rt

import (
	"fmt"
	"math"
	"math/rand/v2"

	G "gorgonia.org/gorgonia"

	"github.com/spn-project/spn/models"
	"github.com/spn-project/spn/models/cuda"
	"github.com/spn-project/spn/models/cuda/engine"
	"github.com/spn-project/spn/models/op"
	"github.com/spn-project/spn/models/param"
)

// Gated is GNN-FiLM's gated-sum readout (Brockschmidt, ICML 2020;
// tf-gnn-samples tasks/qm9_task.py, the output the SP-MPNN code's QM9
// model copies):
//
//	out_g = Σ_{v∈g} σ(W_g·[h⁰_v, hᵀ_v] + b_g) ⊙ (W_t·hᵀ_v + b_t)
//
// over the nodes v of graph g, h⁰ the encoder's output and hᵀ the last
// layer's. It is extensive (a sum over the atoms, as U0 or alpha are) and
// its per-node terms start small, so it trains at the paper's lr 1e-3
// where sum pooling of the T + 1 layer readouts does not. GNN-FiLM's gate
// reads the input features x_v: here it reads h⁰_v = Enc(x_v), a learned
// linear map of x_v (d ≥ the feature count), so the gate can express the
// same functions of x_v.
type Gated struct {
	// Gate maps [h⁰_v, hᵀ_v] (2d) to the gate logits (out); Transform maps
	// hᵀ_v (d) to the per-node values (out).
	Gate, Transform *param.Linear
}

// NewGated draws the gated readout's maps of cfg from init (uniform in
// ±1/√in, as a linear layer's), named readout.gate and readout.transform.
func NewGated(cfg models.Config, init *rand.Rand) *Gated {
	d := cfg.Model.Hidden
	return &Gated{
		Gate:      param.NewLinear("readout.gate", 2*d, cfg.Out, init),
		Transform: param.NewLinear("readout.transform", d, cfg.Out, init),
	}
}

// Params returns the gate's and the transform's W and b.
func (g *Gated) Params() []*param.Param {
	return append(g.Gate.Params(), g.Transform.Params()...)
}

// Out implements Output: Apply to h⁰ and hᵀ.
func (g *Gated) Out(s *Step, hs []*G.Node) *G.Node {
	return g.Apply(s.Bdr, s.p, s.Be, s.BD, hs[0], hs[len(hs)-1])
}

// Apply adds out (graphs × out) of the node states h0 and hT to p's graph.
func (g *Gated) Apply(bdr *Builder, p *Program, be Env, bd *BatchData, h0, hT *G.Node) *G.Node {
	if bdr.err != nil {
		return nil
	}
	N, d, c := p.key.N, g.Transform.In, g.Transform.Out
	var cat *G.Node
	if be.Dev != nil {
		// Gorgonia's Concat has no device engine support: the device
		// path concatenates with an op of its own.
		cat = bdr.Op(be, concatCols{id: "readout.gate.concat", N: N, a: d, b: d}, h0, hT)
	} else {
		var err error
		if cat, err = G.Concat(1, h0, hT); err != nil {
			return bdr.Fail(fmt.Errorf("readout.gate: concatenating h⁰ and hᵀ: %w", err))
		}
	}
	z := bdr.Op(be, NewLinear("readout.gate", be, bd, LinearOpts{N: N, In: 2 * d, Out: c}), cat, p.Param(bdr, g.Gate.W), p.Param(bdr, g.Gate.B))
	t := bdr.Op(be, NewLinear("readout.transform", be, bd, LinearOpts{N: N, In: d, Out: c}), hT, p.Param(bdr, g.Transform.W), p.Param(bdr, g.Transform.B))
	return bdr.Op(be, gatedSum{id: "readout.gated_sum", be: be, bd: bd, N: N, G: p.key.G, c: c}, z, t)
}

// gatedSum is y_g = Σ_{v∈g} σ(z_v) ⊙ t_v for node rows z, t (N×c) and the
// graph segments of the batch (graph g owns rows ptr[g]..ptr[g+1]-1; graph
// rows past the batch's graphs are zero). Its gradient:
// dz_v = dy_g ⊙ t_v ⊙ σ(z_v)(1 − σ(z_v)), dt_v = dy_g ⊙ σ(z_v).
type gatedSum struct {
	id      string
	be      Env
	bd      *BatchData
	N, G, c int
}

// Sig implements op.Op.
func (o gatedSum) Sig() op.Sig {
	return op.Sig{ID: o.id, In: [][]int{{o.N, o.c}, {o.N, o.c}}, Out: []int{o.G, o.c}}
}

// sigmoid is σ(x) = 1/(1+e^{−x}) in float64.
func sigmoid(x float32) float64 { return 1 / (1 + math.Exp(-float64(x))) }

// Forward implements op.Op.
func (o gatedSum) Forward(in [][]float32, y []float32) error {
	z, t := in[0], in[1]
	c, ptr := o.c, o.bd.Ptr
	clear(y)
	o.be.ForEachChunk(o.bd.G, func(_, lo, hi int) {
		for g := lo; g < hi; g++ {
			yr := y[g*c : (g+1)*c]
			for r := int(ptr[g]); r < int(ptr[g+1]); r++ {
				for j := range yr {
					yr[j] += float32(sigmoid(z[r*c+j])) * t[r*c+j]
				}
			}
		}
	})
	return nil
}

// Backward implements op.Op.
func (o gatedSum) Backward(in [][]float32, _, dy []float32, dIn [][]float32) error {
	z, t := in[0], in[1]
	dz, dt := dIn[0], dIn[1]
	c, ptr := o.c, o.bd.Ptr
	o.be.ForEachChunk(o.bd.G, func(_, lo, hi int) {
		for g := lo; g < hi; g++ {
			dr := dy[g*c : (g+1)*c]
			for r := int(ptr[g]); r < int(ptr[g+1]); r++ {
				for j, dv := range dr {
					s := sigmoid(z[r*c+j])
					dz[r*c+j] = float32(float64(dv) * float64(t[r*c+j]) * s * (1 - s))
					dt[r*c+j] = float32(float64(dv) * s)
				}
			}
		}
	})
	return nil
}

// ZeroOut implements op.ZeroOut: DeviceForward writes the real graphs'
// rows.
func (gatedSum) ZeroOut() {}

// DeviceForward implements op.DeviceOp: into the zeroed y (op.ZeroOut),
// each graph's terms added in row order (spn_gated_sum; σ in double, as
// on the CPU).
func (o gatedSum) DeviceForward(e *engine.Engine, in []*cuda.Buffer, y *cuda.Buffer) error {
	db, err := o.bd.dev(o.id)
	if err != nil {
		return err
	}
	return e.Launch("spn_gated_sum", o.bd.G*o.c, y, in[0], in[1], db.Ptr, o.bd.G, o.c)
}

// DeviceBackward implements op.DeviceOp (spn_gated_sum_backward; the rows
// of no graph keep the adaptor's zeros).
func (o gatedSum) DeviceBackward(e *engine.Engine, in []*cuda.Buffer, _, dy *cuda.Buffer, dIn []*cuda.Buffer) error {
	db, err := o.bd.dev(o.id)
	if err != nil {
		return err
	}
	return e.Launch("spn_gated_sum_backward", o.bd.G*o.c, dIn[0], dIn[1], in[0], in[1], dy, db.Ptr, o.bd.G, o.c)
}

// concatCols is y = [x_1, x_2] (N×(a+b)) of x_1 (N×a) and x_2 (N×b), the
// gated readout's [h⁰, hᵀ] on the device path (the CPU path uses
// Gorgonia's Concat); its gradient splits dy's columns.
type concatCols struct {
	id      string
	N, a, b int
}

// Sig implements op.Op.
func (o concatCols) Sig() op.Sig {
	return op.Sig{ID: o.id, In: [][]int{{o.N, o.a}, {o.N, o.b}}, Out: []int{o.N, o.a + o.b}}
}

// Forward implements op.Op.
func (o concatCols) Forward(in [][]float32, y []float32) error {
	w := o.a + o.b
	for r := 0; r < o.N; r++ {
		copy(y[r*w:r*w+o.a], in[0][r*o.a:(r+1)*o.a])
		copy(y[r*w+o.a:(r+1)*w], in[1][r*o.b:(r+1)*o.b])
	}
	return nil
}

// Backward implements op.Op.
func (o concatCols) Backward(_ [][]float32, _, dy []float32, dIn [][]float32) error {
	w := o.a + o.b
	for r := 0; r < o.N; r++ {
		copy(dIn[0][r*o.a:(r+1)*o.a], dy[r*w:r*w+o.a])
		copy(dIn[1][r*o.b:(r+1)*o.b], dy[r*w+o.a:(r+1)*w])
	}
	return nil
}

// DeviceForward implements op.DeviceOp: the columns of each input copied
// into place (spn_copy_cols).
func (o concatCols) DeviceForward(e *engine.Engine, in []*cuda.Buffer, y *cuda.Buffer) error {
	w := o.a + o.b
	if err := e.Launch("spn_copy_cols", o.N*o.a, y, in[0], o.N, o.a, w, 0, o.a, 0); err != nil {
		return err
	}
	return e.Launch("spn_copy_cols", o.N*o.b, y, in[1], o.N, o.b, w, o.a, o.b, 0)
}

// DeviceBackward implements op.DeviceOp: dy's columns copied back to each
// input (spn_copy_cols).
func (o concatCols) DeviceBackward(e *engine.Engine, _ []*cuda.Buffer, _, dy *cuda.Buffer, dIn []*cuda.Buffer) error {
	w := o.a + o.b
	if err := e.Launch("spn_copy_cols", o.N*o.a, dIn[0], dy, o.N, o.a, o.a, 0, w, 0); err != nil {
		return err
	}
	return e.Launch("spn_copy_cols", o.N*o.b, dIn[1], dy, o.N, o.b, o.b, 0, w, o.a)
}
