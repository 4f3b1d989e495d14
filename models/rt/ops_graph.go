package rt

import (
	"fmt"

	"github.com/spn-project/spn/models"
	"github.com/spn-project/spn/models/cuda"
	"github.com/spn-project/spn/models/cuda/engine"
	"github.com/spn-project/spn/models/kernels"
	"github.com/spn-project/spn/models/op"
)

// pool reduces node rows x (N×d) to graph rows (G×d) over the segments of
// a batch (graph j owns rows ptr[j]..ptr[j+1]-1): sum, mean or max, an
// empty graph pooling to zeros. Its gradient spreads dy over each graph's
// rows (sum), divided by its size (mean), or routes it to the first
// arg-max row (max).
type pool struct {
	id      string
	be      Env
	bd      *BatchData
	kind    string
	N, G, d int
}

// poolOpts are the pooling of a newPool op (models.PoolSum, PoolMean or
// PoolMax) and its shape: N padded node rows pooled into G padded graph
// rows of width D.
type poolOpts struct {
	Kind    string
	N, G, D int
}

func newPool(id string, be Env, bd *BatchData, o poolOpts) (pool, error) {
	kind := o.Kind
	switch kind {
	case models.PoolSum, models.PoolMean, models.PoolMax:
	default:
		return pool{}, fmt.Errorf("%s: unknown pooling %q (want sum, mean or max)", id, kind)
	}
	return pool{id: id + "." + kind, be: be, bd: bd, kind: kind, N: o.N, G: o.G, d: o.D}, nil
}

// Sig implements op.Op.
func (o pool) Sig() op.Sig { return op.Sig{ID: o.id, In: [][]int{{o.N, o.d}}, Out: []int{o.G, o.d}} }

// Forward implements op.Op.
func (o pool) Forward(in [][]float32, y []float32) error {
	x := in[0]
	d, ptr := o.d, o.bd.Ptr
	clear(y)
	o.be.ForEachChunk(o.bd.G, func(_, lo, hi int) {
		for gi := lo; gi < hi; gi++ {
			yr := y[gi*d : (gi+1)*d]
			a, b := int(ptr[gi]), int(ptr[gi+1])
			if a == b {
				continue
			}
			if o.kind == models.PoolMax {
				copy(yr, x[a*d:(a+1)*d])
				for r := a + 1; r < b; r++ {
					for j, v := range x[r*d : (r+1)*d] {
						if v > yr[j] {
							yr[j] = v
						}
					}
				}
				continue
			}
			kernels.RowSum(yr, x[a*d:b*d], b-a, d)
			if o.kind == models.PoolMean {
				inv := 1 / float32(b-a)
				for j := range yr {
					yr[j] *= inv
				}
			}
		}
	})
	return nil
}

// Backward implements op.Op (x locates the max).
func (o pool) Backward(in [][]float32, _, dy []float32, dIn [][]float32) error {
	x, dx := in[0], dIn[0]
	d, ptr := o.d, o.bd.Ptr
	o.be.ForEachChunk(o.bd.G, func(_, lo, hi int) {
		for gi := lo; gi < hi; gi++ {
			a, b := int(ptr[gi]), int(ptr[gi+1])
			if a == b {
				continue
			}
			dr := dy[gi*d : (gi+1)*d]
			if o.kind == models.PoolMax {
				for j := 0; j < d; j++ {
					best, arg := x[a*d+j], a
					for r := a + 1; r < b; r++ {
						if v := x[r*d+j]; v > best {
							best, arg = v, r
						}
					}
					dx[arg*d+j] = dr[j]
				}
				continue
			}
			if o.kind == models.PoolSum {
				for r := a; r < b; r++ {
					copy(dx[r*d:(r+1)*d], dr) // dr·1
				}
				continue
			}
			scale := 1 / float32(b-a)
			for r := a; r < b; r++ {
				xr := dx[r*d : (r+1)*d]
				for j := range xr {
					xr[j] = dr[j] * scale
				}
			}
		}
	})
	return nil
}

// ZeroOut implements op.ZeroOut: DeviceForward writes the real graphs'
// rows.
func (pool) ZeroOut() {}

// DeviceForward implements op.DeviceOp: the graphs' rows added in order
// (spn_pool: sum, or mean with 1/|g|) or their column maxima
// (spn_pool_max) into the real graphs' rows of the zeroed y (op.ZeroOut):
// the CPU's bits.
func (o pool) DeviceForward(e *engine.Engine, in []*cuda.Buffer, y *cuda.Buffer) error {
	return o.deviceForwardMany(e, in[:1], y)
}

// deviceForwardMany pools each of the node states xs into its block of
// y (len(xs) × graphs × d, the real graphs' rows), kern.ReadoutGroup
// states a launch.
func (o pool) deviceForwardMany(e *engine.Engine, xs []*cuda.Buffer, y *cuda.Buffer) error {
	db, err := o.bd.dev(o.id)
	if err != nil {
		return err
	}
	size := o.bd.G * o.d
	return engine.ForGroups(len(xs), func(k0, count int) error {
		yg, err := y.Slice(k0*size, count*size)
		if err != nil {
			return err
		}
		args := append([]any{yg}, engine.GroupArgs(xs[k0:k0+count])...)
		args = append(args, db.Ptr, o.bd.G, o.d)
		switch o.kind {
		case models.PoolMax:
			return e.Launch("spn_pool_max", count*size, append(args, count)...)
		case models.PoolMean:
			return e.Launch("spn_pool", count*size, append(args, 1, count)...)
		}
		return e.Launch("spn_pool", count*size, append(args, 0, count)...)
	})
}

// DeviceBackward implements op.DeviceOp: dy spread over each graph's
// rows (spn_pool_backward: sum, or mean with 1/|g|) or routed to the
// first arg-max row of each column (spn_pool_max_backward); the other
// rows keep the adaptor's zeros.
func (o pool) DeviceBackward(e *engine.Engine, in []*cuda.Buffer, _, dy *cuda.Buffer, dIn []*cuda.Buffer) error {
	return o.deviceBackwardMany(e, in[:1], dy, dIn[:1])
}

// deviceBackwardMany spreads each block of dy (len(xs) × graphs × d)
// over the rows of its dxs, the node states' gradients (max pooling
// locates the maxima in xs), kern.ReadoutGroup states a launch.
func (o pool) deviceBackwardMany(e *engine.Engine, xs []*cuda.Buffer, dy *cuda.Buffer, dxs []*cuda.Buffer) error {
	db, err := o.bd.dev(o.id)
	if err != nil {
		return err
	}
	size := o.bd.G * o.d
	return engine.ForGroups(len(xs), func(k0, count int) error {
		dg, err := dy.Slice(k0*size, count*size)
		if err != nil {
			return err
		}
		args := append(engine.GroupArgs(dxs[k0:k0+count]), dg)
		switch o.kind {
		case models.PoolMax:
			args = append(args, engine.GroupArgs(xs[k0:k0+count])...)
			return e.Launch("spn_pool_max_backward", count*size, append(args, db.Ptr, o.bd.G, o.d, count)...)
		case models.PoolMean:
			return e.Launch("spn_pool_backward", count*size, append(args, db.Ptr, o.bd.G, o.d, 1, count)...)
		}
		return e.Launch("spn_pool_backward", count*size, append(args, db.Ptr, o.bd.G, o.d, 0, count)...)
	})
}

// dropout is inverted dropout as y = x ⊙ mask, where the mask (an input
// that gets no gradient) holds 0 for a dropped entry and 1/(1−p) for a kept
// one; its backward is dx = dy ⊙ mask, so the 1/(1−p) scaling is applied in
// both directions (Gorgonia's own Dropout divides by p in its backward).
type dropout struct {
	id    string
	shape []int
}

func newDropout(id string, shape ...int) dropout { return dropout{id: id, shape: shape} }

// Sig implements op.Op: the mask is data.
func (o dropout) Sig() op.Sig {
	return op.Sig{ID: o.id, In: [][]int{o.shape, o.shape}, Out: o.shape, Diff: []bool{true, false}}
}

// Forward implements op.Op.
func (o dropout) Forward(in [][]float32, y []float32) error {
	for i, v := range in[0] {
		y[i] = v * in[1][i]
	}
	return nil
}

// Backward implements op.Op.
func (o dropout) Backward(in [][]float32, _, dy []float32, dIn [][]float32) error {
	for i, v := range dy {
		dIn[0][i] = v * in[1][i]
	}
	return nil
}

// crossEntropy is the mean softmax cross-entropy of the logits (G×c) of
// the batch's g graphs with their classes, as a float32 scalar (computed in
// float64); its gradient is dlogits = dL·(softmax − onehot(y))/g, zero in
// the padding rows.
type crossEntropy struct {
	id   string
	bd   *BatchData
	G, c int
}

func newCrossEntropy(id string, bd *BatchData, G, c int) crossEntropy {
	return crossEntropy{id: id, bd: bd, G: G, c: c}
}

// Sig implements op.Op.
func (o crossEntropy) Sig() op.Sig { return op.Sig{ID: o.id, In: [][]int{{o.G, o.c}}} }

// Forward implements op.Op.
func (o crossEntropy) Forward(in [][]float32, out []float32) error {
	out[0] = float32(kernels.CrossEntropy(nil, 0, in[0], o.bd.Y, o.bd.G, o.c))
	return nil
}

// Backward implements op.Op.
func (o crossEntropy) Backward(in [][]float32, _, dL []float32, dIn [][]float32) error {
	kernels.CrossEntropy(dIn[0], float64(dL[0]), in[0], o.bd.Y, o.bd.G, o.c)
	return nil
}

// DeviceForward implements op.DeviceOp: one term per graph
// (spn_cross_entropy) added in order (spn_mean_loss), in double.
func (o crossEntropy) DeviceForward(e *engine.Engine, in []*cuda.Buffer, out *cuda.Buffer) error {
	return o.device(e, in[0], out, nil, nil)
}

// DeviceBackward implements op.DeviceOp: dlogits = dL·(softmax −
// onehot(y))/g on the real rows (spn_cross_entropy), the padding rows
// keeping the adaptor's zeros.
func (o crossEntropy) DeviceBackward(e *engine.Engine, in []*cuda.Buffer, _, dL *cuda.Buffer, dIn []*cuda.Buffer) error {
	return o.device(e, in[0], nil, dIn[0], dL)
}

// device computes the loss into out (when not nil) or the gradient into
// dz scaled by dL.
func (o crossEntropy) device(e *engine.Engine, logits, out, dz, dL *cuda.Buffer) error {
	db, err := o.bd.dev(o.id)
	if err != nil {
		return err
	}
	if db.Y == nil {
		return fmt.Errorf("%s: the batch on the device has no classes", o.id)
	}
	part, err := e.Scratch64(o.bd.G)
	if err != nil {
		return err
	}
	err = e.Launch("spn_cross_entropy", o.bd.G, part, dz, logits, db.Y, dL, o.bd.G, o.c)
	if err == nil && out != nil {
		err = e.Launch("spn_mean_loss", 1, out, part, o.bd.G)
	}
	return err
}

// mse is the mean squared error of the predictions (G×t) of the batch's g
// graphs against their targets over the labelled ones (a NaN target is a
// missing label, skipped: kernels.MSE), a float32 scalar computed in
// float64; its gradient is dpred = dL·2(pred − target)/labelled, zero at
// the missing labels and in the padding rows.
type mse struct {
	id   string
	bd   *BatchData
	G, t int
}

func newMSE(id string, bd *BatchData, G, t int) mse { return mse{id: id, bd: bd, G: G, t: t} }

// Sig implements op.Op.
func (o mse) Sig() op.Sig { return op.Sig{ID: o.id, In: [][]int{{o.G, o.t}}} }

// Forward implements op.Op.
func (o mse) Forward(in [][]float32, out []float32) error {
	out[0] = float32(kernels.MSE(nil, 0, in[0], o.bd.Target[:o.bd.G*o.t]))
	return nil
}

// Backward implements op.Op.
func (o mse) Backward(in [][]float32, _, dL []float32, dIn [][]float32) error {
	kernels.MSE(dIn[0], float64(dL[0]), in[0], o.bd.Target[:o.bd.G*o.t])
	return nil
}

// DeviceForward implements op.DeviceOp: one squared difference per
// labelled value, 0 per missing one (spn_squared_error), added in order
// and divided by the labelled count (spn_bce_loss), in double: the CPU's
// bits.
func (o mse) DeviceForward(e *engine.Engine, in []*cuda.Buffer, out *cuda.Buffer) error {
	return o.device(e, in[0], out, nil, nil)
}

// DeviceBackward implements op.DeviceOp: dpred = dL·2(pred − target)/labelled
// on the labelled values of the real rows, 0 at the missing labels
// (spn_squared_error), the padding rows keeping the adaptor's zeros.
func (o mse) DeviceBackward(e *engine.Engine, in []*cuda.Buffer, _, dL *cuda.Buffer, dIn []*cuda.Buffer) error {
	return o.device(e, in[0], nil, dIn[0], dL)
}

// device computes the loss into out (when not nil) or the gradient into
// dz scaled by dL. The labelled count comes from the host's targets.
func (o mse) device(e *engine.Engine, pred, out, dz, dL *cuda.Buffer) error {
	db, err := o.bd.dev(o.id)
	if err != nil {
		return err
	}
	m := o.bd.G * o.t
	if db.Target == nil || db.Target.Len() < m {
		return fmt.Errorf("%s: the batch on the device has no targets for %d graphs × %d outputs", o.id, o.bd.G, o.t)
	}
	if len(o.bd.Target) < m {
		return fmt.Errorf("%s: the batch has %d targets, want %d graphs × %d outputs", o.id, len(o.bd.Target), o.bd.G, o.t)
	}
	labelled := kernels.Labelled(o.bd.Target[:m])
	part, err := e.Scratch64(m)
	if err != nil {
		return err
	}
	err = e.Launch("spn_squared_error", m, part, dz, pred, db.Target, dL, m, labelled)
	if err == nil && out != nil {
		err = e.Launch("spn_bce_loss", 1, out, part, m, labelled)
	}
	return err
}

// newDot is ⟨x, s⟩ over tensors of the given shape (op.Dot).
func newDot(id string, shape ...int) op.Dot { return op.Dot{ID: id, Shape: shape} }

// DeviceForward implements op.DeviceOp: y = x ⊙ mask (spn_mul).
func (o dropout) DeviceForward(e *engine.Engine, in []*cuda.Buffer, y *cuda.Buffer) error {
	n := op.Size(o.shape)
	return e.Launch("spn_mul", n, y, in[0], in[1], n)
}

// DeviceBackward implements op.DeviceOp: dx = dy ⊙ mask (spn_mul).
func (o dropout) DeviceBackward(e *engine.Engine, in []*cuda.Buffer, _, dy *cuda.Buffer, dIn []*cuda.Buffer) error {
	n := op.Size(o.shape)
	return e.Launch("spn_mul", n, dIn[0], dy, in[1], n)
}
