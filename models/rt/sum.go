package rt

import (
	"fmt"

	G "gorgonia.org/gorgonia"

	"github.com/spn-project/spn/models/cuda"
	"github.com/spn-project/spn/models/cuda/engine"
	"github.com/spn-project/spn/models/op"
)

// sumOp is y = a + b over two values of one shape (a residual, or a
// layer's input plus its aggregation), its output from the arena like
// every op's. Gorgonia's Add allocates its sum outside the arena at
// every run, and a compiled graph keeps it bound to its node
// until it runs again, so a cache of graphs holds one per graph and Add.
// The bits are Gorgonia's: a + b elementwise (on the device the engine's
// Add, spn_bias_relu over one row). Its gradient: da = db = dy.
type sumOp struct {
	id    string
	shape []int
}

// Sig implements op.Op.
func (o sumOp) Sig() op.Sig {
	return op.Sig{ID: o.id, In: [][]int{o.shape, o.shape}, Out: o.shape, Sets: true}
}

// Forward implements op.Op.
func (sumOp) Forward(in [][]float32, y []float32) error {
	a, b := in[0][:len(y)], in[1][:len(y)]
	for i := range y {
		y[i] = a[i] + b[i]
	}
	return nil
}

// Backward implements op.Op.
func (sumOp) Backward(_ [][]float32, _, dy []float32, dIn [][]float32) error {
	copy(dIn[0], dy)
	copy(dIn[1], dy)
	return nil
}

// DeviceForward implements op.DeviceOp: spn_bias_relu over one row of
// all the values without ReLU, as the engine's Add.
func (o sumOp) DeviceForward(e *engine.Engine, in []*cuda.Buffer, y *cuda.Buffer) error {
	n := op.Size(o.shape)
	return e.Launch("spn_bias_relu", n, y, in[0], in[1], 1, n, 0)
}

// DeviceBackward implements op.DeviceOp: dy copied to the gradients
// asked for (spn_copy_cols over one row).
func (o sumOp) DeviceBackward(e *engine.Engine, _ []*cuda.Buffer, _, dy *cuda.Buffer, dIn []*cuda.Buffer) error {
	n := op.Size(o.shape)
	for _, d := range dIn[:2] {
		if d == nil {
			continue
		}
		if err := e.Launch("spn_copy_cols", n, d, dy, 1, n, n, 0, n, 0); err != nil {
			return err
		}
	}
	return nil
}

// Add returns x + y (of one shape) as an op of the step's graph, its
// sum in the arena (sumOp); id is the op's id (its node's name).
func (s *Step) Add(x, y *G.Node, id string) *G.Node {
	if s.Bdr.Err() != nil {
		return nil
	}
	if x == nil || y == nil {
		return s.Bdr.Fail(fmt.Errorf("building %s: an input is missing", id))
	}
	return s.Op(sumOp{id: id, shape: []int(x.Shape().Clone())}, x, y)
}
