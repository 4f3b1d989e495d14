package rt

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/spn-project/spn/models"
	"github.com/spn-project/spn/models/internal/testkit/modeltest"
	"github.com/spn-project/spn/models/internal/testkit/ref"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/models/kernels"
	"github.com/spn-project/spn/models/op"
)

// TestOpGradients checks every differentiable op of the package against
// finite differences, serially and with two threads, on 300 real rows
// (three kernel row chunks, so the chunked reductions are exercised) in
// tensors of 320 rows: the padding rows hold random values that must not
// matter (zero output, zero gradient).
func TestOpGradients(t *testing.T) {
	for _, threads := range []int{1, 2} {
		be := Env{Backend: kernels.CPU{Threads: threads}}
		rng := rand.New(rand.NewPCG(1, 2))
		n, N, d, k := 300, 320, 5, 3
		hop := modeltest.RandomHopSets(rng, n, k) // asymmetric: checks the transpose
		ptr := []int32{0, 10, 10, 57, 200, 300}
		labels := make([]int32, n)
		for i := range labels {
			labels[i] = int32(rng.IntN(4))
		}
		attrs := modeltest.RandFloats(rng, n*2, 1)
		st := &bnStats{RunMean: make([]float64, d), RunVar: make([]float64, d), Momentum: 0.1, Eps: 1e-5}
		stEval := &bnStats{Momentum: 0.1, Eps: 1e-5}
		for j := 0; j < d; j++ {
			stEval.RunMean = append(stEval.RunMean, rng.NormFloat64())
			stEval.RunVar = append(stEval.RunVar, 1+rng.Float64())
		}
		mlp := NewMLP("layer1", d, rng)
		// Five graphs (one empty) in graph-level tensors of 8 rows.
		bd := &BatchData{N: n, G: len(ptr) - 1, Hops: hop, Ptr: ptr, Labels: labels, Attrs: attrs,
			Y: []int32{0, 2, 1, 2, 1}}
		bdAttrs := *bd
		bdAttrs.Attrs = nil
		bdMSE := &BatchData{G: 3, Target: []float64{1, -1, 0.5, 2, 0, 3}}
		cases := []modeltest.OpCase{
			{Name: "sum", Op: sumOp{id: "sum", shape: []int{N, d}},
				In:     [][]float32{modeltest.RandFloats(rng, N*d, 1), modeltest.RandFloats(rng, N*d, 1)},
				Shapes: [][]int{{N, d}, {N, d}}, H: 1e-2, Tol: 2e-2},
			{Name: "softmax", Op: NewSoftmax("alpha", k),
				In: [][]float32{modeltest.RandFloats(rng, k, 1)}, Shapes: [][]int{{k}}, H: 1e-2, Tol: 1e-3},
			{Name: "linear", Op: NewLinear("lin", be, bd, LinearOpts{N: N, In: d, Out: 3}),
				In:     [][]float32{modeltest.RandFloats(rng, N*d, 1), modeltest.RandFloats(rng, d*3, 0.5), modeltest.RandFloats(rng, 3, 0.5)},
				Shapes: [][]int{{N, d}, {d, 3}, {3}}, H: 1e-2, Tol: 2e-2, ZeroFrom: n * 3},
			{Name: "linear graph-level", Op: NewLinear("readout", be, bd, LinearOpts{Graph: true, N: 8, In: d, Out: 2}),
				In:     [][]float32{modeltest.RandFloats(rng, 8*d, 1), modeltest.RandFloats(rng, d*2, 0.5), modeltest.RandFloats(rng, 2, 0.5)},
				Shapes: [][]int{{8, d}, {d, 2}, {2}}, H: 1e-2, Tol: 2e-2, ZeroFrom: 5 * 2},
			{Name: "encoder labels+attrs", Op: newEncoder("enc", be, bd, encoderShape{NumLabels: 4, AttrDim: 2, N: N, D: d}),
				In:     [][]float32{modeltest.RandFloats(rng, 4*d, 1), modeltest.RandFloats(rng, 2*d, 1), modeltest.RandFloats(rng, d, 1)},
				Shapes: [][]int{{4, d}, {2, d}, {d}}, H: 1e-2, Tol: 2e-2, ZeroFrom: n * d},
			{Name: "encoder labels", Op: newEncoder("enc", be, &bdAttrs, encoderShape{NumLabels: 4, AttrDim: 0, N: N, D: d}),
				In: [][]float32{modeltest.RandFloats(rng, 4*d, 1), modeltest.RandFloats(rng, d, 1)}, Shapes: [][]int{{4, d}, {d}}, H: 1e-2, Tol: 2e-2, ZeroFrom: n * d},
			// β = 10 keeps every entry far from the ReLU kink: checks the
			// normalisation (training: through the batch statistics).
			{Name: "batchnorm-relu train", Op: newBNReLU("bn", graphOpts{be: be, bd: bd, train: true, update: false, N: N}, st, d),
				In:     [][]float32{modeltest.RandFloats(rng, N*d, 1), modeltest.RandFloats(rng, d, 1), modeltest.ConstFloats(d, 10)},
				Shapes: [][]int{{N, d}, {d}, {d}}, H: 1e-2, Tol: 2e-2, ZeroFrom: n * d},
			{Name: "batchnorm-relu eval", Op: newBNReLU("bn", graphOpts{be: be, bd: bd, train: false, update: false, N: N}, stEval, d),
				In:     [][]float32{modeltest.RandFloats(rng, N*d, 1), modeltest.RandFloats(rng, d, 1), modeltest.ConstFloats(d, 10)},
				Shapes: [][]int{{N, d}, {d}, {d}}, H: 1e-2, Tol: 2e-2, ZeroFrom: n * d},
			// β = 0: about half the entries are cut; a small step (an entry
			// within h of the kink makes the central difference wrong by
			// up to |r|/2) checks γ and β through the ReLU mask.
			{Name: "batchnorm-relu kink", Op: newBNReLU("bnk", graphOpts{be: be, bd: bd, train: true, update: false, N: N}, st, d),
				In:     [][]float32{modeltest.RandFloats(rng, N*d, 1), {1, -0.8, 1.2, 0.7, -1.1}, make([]float32, d)},
				Shapes: [][]int{{N, d}, {d}, {d}}, Diff: []bool{false, true, true}, H: 1e-4, Tol: 5e-2},
			// The fused MLP (training mode; β = 10 keeps both ReLUs
			// away from their kinks, which the cases above check).
			{Name: "mlp train", Op: newMLPOp("layer1", &mlp, graphOpts{be: be, bd: bd, train: true, update: false, N: N}, d),
				In: [][]float32{modeltest.RandFloats(rng, N*d, 1),
					modeltest.RandFloats(rng, d*d, 0.5), modeltest.RandFloats(rng, d, 0.5), modeltest.RandFloats(rng, d, 1), modeltest.ConstFloats(d, 10),
					modeltest.RandFloats(rng, d*d, 0.5), modeltest.RandFloats(rng, d, 0.5), modeltest.RandFloats(rng, d, 1), modeltest.ConstFloats(d, 10)},
				Shapes: [][]int{{N, d}, {d, d}, {d}, {d}, {d}, {d, d}, {d}, {d}, {d}}, H: 1e-2, Tol: 2e-2, ZeroFrom: n * d},
			{Name: "mlp eval", Op: newMLPOp("layer1", &mlp, graphOpts{be: be, bd: bd, train: false, update: false, N: N}, d),
				In: [][]float32{modeltest.RandFloats(rng, N*d, 1),
					modeltest.RandFloats(rng, d*d, 0.5), modeltest.RandFloats(rng, d, 0.5), modeltest.RandFloats(rng, d, 1), modeltest.ConstFloats(d, 10),
					modeltest.RandFloats(rng, d*d, 0.5), modeltest.RandFloats(rng, d, 0.5), modeltest.RandFloats(rng, d, 1), modeltest.ConstFloats(d, 10)},
				Shapes: [][]int{{N, d}, {d, d}, {d}, {d}, {d}, {d, d}, {d}, {d}, {d}}, H: 1e-2, Tol: 2e-2, ZeroFrom: n * d},
			{Name: "dropout", Op: newDropout("drop", 20, 3),
				In:     [][]float32{modeltest.RandFloats(rng, 60, 1), modeltest.DropMask(rng, 60, 0.3)},
				Shapes: [][]int{{20, 3}, {20, 3}}, Diff: []bool{true, false}, H: 1e-2, Tol: 1e-3},
			{Name: "cross-entropy", Op: newCrossEntropy("ce", bd, 8, 3),
				In: [][]float32{modeltest.RandFloats(rng, 24, 1)}, Shapes: [][]int{{8, 3}}, H: 1e-2, Tol: 1e-3},
			{Name: "mse", Op: newMSE("mse", bdMSE, 4, 2),
				In: [][]float32{modeltest.RandFloats(rng, 8, 1)}, Shapes: [][]int{{4, 2}}, H: 1e-2, Tol: 1e-3},
		}
		for _, kind := range []string{models.PoolSum, models.PoolMean, models.PoolMax} {
			p, err := newPool("pool", be, bd, poolOpts{Kind: kind, N: N, G: 8, D: d})
			if err != nil {
				t.Fatal(err)
			}
			cases = append(cases, modeltest.OpCase{Name: "pool " + kind, Op: p,
				In: [][]float32{modeltest.RandFloats(rng, N*d, 1)}, Shapes: [][]int{{N, d}}, H: 1e-3, Tol: 2e-2, ZeroFrom: 5 * d})
		}
		// The layer-sum readout: three readouts with dropout, ten (more
		// than a device launch's group of eight) without; with the layer
		// norm of the readouts t ≥ 1, three with dropout, ten without.
		for _, ls := range []struct {
			kind          string
			T1            int
			norm, dropout bool
		}{{models.PoolSum, 3, false, true}, {models.PoolMean, 10, false, false}, {models.PoolMax, 2, false, true},
			{models.PoolMean, 3, true, true}, {models.PoolSum, 10, true, false}} {
			o, err := newLayerSum("readout", be, bd, layerSumOpts{Pool: ls.kind, T1: ls.T1, Norm: ls.norm, Dropout: ls.dropout, N: N, G: 8, D: d, C: 2})
			if err != nil {
				t.Fatal(err)
			}
			c := modeltest.OpCase{Name: fmt.Sprintf("layer sum %s T+1 = %d layer norm %v dropout %v", ls.kind, ls.T1, ls.norm, ls.dropout), Op: o,
				Shapes: o.Sig().In, Diff: o.Sig().Diff, H: 1e-3, Tol: 2e-2, ZeroFrom: 5 * 2}
			c.In = layerSumInputs(rng, ls.T1, ls.norm, ls.dropout, N, 8, d, 2)
			cases = append(cases, c)
		}
		for _, c := range cases {
			c.Name = fmt.Sprintf("%s (threads %d)", c.Name, threads)
			modeltest.CheckOpGrad(t, c)
		}
	}
}

// layerSumInputs returns random inputs of a layer-sum readout of T1
// readouts (newLayerSum's order): the node states (N×d), the maps (d×c,
// c), with norm the layer norms' γ and β (d, d; γ near 1), with dropout
// the masks (G×c).
func layerSumInputs(rng *rand.Rand, T1 int, norm, dropout bool, N, G, d, c int) [][]float32 {
	var in [][]float32
	for range T1 {
		in = append(in, modeltest.RandFloats(rng, N*d, 1))
	}
	for range T1 {
		in = append(in, modeltest.RandFloats(rng, d*c, 0.5), modeltest.RandFloats(rng, c, 0.5))
	}
	for t := 1; t < T1 && norm; t++ {
		g := modeltest.RandFloats(rng, d, 0.3)
		for j := range g {
			g[j]++
		}
		in = append(in, g, modeltest.RandFloats(rng, d, 0.5))
	}
	if dropout {
		for range T1 {
			in = append(in, modeltest.DropMask(rng, G*c, 0.3))
		}
	}
	return in
}

// TestBatchNormMatchesReference checks the batch-norm op's forward pass
// and running statistics against the float64 reference layer
// (models/internal/testkit/ref, plain loops): the outputs are float32
// roundings of O(1) values, within 1e-6 of the reference, and the running
// statistics, float64 on both sides, within 1e-12 relative.
func TestBatchNormMatchesReference(t *testing.T) {
	be := Env{Backend: kernels.CPU{Threads: 2}}
	rng := rand.New(rand.NewPCG(3, 4))
	n, d := 300, 6
	x := modeltest.RandFloats(rng, n*d, 1)
	bd := &BatchData{N: n}

	bn := ref.NewBatchNormReLU("bn", d)
	bn.Gamma.Uniform(rng, 1)
	bn.Beta.Uniform(rng, 1)
	st := &bnStats{RunMean: make([]float64, d), RunVar: modeltest.ConstFloat64(d, 1), Momentum: 0.1, Eps: 1e-5}
	x64 := make([]float64, len(x))
	for i, v := range x {
		x64[i] = float64(v)
	}
	want := bn.Forward(x64, n, true)
	got, err := op.Adapt(nil, newBNReLU("bn", graphOpts{be: be, bd: bd, train: true, update: true, N: n}, st, d)).Do(tensor.New(tensor.WithShape(n, d), tensor.WithBacking(x)),
		tensor.New(tensor.WithShape(d), tensor.WithBacking(bn.Gamma.W)), tensor.New(tensor.WithShape(d), tensor.WithBacking(bn.Beta.W)))
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range got.Data().([]float32) {
		if math.Abs(float64(v)-want[i]) > 1e-6 {
			t.Fatalf("batch norm [%d] = %v, ref.BatchNormReLU %v", i, v, want[i])
		}
	}
	for j := 0; j < d; j++ {
		if math.Abs(st.RunMean[j]-bn.RunMean[j]) > 1e-12*(1+math.Abs(bn.RunMean[j])) || math.Abs(st.RunVar[j]-bn.RunVar[j]) > 1e-12*bn.RunVar[j] {
			t.Fatalf("running statistics [%d] = (%v, %v), nn (%v, %v)", j, st.RunMean[j], st.RunVar[j], bn.RunMean[j], bn.RunVar[j])
		}
	}
}

// TestOpIdentity checks that ops of different layers or roles never merge
// in a Gorgonia graph (Gorgonia merges nodes with equal op hashes and
// children), and that the identity is what keeps them apart.
func TestOpIdentity(t *testing.T) {
	be := Env{Backend: kernels.CPU{}}
	hop := []data.CSR{{Ptr: []int32{0, 1, 2}, Idx: []int32{1, 0}}}
	bd := &BatchData{N: 2, G: 1, Hops: hop, Ptr: []int32{0, 2}}
	g := G.NewGraph()
	x := G.NewMatrix(g, G.Float32, G.WithShape(2, 3), G.WithName("x"), G.WithInit(G.Ones()))
	w := G.NewMatrix(g, G.Float32, G.WithShape(3, 1), G.WithName("w"), G.WithInit(G.Ones()))
	b := G.NewVector(g, G.Float32, G.WithShape(1), G.WithName("b"), G.WithInit(G.Zeroes()))
	apply := func(id string) *G.Node {
		n, err := op.Apply(nil, NewLinear(id, be, bd, LinearOpts{N: 2, In: 3, Out: 1}), x, w, b)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	l1, l2, l1again := apply("layer1.lin1"), apply("layer2.lin1"), apply("layer1.lin1")
	if l1 == l2 {
		t.Fatalf("ops of layers 1 and 2 on the same inputs were merged into one node")
	}
	if l1 != l1again {
		t.Fatalf("the same op applied twice to the same inputs gave two nodes: Gorgonia's merge rule changed")
	}
	mlp := NewMLP("layer1", 3, rand.New(rand.NewPCG(5, 6)))
	ops := []G.Op{
		op.Adapt(nil, NewLinear("layer1.lin1", be, bd, LinearOpts{N: 2, In: 3, Out: 3})), op.Adapt(nil, NewLinear("layer1.lin2", be, bd, LinearOpts{N: 2, In: 3, Out: 3})),
		op.Adapt(nil, newBNReLU("layer1.bn1", graphOpts{be: be, bd: bd, train: true, update: true, N: 2}, nil, 3)), op.Adapt(nil, newBNReLU("layer1.bn1", graphOpts{be: be, bd: bd, train: false, update: false, N: 2}, nil, 3)),
		op.Adapt(nil, newMLPOp("layer1", &mlp, graphOpts{be: be, bd: bd, train: true, update: true, N: 2}, 3)), op.Adapt(nil, newMLPOp("layer1", &mlp, graphOpts{be: be, bd: bd, train: false, update: false, N: 2}, 3)),
		op.Adapt(nil, newMLPOp("layer2", &mlp, graphOpts{be: be, bd: bd, train: true, update: true, N: 2}, 3)),
		op.Adapt(nil, NewSoftmax("layer1.alpha", 1)), op.Adapt(nil, NewSoftmax("layer2.alpha", 1)),
		op.Adapt(nil, newDropout("readout0.dropout", 2, 1)), op.Adapt(nil, newDropout("readout1.dropout", 2, 1)),
	}
	seen := map[uint32]string{}
	for _, op := range ops {
		if prev, ok := seen[op.Hashcode()]; ok {
			t.Errorf("ops %s and %s share the hash %x", prev, op, op.Hashcode())
		}
		seen[op.Hashcode()] = op.String()
	}
}
