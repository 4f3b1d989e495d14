package gg

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/models/kernels"
	"github.com/spn-project/spn/models/nn"
	"github.com/spn-project/spn/models/op"
)

// opCase is one differentiable op under a finite-difference check.
type opCase struct {
	name   string
	op     G.Op
	in     [][]float32
	shapes [][]int
	// diff marks the inputs whose gradient is checked (nil = all).
	diff []bool
	// h is the central-difference step, tol the tolerance:
	// |analytic − numeric| ≤ tol·(1 + |numeric|).
	h, tol float64
	// zeroFrom > 0 requires the output values from that index on (the
	// padding rows) to be zero.
	zeroFrom int
	// scalar marks an op with a scalar output (a loss).
	scalar bool
}

// gradThroughGorgonia returns the gradients of L = Σ r·op(in) (L = op(in)
// for a scalar op) with respect to the checked inputs, computed by
// gorgonia.Grad over the op's SymDiff and run on a TapeMachine.
func gradThroughGorgonia(t *testing.T, c opCase, r []float32) [][]float32 {
	t.Helper()
	g := G.NewGraph()
	var leaves, wrt G.Nodes
	for i, v := range c.in {
		val := tensor.New(tensor.WithShape(c.shapes[i]...), tensor.WithBacking(append([]float32(nil), v...)))
		n := G.NewTensor(g, G.Float32, len(c.shapes[i]), G.WithShape(c.shapes[i]...), G.WithName(fmt.Sprintf("in%d", i)), G.WithValue(val))
		leaves = append(leaves, n)
		if c.diff == nil || c.diff[i] {
			wrt = append(wrt, n)
		}
	}
	y, err := G.ApplyOp(c.op, leaves...)
	if err != nil {
		t.Fatalf("%s: %v", c.name, err)
	}
	cost := y
	if !y.IsScalar() {
		s := y.Shape().Clone()
		rv := tensor.New(tensor.WithShape(s...), tensor.WithBacking(r))
		rn := G.NewTensor(g, G.Float32, len(s), G.WithShape(s...), G.WithName("probe"), G.WithValue(rv))
		if cost, err = op.Apply(nil, newDot("probe.dot", s...), y, rn); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
	}
	grads, err := G.Grad(cost, wrt...)
	if err != nil {
		t.Fatalf("%s: %v", c.name, err)
	}
	vals := make([]G.Value, len(grads))
	for i, gn := range grads {
		G.Read(gn, &vals[i])
	}
	vm := G.NewTapeMachine(g)
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		t.Fatalf("%s: %v", c.name, err)
	}
	out := make([][]float32, len(vals))
	for i, v := range vals {
		out[i] = append([]float32(nil), v.Data().([]float32)...)
	}
	return out
}

// checkOpGrad compares the Gorgonia gradient of c.op with central
// differences of its Do, in float32 arithmetic with L summed in float64.
func checkOpGrad(t *testing.T, c opCase) {
	t.Helper()
	vals := func() []G.Value {
		vs := make([]G.Value, len(c.in))
		for i, v := range c.in {
			vs[i] = tensor.New(tensor.WithShape(c.shapes[i]...), tensor.WithBacking(v))
		}
		return vs
	}
	y0, err := c.op.Do(vals()...)
	if err != nil {
		t.Fatalf("%s: %v", c.name, err)
	}
	if c.zeroFrom > 0 {
		for i, v := range y0.Data().([]float32)[c.zeroFrom:] {
			if v != 0 {
				t.Fatalf("%s: padding output [%d] = %v, want 0", c.name, c.zeroFrom+i, v)
			}
		}
	}
	rng := rand.New(rand.NewPCG(7, 7))
	var r []float32
	if yd, ok := y0.Data().([]float32); ok {
		r = make([]float32, len(yd))
		for i := range r {
			r[i] = float32(rng.NormFloat64())
		}
	}
	loss := func() float64 {
		y, err := c.op.Do(vals()...)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		switch d := y.Data().(type) {
		case float32:
			return float64(d)
		case []float32:
			var s float64
			for i, v := range d {
				s += float64(v) * float64(r[i])
			}
			return s
		}
		t.Fatalf("%s: output holds %T", c.name, y.Data())
		return 0
	}
	grads := gradThroughGorgonia(t, c, append([]float32(nil), r...))
	gi := 0
	for i, in := range c.in {
		if c.diff != nil && !c.diff[i] {
			continue
		}
		an := grads[gi]
		gi++
		if len(an) != len(in) {
			t.Fatalf("%s: gradient of input %d has %d values, want %d", c.name, i, len(an), len(in))
		}
		for j := range in {
			old := in[j]
			in[j] = old + float32(c.h)
			lp := loss()
			in[j] = old - float32(c.h)
			lm := loss()
			in[j] = old
			num := (lp - lm) / (2 * c.h)
			if d := math.Abs(float64(an[j]) - num); d > c.tol*(1+math.Abs(num)) {
				t.Errorf("%s: d input%d[%d] analytic %.6g numeric %.6g", c.name, i, j, an[j], num)
				break
			}
		}
	}
}

func randFloats(rng *rand.Rand, n int, scale float64) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = float32(scale * rng.NormFloat64())
	}
	return s
}

func randomHopSets(rng *rand.Rand, n, k int) []data.CSR {
	hops := make([]data.CSR, k)
	for i := range hops {
		c := data.CSR{Ptr: make([]int32, n+1)}
		for u := 0; u < n; u++ {
			for v := 0; v < n; v++ {
				if v != u && rng.IntN(4) == 0 {
					c.Idx = append(c.Idx, int32(v))
				}
			}
			c.Ptr[u+1] = int32(len(c.Idx))
		}
		hops[i] = c
	}
	return hops
}

func constFloats(n int, v float32) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = v
	}
	return s
}

// TestOpGradients checks every differentiable op of the package against
// finite differences, serially and with two threads, on 300 real rows
// (three kernel row chunks, so the chunked reductions are exercised) in
// tensors of 320 rows: the padding rows hold random values that must not
// matter (zero output, zero gradient).
func TestOpGradients(t *testing.T) {
	for _, threads := range []int{1, 2} {
		be := env{Backend: kernels.CPU{Threads: threads}}
		rng := rand.New(rand.NewPCG(1, 2))
		n, N, d, k := 300, 320, 5, 3
		hop := randomHopSets(rng, n, k) // asymmetric: checks the transpose
		hopT := make([]data.CSR, k)
		for i := range hop {
			hopT[i] = kernels.Transpose(hop[i])
		}
		ptr := []int32{0, 10, 10, 57, 200, 300}
		labels := make([]int32, n)
		for i := range labels {
			labels[i] = int32(rng.IntN(4))
		}
		attrs := randFloats(rng, n*2, 1)
		st := &bnStats{RunMean: make([]float64, d), RunVar: make([]float64, d), Momentum: 0.1, Eps: 1e-5}
		stEval := &bnStats{Momentum: 0.1, Eps: 1e-5}
		for j := 0; j < d; j++ {
			stEval.RunMean = append(stEval.RunMean, rng.NormFloat64())
			stEval.RunVar = append(stEval.RunVar, 1+rng.Float64())
		}
		alpha := []float32{0.2, 0.5, 0.3}
		// Five graphs (one empty) in graph-level tensors of 8 rows.
		bd := &batchData{n: n, g: len(ptr) - 1, hops: hop, hopsT: hopT, ptr: ptr, labels: labels, attrs: attrs,
			y: []int32{0, 2, 1, 2, 1}}
		bdAttrs := *bd
		bdAttrs.attrs = nil
		bdMSE := &batchData{g: 3, target: []float64{1, -1, 0.5, 2, 0, 3}}
		cases := []opCase{
			{name: "hop aggregation", op: op.Adapt(nil, newHopAgg("agg", be, bd, k, N, d)),
				in:     [][]float32{randFloats(rng, N*d, 1), alpha, {0.3}},
				shapes: [][]int{{N, d}, {k}, {1}}, h: 1e-2, tol: 2e-2, zeroFrom: n * d},
			{name: "softmax", op: op.Adapt(nil, newSoftmax("alpha", k)),
				in: [][]float32{randFloats(rng, k, 1)}, shapes: [][]int{{k}}, h: 1e-2, tol: 1e-3},
			{name: "linear", op: op.Adapt(nil, newLinear("lin", be, bd, false, N, d, 3)),
				in:     [][]float32{randFloats(rng, N*d, 1), randFloats(rng, d*3, 0.5), randFloats(rng, 3, 0.5)},
				shapes: [][]int{{N, d}, {d, 3}, {3}}, h: 1e-2, tol: 2e-2, zeroFrom: n * 3},
			{name: "linear graph-level", op: op.Adapt(nil, newLinear("readout", be, bd, true, 8, d, 2)),
				in:     [][]float32{randFloats(rng, 8*d, 1), randFloats(rng, d*2, 0.5), randFloats(rng, 2, 0.5)},
				shapes: [][]int{{8, d}, {d, 2}, {2}}, h: 1e-2, tol: 2e-2, zeroFrom: 5 * 2},
			{name: "encoder labels+attrs", op: op.Adapt(nil, newEncoder("enc", be, bd, 4, 2, N, d)),
				in:     [][]float32{randFloats(rng, 4*d, 1), randFloats(rng, 2*d, 1), randFloats(rng, d, 1)},
				shapes: [][]int{{4, d}, {2, d}, {d}}, h: 1e-2, tol: 2e-2, zeroFrom: n * d},
			{name: "encoder labels", op: op.Adapt(nil, newEncoder("enc", be, &bdAttrs, 4, 0, N, d)),
				in: [][]float32{randFloats(rng, 4*d, 1), randFloats(rng, d, 1)}, shapes: [][]int{{4, d}, {d}}, h: 1e-2, tol: 2e-2, zeroFrom: n * d},
			// β = 10 keeps every entry far from the ReLU kink: checks the
			// normalisation (training: through the batch statistics).
			{name: "batchnorm-relu train", op: op.Adapt(nil, newBNReLU("bn", be, bd, st, true, false, N, d)),
				in:     [][]float32{randFloats(rng, N*d, 1), randFloats(rng, d, 1), constFloats(d, 10)},
				shapes: [][]int{{N, d}, {d}, {d}}, h: 1e-2, tol: 2e-2, zeroFrom: n * d},
			{name: "batchnorm-relu eval", op: op.Adapt(nil, newBNReLU("bn", be, bd, stEval, false, false, N, d)),
				in:     [][]float32{randFloats(rng, N*d, 1), randFloats(rng, d, 1), constFloats(d, 10)},
				shapes: [][]int{{N, d}, {d}, {d}}, h: 1e-2, tol: 2e-2, zeroFrom: n * d},
			// β = 0: about half the entries are cut; a small step (an entry
			// within h of the kink makes the central difference wrong by
			// up to |r|/2) checks γ and β through the ReLU mask.
			{name: "batchnorm-relu kink", op: op.Adapt(nil, newBNReLU("bnk", be, bd, st, true, false, N, d)),
				in:     [][]float32{randFloats(rng, N*d, 1), {1, -0.8, 1.2, 0.7, -1.1}, make([]float32, d)},
				shapes: [][]int{{N, d}, {d}, {d}}, diff: []bool{false, true, true}, h: 1e-4, tol: 5e-2},
			{name: "dropout", op: op.Adapt(nil, newDropout("drop", 20, 3)),
				in:     [][]float32{randFloats(rng, 60, 1), dropMask(rng, 60, 0.3)},
				shapes: [][]int{{20, 3}, {20, 3}}, diff: []bool{true, false}, h: 1e-2, tol: 1e-3},
			{name: "cross-entropy", op: op.Adapt(nil, newCrossEntropy("ce", bd, 8, 3)),
				in: [][]float32{randFloats(rng, 24, 1)}, shapes: [][]int{{8, 3}}, h: 1e-2, tol: 1e-3},
			{name: "mse", op: op.Adapt(nil, newMSE("mse", bdMSE, 4, 2)),
				in: [][]float32{randFloats(rng, 8, 1)}, shapes: [][]int{{4, 2}}, h: 1e-2, tol: 1e-3},
		}
		for _, kind := range []string{nn.PoolSum, nn.PoolMean, nn.PoolMax} {
			p, err := newPool("pool", be, bd, kind, N, 8, d)
			if err != nil {
				t.Fatal(err)
			}
			cases = append(cases, opCase{name: "pool " + kind, op: op.Adapt(nil, p),
				in: [][]float32{randFloats(rng, N*d, 1)}, shapes: [][]int{{N, d}}, h: 1e-3, tol: 2e-2, zeroFrom: 5 * d})
		}
		for _, c := range cases {
			c.name = fmt.Sprintf("%s (threads %d)", c.name, threads)
			checkOpGrad(t, c)
		}
	}
}

func dropMask(rng *rand.Rand, n int, p float64) []float32 {
	m := make([]float32, n)
	for i := range m {
		if rng.Float64() >= p {
			m[i] = float32(1 / (1 - p))
		}
	}
	return m
}

// TestOpsMatchKernelsBitwise checks that the forward ops compute exactly
// what the hand-written nn layers compute (same kernels, same order).
func TestOpsMatchKernelsBitwise(t *testing.T) {
	be := env{Backend: kernels.CPU{Threads: 2}}
	rng := rand.New(rand.NewPCG(3, 4))
	n, d, k := 300, 6, 3
	hop := randomHopSets(rng, n, k)
	hopT := make([]data.CSR, k)
	for i := range hop {
		hopT[i] = kernels.Transpose(hop[i])
	}
	x := randFloats(rng, n*d, 1)
	agg := nn.NewHopAggregation("agg", k, d, 0.25, true)
	agg.Logits.Uniform(rng, 1)
	want := agg.Forward(be, x, hop, hopT, n)
	bd := &batchData{n: n, hops: hop, hopsT: hopT}
	a := make([]float32, k)
	if err := newSoftmax("alpha", k).Forward([][]float32{agg.Logits.W}, a); err != nil {
		t.Fatal(err)
	}
	gotAgg := make([]float32, n*d)
	if err := newHopAgg("agg", be, bd, k, n, d).Forward([][]float32{x, a, agg.Eps.W}, gotAgg); err != nil {
		t.Fatal(err)
	}
	for i, v := range gotAgg {
		if v != want[i] {
			t.Fatalf("hop aggregation [%d] = %v, nn.HopAggregation %v", i, v, want[i])
		}
	}

	bn := nn.NewBatchNormReLU("bn", d)
	bn.Gamma.Uniform(rng, 1)
	bn.Beta.Uniform(rng, 1)
	st := &bnStats{RunMean: make([]float64, d), RunVar: constFloat64(d, 1), Momentum: 0.1, Eps: 1e-5}
	want = bn.Forward(be, x, n, true)
	got, err := op.Adapt(nil, newBNReLU("bn", be, bd, st, true, true, n, d)).Do(tensor.New(tensor.WithShape(n, d), tensor.WithBacking(x)),
		tensor.New(tensor.WithShape(d), tensor.WithBacking(bn.Gamma.W)), tensor.New(tensor.WithShape(d), tensor.WithBacking(bn.Beta.W)))
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range got.Data().([]float32) {
		if v != want[i] {
			t.Fatalf("batch norm [%d] = %v, nn.BatchNormReLU %v", i, v, want[i])
		}
	}
	for j := 0; j < d; j++ {
		if st.RunMean[j] != bn.RunMean[j] || st.RunVar[j] != bn.RunVar[j] {
			t.Fatalf("running statistics [%d] = (%v, %v), nn (%v, %v)", j, st.RunMean[j], st.RunVar[j], bn.RunMean[j], bn.RunVar[j])
		}
	}
}

func constFloat64(n int, v float64) []float64 {
	s := make([]float64, n)
	for i := range s {
		s[i] = v
	}
	return s
}

// TestOpIdentity checks that ops of different layers or roles never merge
// in a Gorgonia graph (Gorgonia merges nodes with equal op hashes and
// children), and that the identity is what keeps them apart.
func TestOpIdentity(t *testing.T) {
	be := env{Backend: kernels.CPU{}}
	hop := []data.CSR{{Ptr: []int32{0, 1, 2}, Idx: []int32{1, 0}}}
	bd := &batchData{n: 2, g: 1, hops: hop, hopsT: hop, ptr: []int32{0, 2}}
	g := G.NewGraph()
	x := G.NewMatrix(g, G.Float32, G.WithShape(2, 3), G.WithName("x"), G.WithInit(G.Ones()))
	a := G.NewVector(g, G.Float32, G.WithShape(1), G.WithName("alpha"), G.WithInit(G.Ones()))
	e := G.NewVector(g, G.Float32, G.WithShape(1), G.WithName("eps"), G.WithInit(G.Zeroes()))
	apply := func(id string) *G.Node {
		n, err := op.Apply(nil, newHopAgg(id, be, bd, 1, 2, 3), x, a, e)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	l1, l2, l1again := apply("layer1.agg"), apply("layer2.agg"), apply("layer1.agg")
	if l1 == l2 {
		t.Fatalf("ops of layers 1 and 2 on the same inputs were merged into one node")
	}
	if l1 != l1again {
		t.Fatalf("the same op applied twice to the same inputs gave two nodes: Gorgonia's merge rule changed")
	}
	ops := []G.Op{
		op.Adapt(nil, newHopAgg("layer1.agg", be, bd, 1, 2, 3)), op.Adapt(nil, newHopAgg("layer2.agg", be, bd, 1, 2, 3)),
		op.Adapt(nil, newLinear("layer1.lin1", be, bd, false, 2, 3, 3)), op.Adapt(nil, newLinear("layer1.lin2", be, bd, false, 2, 3, 3)),
		op.Adapt(nil, newBNReLU("layer1.bn1", be, bd, nil, true, true, 2, 3)), op.Adapt(nil, newBNReLU("layer1.bn1", be, bd, nil, false, false, 2, 3)),
		op.Adapt(nil, newSoftmax("layer1.alpha", 1)), op.Adapt(nil, newSoftmax("layer2.alpha", 1)),
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
