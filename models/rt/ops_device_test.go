package rt

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/spn-project/spn/internal/testkit/kerntest"
	"github.com/spn-project/spn/models"
	"github.com/spn-project/spn/models/cuda"
	"github.com/spn-project/spn/models/cuda/engine"
	"github.com/spn-project/spn/models/internal/testkit/enginetest"
	"github.com/spn-project/spn/models/internal/testkit/modeltest"
	"github.com/spn-project/spn/models/internal/testkit/optest"
	"github.com/spn-project/spn/models/kernels"
	"github.com/spn-project/spn/models/op"
)

// TestOpsOnDevice runs the ops that have device math on the emulated
// device and on the CPU (optest.CheckDevice): outputs and gradients.
// The hop softmax computes in double on both (the C library's exp
// against Go's: 1e-6 relative); the linear map's products are cuBLAS's
// against the CPU's GEMM, in other orders (1e-5 relative, and 1e-4
// absolute for dW's sums over 300 rows); dropout is one float32 product
// per value (the same bits); sum and mean pooling add the graphs' rows
// in the CPU's order and max pooling compares them in it (the same
// bits); the cross-entropy computes in
// double on both (exp and log again: 1e-5 relative); the squared error
// of three targets per graph adds its terms in double in the CPU's order
// (the same bits), also with some targets missing (NaN: skipped); the layer norm computes its row statistics and column
// sums in double in the CPU's order (the same bits); the gated sum takes σ in double (exp again: 1e-6
// relative) and the concatenation copies (the same bits). The linear map's padding rows are zero and
// its padding inputs ignored on both (its output and dx are compared
// whole).
func TestOpsOnDevice(t *testing.T) { opsOnDevice(t, enginetest.Emulated(t)) }

// TestGPUOpsOnDevice is TestOpsOnDevice on GPU 0 (it skips without one).
func TestGPUOpsOnDevice(t *testing.T) { opsOnDevice(t, enginetest.GPU(t)) }

func opsOnDevice(t *testing.T, e *engine.Engine) {
	rng := rand.New(rand.NewPCG(3, 4))
	const k, g, c = 5, 16, 3
	mask := make([]float32, g*c)
	for i := range mask {
		if rng.Float64() >= 0.3 {
			mask[i] = 1 / 0.7
		}
	}
	const n, N, d, out = 300, 320, 5, 3 // three row chunks; padding rows hold random values
	// Five graphs (one empty) in graph-level tensors of 16 rows.
	const numLabels, attrD = 6, 2
	labels := make([]int32, n)
	for i := range labels {
		labels[i] = int32(rng.IntN(numLabels - 1)) // the last label unused: its gradient stays zero
	}
	bd := &BatchData{N: n, G: 5, Ptr: []int32{0, 10, 10, 57, 200, 300}, Y: []int32{0, 2, 1, 2, 1},
		Labels: labels, Attrs: modeltest.RandFloats(rng, n*attrD, 1)}
	bd.Target = make([]float64, 5*c) // three regression targets per graph
	for i := range bd.Target {
		bd.Target[i] = rng.NormFloat64()
	}
	dev, err := UploadBatch(e, bd)
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Free()
	bd.Dev = dev
	// The same batch with some targets missing (NaN): the squared error
	// skips them.
	bdMiss := *bd
	bdMiss.Target = slices.Clone(bd.Target)
	for _, i := range []int{1, 5, 6, 7, 12} {
		bdMiss.Target[i] = math.NaN()
	}
	devMiss, err := UploadBatch(e, &bdMiss)
	if err != nil {
		t.Fatal(err)
	}
	defer devMiss.Free()
	bdMiss.Dev = devMiss
	be := Env{Backend: kernels.CPU{Threads: 1}}
	pool := func(kind string) pool {
		p, err := newPool("readout0.pool", be, bd, poolOpts{Kind: kind, N: N, G: g, D: d})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	newBN := func(seed float64) *bnStats {
		st := &bnStats{Momentum: 0.1, Eps: 1e-5}
		for j := 0; j < d; j++ {
			st.RunMean = append(st.RunMean, seed*float64(j-2))
			st.RunVar = append(st.RunVar, 1+seed*float64(j))
		}
		dv, err := uploadBN(e, st)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { dv.Free() })
		st.Dev = dv
		return st
	}
	bnIn := func() [][]float32 {
		return [][]float32{modeltest.RandFloats(rng, N*d, 1), modeltest.RandFloats(rng, d, 1), modeltest.RandFloats(rng, d, 0.5)}
	}
	// An MLP with its running statistics on the device; each case has its
	// own (a training-mode case moves the CPU's and the device's
	// statistics by different numbers of forward passes).
	newMLP := func() *MLP {
		mlp := NewMLP("layer1", d, rng)
		for _, st := range []*bnStats{mlp.st1, mlp.st2} {
			dv, err := uploadBN(e, st)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { dv.Free() })
			st.Dev = dv
		}
		return &mlp
	}
	mlpIn := func() [][]float32 {
		in := [][]float32{modeltest.RandFloats(rng, N*d, 1)}
		for range 2 {
			in = append(in, modeltest.RandFloats(rng, d*d, 0.5), modeltest.RandFloats(rng, d, 0.5),
				modeltest.RandFloats(rng, d, 1), modeltest.RandFloats(rng, d, 0.5))
		}
		return in
	}
	for _, tc := range []struct {
		name     string
		op       optest.Both
		in       [][]float32
		abs, rel float64
	}{
		{"softmax", NewSoftmax("alpha", k).(softmax), [][]float32{modeltest.RandFloats(rng, k, 1)}, 1e-7, 1e-6},
		{"linear", NewLinear("lin", be, bd, LinearOpts{N: N, In: d, Out: out}).(linear),
			[][]float32{modeltest.RandFloats(rng, N*d, 1), modeltest.RandFloats(rng, d*out, 0.5), modeltest.RandFloats(rng, out, 0.5)}, 1e-4, 1e-5},
		{"linear graph-level", NewLinear("readout", be, bd, LinearOpts{Graph: true, N: g, In: d, Out: c}).(linear),
			[][]float32{modeltest.RandFloats(rng, g*d, 1), modeltest.RandFloats(rng, d*c, 0.5), modeltest.RandFloats(rng, c, 0.5)}, 1e-5, 1e-5},
		{"sum pooling", pool(models.PoolSum), [][]float32{modeltest.RandFloats(rng, N*d, 1)}, 0, 0},
		{"mean pooling", pool(models.PoolMean), [][]float32{modeltest.RandFloats(rng, N*d, 1)}, 0, 0},
		{"max pooling", pool(models.PoolMax), [][]float32{modeltest.RandFloats(rng, N*d, 1)}, 0, 0},
		{"cross-entropy", newCrossEntropy("loss.cross_entropy", bd, g, c), [][]float32{modeltest.RandFloats(rng, g*c, 2)}, 1e-7, 1e-5},
		{"squared error", newMSE("loss.mse", bd, g, c), [][]float32{modeltest.RandFloats(rng, g*c, 2)}, 0, 0},
		{"squared error, missing targets", newMSE("loss.mse", &bdMiss, g, c), [][]float32{modeltest.RandFloats(rng, g*c, 2)}, 0, 0},
		{"batch norm + ReLU, training", newBNReLU("bn", graphOpts{be: be, bd: bd, train: true, update: true, N: N}, newBN(0.3), d), bnIn(), 0, 0},
		{"batch norm + ReLU, evaluation", newBNReLU("bn", graphOpts{be: be, bd: bd, train: false, update: false, N: N}, newBN(0.3), d), bnIn(), 0, 0},
		{"encoder labels+attrs", newEncoder("enc", be, bd, encoderShape{NumLabels: numLabels, AttrDim: attrD, N: N, D: d}),
			[][]float32{modeltest.RandFloats(rng, numLabels*d, 1), modeltest.RandFloats(rng, attrD*d, 1), modeltest.RandFloats(rng, d, 1)}, 1e-4, 1e-5},
		{"encoder labels", newEncoder("enc", be, bd, encoderShape{NumLabels: numLabels, AttrDim: 0, N: N, D: d}),
			[][]float32{modeltest.RandFloats(rng, numLabels*d, 1), modeltest.RandFloats(rng, d, 1)}, 1e-4, 1e-5},
		{"encoder attrs", newEncoder("enc", be, bd, encoderShape{NumLabels: 0, AttrDim: attrD, N: N, D: d}),
			[][]float32{modeltest.RandFloats(rng, attrD*d, 1), modeltest.RandFloats(rng, d, 1)}, 1e-4, 1e-5},
		{"MLP, training", newMLPOp("layer1", newMLP(), graphOpts{be: be, bd: bd, train: true, update: true, N: N}, d), mlpIn(), 1e-4, 1e-4},
		{"MLP, evaluation", newMLPOp("layer1", newMLP(), graphOpts{be: be, bd: bd, train: false, update: false, N: N}, d), mlpIn(), 1e-4, 1e-4},
		{"layer norm", NewLayerNorm("ln", be, bd, false, N, d).(layerNorm),
			[][]float32{modeltest.RandFloats(rng, N*d, 2), modeltest.RandFloats(rng, d, 1), modeltest.RandFloats(rng, d, 0.5)}, 0, 0},
		{"layer norm graph-level", NewLayerNorm("readout1.ln", be, bd, true, g, d).(layerNorm),
			[][]float32{modeltest.RandFloats(rng, g*d, 2), modeltest.RandFloats(rng, d, 1), modeltest.RandFloats(rng, d, 0.5)}, 0, 0},
		{"dropout", newDropout("readout0.dropout", g, c), [][]float32{modeltest.RandFloats(rng, g*c, 1), mask}, 0, 0},
		{"gated sum", gatedSum{id: "readout.gated_sum", be: be, bd: bd, N: N, G: g, c: c},
			[][]float32{modeltest.RandFloats(rng, N*c, 2), modeltest.RandFloats(rng, N*c, 1)}, 1e-6, 1e-6},
		{"concatenation", concatCols{id: "readout.gate.concat", N: N, a: d, b: 2}, [][]float32{modeltest.RandFloats(rng, N*d, 1), modeltest.RandFloats(rng, N*2, 1)}, 0, 0},
		{"sum", sumOp{id: "layer1.residual", shape: []int{N, d}}, [][]float32{modeltest.RandFloats(rng, N*d, 1), modeltest.RandFloats(rng, N*d, 1)}, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			optest.CheckDevice(t, e, tc.name, tc.op, tc.in, optest.Tol{Abs: tc.abs, Rel: tc.rel})
		})
	}
	// The layer-sum readout: its products are the linear map's (cuBLAS
	// against the CPU's GEMM), the rest the bits of the ops apart; ten
	// readouts take two launches of spn_readout_sum and of
	// spn_readout_masks.
	for _, ls := range []struct {
		kind          string
		T1            int
		norm, dropout bool
	}{{models.PoolSum, 3, false, true}, {models.PoolMean, 10, false, true}, {models.PoolMax, 2, false, false}, {models.PoolSum, 9, false, false},
		{models.PoolMean, 3, true, true}, {models.PoolSum, 10, true, true}, {models.PoolMax, 9, true, false}} {
		o, err := newLayerSum("readout", be, bd, layerSumOpts{Pool: ls.kind, T1: ls.T1, Norm: ls.norm, Dropout: ls.dropout, N: N, G: g, D: d, C: c})
		if err != nil {
			t.Fatal(err)
		}
		in := layerSumInputs(rng, ls.T1, ls.norm, ls.dropout, N, g, d, c)
		name := fmt.Sprintf("layer sum %s T+1 = %d layer norm %v dropout %v", ls.kind, ls.T1, ls.norm, ls.dropout)
		t.Run(name, func(t *testing.T) { optest.CheckDevice(t, e, name, o, in, optest.Tol{Abs: 1e-5, Rel: 1e-5}) })
	}
	// More graphs than a chunk of rows: the biases' gradients by
	// Engine.ColSums per readout (two chunks), 150 graphs of two nodes
	// over the 300 rows in tensors of 160 graph rows.
	t.Run("layer sum of 150 graphs", func(t *testing.T) { layerSumOfMany(t, e, rng, be) })
	nb := *bd
	nb.Dev = nil
	if err := newCrossEntropy("loss.cross_entropy", &nb, g, c).DeviceForward(e, []*cuda.Buffer{nil}, nil); err == nil || err.Error() != "loss.cross_entropy: the batch is not on the device" {
		t.Errorf("cross-entropy without the batch on the device: %v", err)
	}
	nt := *bd
	nt.Target = nil
	dt, err := UploadBatch(e, &nt)
	if err != nil {
		t.Fatal(err)
	}
	defer dt.Free()
	nt.Dev = dt
	if err := newMSE("loss.mse", &nt, g, c).DeviceForward(e, []*cuda.Buffer{nil}, nil); err == nil || err.Error() != "loss.mse: the batch on the device has no targets for 5 graphs × 3 outputs" {
		t.Errorf("squared error without targets on the device: %v", err)
	}

	// One training-mode forward moves the running statistics on the
	// device as on the CPU (the same bits: double arithmetic in the same
	// order).
	cpu, gpu := newBN(0.2), newBN(0.2)
	x := bnIn()
	o := newBNReLU("bn", graphOpts{be: be, bd: bd, train: true, update: true, N: N}, cpu, d)
	if err := o.Forward(x, make([]float32, N*d)); err != nil {
		t.Fatal(err)
	}
	up := func(vs [][]float32) []*cuda.Buffer { // device copies of vs
		var bs []*cuda.Buffer
		for _, v := range vs {
			dv, err := e.FromHost(v, len(v))
			if err != nil {
				t.Fatal(err)
			}
			b, err := e.Buffer(dv)
			if err != nil {
				t.Fatal(err)
			}
			bs = append(bs, b)
		}
		return bs
	}
	bufs := up(x)
	y, err := e.Scratch(N * d)
	if err != nil {
		t.Fatal(err)
	}
	yb, _ := e.Buffer(y)
	og := newBNReLU("bn", graphOpts{be: be, bd: bd, train: true, update: true, N: N}, gpu, d)
	if err := og.DeviceForward(e, bufs, yb); err != nil {
		t.Fatal(err)
	}
	if err := gpu.Dev.Download(gpu); err != nil {
		t.Fatal(err)
	}
	for j := 0; j < d; j++ {
		if cpu.RunMean[j] != gpu.RunMean[j] || cpu.RunVar[j] != gpu.RunVar[j] {
			t.Errorf("running statistics of column %d: device (%v, %v), CPU (%v, %v)", j, gpu.RunMean[j], gpu.RunVar[j], cpu.RunMean[j], cpu.RunVar[j])
		}
	}

	// The fused MLP's forward pass (each bias added by the batch norm
	// after it as it reads the product) gives the bits of its four parts'
	// own device forward passes, in both modes, running statistics
	// included, and its backward pass theirs.
	zeros := func() *cuda.Buffer {
		z, err := e.Zeros(N * d)
		if err != nil {
			t.Fatal(err)
		}
		return z
	}
	down := func(b *cuda.Buffer) []float32 {
		v := make([]float32, N*d)
		if err := cuda.Download(v, b); err != nil {
			t.Fatal(err)
		}
		return v
	}
	in := up(mlpIn())
	for _, train := range []bool{true, false} {
		fusedMLP, partsMLP := newMLP(), newMLP()
		fused := newMLPOp("m", fusedMLP, graphOpts{be: be, bd: bd, train: train, update: train, N: N}, d)
		yf := zeros()
		if err := fused.DeviceForward(e, in, yf); err != nil {
			t.Fatal(err)
		}
		o := newMLPOp("m", partsMLP, graphOpts{be: be, bd: bd, train: train, update: train, N: N}, d)
		z1, a1, z2, yp := zeros(), zeros(), zeros(), zeros()
		for _, step := range []struct {
			op  op.DeviceOp
			in  []*cuda.Buffer
			out *cuda.Buffer
		}{
			{o.lin1, []*cuda.Buffer{in[0], in[1], in[2]}, z1}, {o.bn1, []*cuda.Buffer{z1, in[3], in[4]}, a1},
			{o.lin2, []*cuda.Buffer{a1, in[5], in[6]}, z2}, {o.bn2, []*cuda.Buffer{z2, in[7], in[8]}, yp},
		} {
			if err := step.op.DeviceForward(e, step.in, step.out); err != nil {
				t.Fatal(err)
			}
		}
		kerntest.EqualBits(t, fmt.Sprintf("train=%v: fused MLP y", train), down(yf), down(yp))

		// The backward passes, from zeroed gradients as the adaptor gives
		// them: the same bits for all nine (the biases' from the batch
		// norms' chunk partials, the parts' from Engine.ColSums).
		dy := up([][]float32{modeltest.RandFloats(rng, N*d, 1)})[0]
		grads := func() []*cuda.Buffer {
			var gs []*cuda.Buffer
			for _, sh := range fused.Sig().In {
				n := 1
				for _, s := range sh {
					n *= s
				}
				z, err := e.Zeros(n)
				if err != nil {
					t.Fatal(err)
				}
				gs = append(gs, z)
			}
			return gs
		}
		gf, gp := grads(), grads()
		if err := fused.DeviceBackward(e, in, yf, dy, gf); err != nil {
			t.Fatal(err)
		}
		dz2, da1, dz1 := zeros(), zeros(), zeros()
		for _, step := range []struct {
			op      op.DeviceOp
			in      []*cuda.Buffer
			out, dy *cuda.Buffer
			dIn     []*cuda.Buffer
		}{
			{o.bn2, []*cuda.Buffer{z2, in[7], in[8]}, yp, dy, []*cuda.Buffer{dz2, gp[7], gp[8]}},
			{o.lin2, []*cuda.Buffer{a1, in[5], in[6]}, z2, dz2, []*cuda.Buffer{da1, gp[5], gp[6]}},
			{o.bn1, []*cuda.Buffer{z1, in[3], in[4]}, a1, da1, []*cuda.Buffer{dz1, gp[3], gp[4]}},
			{o.lin1, []*cuda.Buffer{in[0], in[1], in[2]}, z1, dz1, []*cuda.Buffer{gp[0], gp[1], gp[2]}},
		} {
			if err := step.op.DeviceBackward(e, step.in, step.out, step.dy, step.dIn); err != nil {
				t.Fatal(err)
			}
		}
		for i := range gf {
			got, want := make([]float32, gf[i].Len()), make([]float32, gp[i].Len())
			if err := cuda.Download(got, gf[i]); err != nil {
				t.Fatal(err)
			}
			if err := cuda.Download(want, gp[i]); err != nil {
				t.Fatal(err)
			}
			kerntest.EqualBits(t, fmt.Sprintf("train=%v: fused MLP gradient of input %d", train, i), got, want)
		}
		for i, st := range [][2]*bnStats{{fusedMLP.st1, partsMLP.st1}, {fusedMLP.st2, partsMLP.st2}} {
			for _, s := range st {
				if err := s.Dev.Download(s); err != nil {
					t.Fatal(err)
				}
			}
			if !slices.Equal(st[0].RunMean, st[1].RunMean) || !slices.Equal(st[0].RunVar, st[1].RunVar) {
				t.Errorf("train=%v: batch norm %d's running statistics: fused %v %v, parts %v %v", train, i+1, st[0].RunMean, st[0].RunVar, st[1].RunMean, st[1].RunVar)
			}
		}
	}
}

// layerSumOfMany runs the layer-sum readout of 150 graphs (more than a
// chunk of rows) on the device and on the CPU (optest.CheckDevice).
func layerSumOfMany(t *testing.T, e *engine.Engine, rng *rand.Rand, be Env) {
	const n, N, d, c = 300, 320, 5, 3
	many := &BatchData{N: n, G: 150}
	for gi := 0; gi <= 150; gi++ {
		many.Ptr = append(many.Ptr, int32(2*gi))
	}
	dm, err := UploadBatch(e, many)
	if err != nil {
		t.Fatal(err)
	}
	defer dm.Free()
	many.Dev = dm
	const gm = 160
	for _, norm := range []bool{false, true} {
		o, err := newLayerSum("readout", be, many, layerSumOpts{Pool: models.PoolSum, T1: 3, Norm: norm, Dropout: true, N: N, G: gm, D: d, C: c})
		if err != nil {
			t.Fatal(err)
		}
		in := layerSumInputs(rng, 3, norm, true, N, gm, d, c)
		optest.CheckDevice(t, e, fmt.Sprintf("layer sum of 150 graphs, layer norm %v", norm), o, in, optest.Tol{Abs: 1e-5, Rel: 1e-5})
	}
}
