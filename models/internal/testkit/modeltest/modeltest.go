// Package modeltest holds the helpers the model packages' tests share:
// small datasets and batches, model configurations, and the
// finite-difference gradient checks of Gorgonia-adapted ops against their
// own forward pass (CheckOpGrad) and against a float64 reference forward
// (CheckRef). It is imported by tests only.
package modeltest

import (
	"path/filepath"

	"github.com/spn-project/spn/models/metric"
	"github.com/spn-project/spn/models/param"

	"context"
	"math"
	"math/rand/v2"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/data/qm9"
	"github.com/spn-project/spn/data/sp"
	"github.com/spn-project/spn/internal/testkit/mirrortest"
	"github.com/spn-project/spn/internal/testkit/synth"
	"github.com/spn-project/spn/models"
	"github.com/spn-project/spn/models/internal/testkit/optest"
	"github.com/spn-project/spn/models/kernels"
	"github.com/spn-project/spn/models/op"
	"github.com/spn-project/spn/schema/modelspec"
)

// MaxRelDiff returns max|a−b| / max(max|b|, 1e-6).
func MaxRelDiff(a, b []float32) float64 {
	var d, s float64
	for i := range b {
		d = math.Max(d, math.Abs(float64(a[i])-float64(b[i])))
		s = math.Max(s, math.Abs(float64(b[i])))
	}
	return d / math.Max(s, 1e-6)
}

// LayeredBatch returns synth.Layered graphs with hop sets up to kmax and
// the batch of all of them.
func LayeredBatch(t testing.TB, seed uint64, graphs, kmax int) (*data.Dataset, *data.Hops, *data.Batch) {
	t.Helper()
	ds, hops, err := synth.Layered(seed, graphs, 3, [2]int{3, 6}, [2]int{1, 3}, kmax)
	if err != nil {
		t.Fatal(err)
	}
	idx := make([]int, graphs)
	for i := range idx {
		idx[i] = i
	}
	b, err := data.NewBatch(ds, hops, idx, kmax)
	if err != nil {
		t.Fatal(err)
	}
	return ds, hops, b
}

// Config returns the configuration of the model m of an SP-MPNN kind,
// its ε set to 0.1 and learnable, for task with out outputs on a dataset
// with numLabels node labels and attrDim attributes.
func Config(m modelspec.Model, task string, out, numLabels, attrDim int) models.Config {
	m.Eps, m.LearnEps = 0.1, true
	return models.Config{
		Model:     m,
		NumLabels: numLabels, AttrDim: attrDim, Task: task, Out: out,
	}
}

// OpCase is one differentiable op under a finite-difference check.
type OpCase struct {
	Name   string
	Op     op.Op
	In     [][]float32
	Shapes [][]int
	// Diff marks the inputs whose gradient is checked (nil = all).
	Diff []bool
	// H is the central-difference step, Tol the tolerance:
	// |analytic − numeric| ≤ Tol·(1 + |numeric|).
	H, Tol float64
	// ZeroFrom > 0 requires the output values from that index on (the
	// padding rows) to be zero.
	ZeroFrom int
	// Scalar marks an op with a scalar output (a loss).
	Scalar bool
}

// GradThroughGorgonia returns the gradients of L = Σ r·op(in) (L = op(in)
// for a scalar op) with respect to the checked inputs (c.Diff), computed by
// gorgonia.Grad over the op's SymDiff and run on a TapeMachine
// (optest.Gradients).
func GradThroughGorgonia(t testing.TB, c OpCase, r []float32) [][]float32 {
	t.Helper()
	var out [][]float32
	for i, g := range optest.Gradients(t, c.Name, c.Op, c.In, r) {
		if c.Diff == nil || c.Diff[i] {
			out = append(out, g)
		}
	}
	return out
}

// CheckOpGrad compares the Gorgonia gradient of c.Op with central
// differences of its Do, in float32 arithmetic with L summed in float64.
func CheckOpGrad(t testing.TB, c OpCase) {
	t.Helper()
	vals := func() []G.Value {
		vs := make([]G.Value, len(c.In))
		for i, v := range c.In {
			vs[i] = tensor.New(tensor.WithShape(c.Shapes[i]...), tensor.WithBacking(v))
		}
		return vs
	}
	y0, err := op.Adapt(nil, c.Op).Do(vals()...)
	if err != nil {
		t.Fatalf("%s: %v", c.Name, err)
	}
	if c.ZeroFrom > 0 {
		for i, v := range y0.Data().([]float32)[c.ZeroFrom:] {
			if v != 0 {
				t.Fatalf("%s: padding output [%d] = %v, want 0", c.Name, c.ZeroFrom+i, v)
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
		y, err := op.Adapt(nil, c.Op).Do(vals()...)
		if err != nil {
			t.Fatalf("%s: %v", c.Name, err)
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
		t.Fatalf("%s: output holds %T", c.Name, y.Data())
		return 0
	}
	grads := GradThroughGorgonia(t, c, append([]float32(nil), r...))
	gi := 0
	for i, in := range c.In {
		if c.Diff != nil && !c.Diff[i] {
			continue
		}
		an := grads[gi]
		gi++
		if len(an) != len(in) {
			t.Fatalf("%s: gradient of input %d has %d values, want %d", c.Name, i, len(an), len(in))
		}
		for j := range in {
			old := in[j]
			in[j] = old + float32(c.H)
			lp := loss()
			in[j] = old - float32(c.H)
			lm := loss()
			in[j] = old
			num := (lp - lm) / (2 * c.H)
			if d := math.Abs(float64(an[j]) - num); !(d <= c.Tol*(1+math.Abs(num))) { // NaN fails
				t.Errorf("%s: d input%d[%d] analytic %.6g numeric %.6g", c.Name, i, j, an[j], num)
				break
			}
		}
	}
}

// RandFloats returns n normal floats times scale.
func RandFloats(rng *rand.Rand, n int, scale float64) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = float32(scale * rng.NormFloat64())
	}
	return s
}

// RandomHopSets returns k random (asymmetric) CSRs over n nodes.
func RandomHopSets(rng *rand.Rand, n, k int) []data.CSR {
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

// ConstFloats returns n copies of v.
func ConstFloats(n int, v float32) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = v
	}
	return s
}

// DropMask returns an inverted-dropout mask of n entries for rate p.
func DropMask(rng *rand.Rand, n int, p float64) []float32 {
	m := make([]float32, n)
	for i := range m {
		if rng.Float64() >= p {
			m[i] = float32(1 / (1 - p))
		}
	}
	return m
}

// ConstFloat64 returns n copies of v.
func ConstFloat64(n int, v float64) []float64 {
	s := make([]float64, n)
	for i := range s {
		s[i] = v
	}
	return s
}

// AttnBatch returns a batch of random graphs with their hop sets up to
// kmax: sizes from sizes (0 = an empty graph); every graph of 6 or more
// nodes has two components, so unreachable pairs occur.
func AttnBatch(t testing.TB, seed uint64, sizes []int, kmax int) (*data.Dataset, *data.Batch) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 3))
	ds := &data.Dataset{Name: "attn", NumLabels: 3, NumClasses: 2}
	for gi, n := range sizes {
		var edges [][2]int
		cut := n
		if n >= 6 {
			cut = n - 2 // nodes cut.. form a second component
		}
		for v := 1; v < cut; v++ { // a random tree on 0..cut-1, plus chords
			edges = append(edges, [2]int{rng.IntN(v), v})
		}
		for i := 0; i < cut/3; i++ {
			u, v := rng.IntN(cut), rng.IntN(cut)
			if u != v && !hasEdge(edges, u, v) {
				edges = append(edges, [2]int{u, v})
			}
		}
		if cut < n {
			edges = append(edges, [2]int{cut, cut + 1})
		}
		g, err := data.FromEdges(n, edges)
		if err != nil {
			t.Fatal(err)
		}
		g.Labels = make([]int32, n)
		for u := range g.Labels {
			g.Labels[u] = int32(rng.IntN(3))
		}
		g.Y = gi % 2
		ds.Graphs = append(ds.Graphs, g)
	}
	hops, err := sp.Compute(context.Background(), ds.Graphs, kmax, false, 1)
	if err != nil {
		t.Fatal(err)
	}
	idx := make([]int, len(sizes))
	for i := range idx {
		idx[i] = i
	}
	b, err := data.NewBatch(ds, hops, idx, kmax)
	if err != nil {
		t.Fatal(err)
	}
	return ds, b
}

func hasEdge(edges [][2]int, u, v int) bool {
	for _, e := range edges {
		if (e[0] == u && e[1] == v) || (e[0] == v && e[1] == u) {
			return true
		}
	}
	return false
}

// BFS returns the distance matrix of graph j of b (-1 = unreachable).
// BFS returns the distances between the nodes of graph j of b (-1:
// unreachable).
func BFS(b *data.Batch, j int) [][]int {
	p0, p1 := int(b.GraphPtr[j]), int(b.GraphPtr[j+1])
	n := p1 - p0
	dist := make([][]int, n)
	for s := 0; s < n; s++ {
		dist[s] = make([]int, n)
		for i := range dist[s] {
			dist[s][i] = -1
		}
		dist[s][s] = 0
		q := []int{s}
		for len(q) > 0 {
			u := q[0]
			q = q[1:]
			for _, v := range b.Adj.Row(p0 + u) {
				if w := int(v) - p0; dist[s][w] < 0 {
					dist[s][w] = dist[s][u] + 1
					q = append(q, w)
				}
			}
		}
	}
	return dist
}

// RefCase is a float64 reference forward of an op for the float64
// finite-difference check.
type RefCase struct {
	OpCase
	Ref func(in [][]float64) []float64
}

// To64 returns x in float64.
func To64(x []float32) []float64 {
	y := make([]float64, len(x))
	for i, v := range x {
		y[i] = float64(v)
	}
	return y
}

// CheckRef checks (a) the float32 op forward against the float64 reference
// and (b) the op's analytic gradients (Gorgonia over SymDiff) against
// central differences of the float64 reference with a small step.
func CheckRef(t testing.TB, c RefCase) {
	t.Helper()
	vals := make([]G.Value, len(c.In))
	in64 := make([][]float64, len(c.In))
	for i, v := range c.In {
		vals[i] = tensor.New(tensor.WithShape(c.Shapes[i]...), tensor.WithBacking(append([]float32(nil), v...)))
		in64[i] = To64(v)
	}
	y, err := op.Adapt(nil, c.Op).Do(vals...)
	if err != nil {
		t.Fatalf("%s: %v", c.Name, err)
	}
	y32 := y.Data().([]float32)
	y64 := c.Ref(in64)
	if len(y64) != len(y32) {
		t.Fatalf("%s: reference has %d outputs, op %d", c.Name, len(y64), len(y32))
	}
	for i := range y64 {
		if d := math.Abs(float64(y32[i]) - y64[i]); d > 1e-4*(1+math.Abs(y64[i])) {
			t.Fatalf("%s: output[%d] = %v, float64 reference %v", c.Name, i, y32[i], y64[i])
		}
	}
	rng := rand.New(rand.NewPCG(11, 11))
	r := RandFloats(rng, len(y32), 1)
	grads := GradThroughGorgonia(t, c.OpCase, r)
	loss := func() float64 {
		var s float64
		for i, v := range c.Ref(in64) {
			s += v * float64(r[i])
		}
		return s
	}
	const h = 1e-6
	gi := 0
	for i := range in64 {
		if c.Diff != nil && !c.Diff[i] {
			continue
		}
		an := grads[gi]
		gi++
		if len(an) != len(in64[i]) {
			t.Fatalf("%s: gradient of input %d has %d values, want %d", c.Name, i, len(an), len(in64[i]))
		}
		for _, j := range sampleIdx(rng, len(in64[i]), 48) {
			old := in64[i][j]
			in64[i][j] = old + h
			lp := loss()
			in64[i][j] = old - h
			lm := loss()
			in64[i][j] = old
			num := (lp - lm) / (2 * h)
			if d := math.Abs(float64(an[j]) - num); d > 1e-3*(1+math.Abs(num)) {
				t.Errorf("%s: d input%d[%d] analytic %.7g, float64 numeric %.7g", c.Name, i, j, an[j], num)
				break
			}
		}
	}
}

// sampleIdx returns up to k distinct indices of [0,n): the first and last
// and random others, in increasing order.
func sampleIdx(rng *rand.Rand, n, k int) []int {
	if n <= k {
		idx := make([]int, n)
		for i := range idx {
			idx[i] = i
		}
		return idx
	}
	seen := map[int]bool{0: true, n - 1: true}
	for len(seen) < k {
		seen[rng.IntN(n)] = true
	}
	idx := make([]int, 0, k)
	for i := 0; i < n; i++ {
		if seen[i] {
			idx = append(idx, i)
		}
	}
	return idx
}

// AwayFromZero moves entries out of (-0.05, 0.05) so that no central
// difference crosses the ReLU kink.
func AwayFromZero(x []float32) []float32 {
	for i, v := range x {
		if math.Abs(float64(v)) < 0.05 {
			x[i] = 0.1
		}
	}
	return x
}

// AgnDataset returns n random graphs of 2..maxN nodes with labels in
// [0,labels) and attrDim attributes; the class is 1 when label 0 occurs
// more often than label 1 (a function of the label multiset only, which
// the baseline can represent).
func AgnDataset(t testing.TB, seed uint64, n, maxN, labels, attrDim int) *data.Dataset {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 1))
	ds := &data.Dataset{Name: "agn", NumLabels: labels, AttrDim: attrDim, NumClasses: 2}
	for i := 0; i < n; i++ {
		nn := 2 + rng.IntN(maxN-1)
		var edges [][2]int
		for u := 1; u < nn; u++ {
			edges = append(edges, [2]int{rng.IntN(u), u})
		}
		g, err := data.FromEdges(nn, edges)
		if err != nil {
			t.Fatal(err)
		}
		cnt := [2]int{}
		for u := 0; u < nn; u++ {
			l := int32(rng.IntN(labels))
			g.Labels = append(g.Labels, l)
			if l < 2 {
				cnt[l]++
			}
			for a := 0; a < attrDim; a++ {
				g.Attrs = append(g.Attrs, float32(rng.NormFloat64()))
			}
		}
		if cnt[0] > cnt[1] {
			g.Y = 1
		}
		ds.Graphs = append(ds.Graphs, g)
	}
	return ds
}

// AgnConfig returns the baseline configuration for ds.
func AgnConfig(ds *data.Dataset, hidden int) models.Config {
	return models.Config{Model: modelspec.Model{Kind: "baseline", Hidden: hidden, Pool: "sum"},
		NumLabels: ds.NumLabels, AttrDim: ds.AttrDim, Task: models.TaskClassification, Out: ds.NumClasses}
}

// AgnBatch returns the batch of graphs idx of ds (no hop sets).
func AgnBatch(t testing.TB, ds *data.Dataset, idx []int) *data.Batch {
	t.Helper()
	b, err := data.NewBatch(ds, nil, idx, 0)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// CE is the cross-entropy loss and its gradient (kernels.CrossEntropy)
// for the tests that drive Forward/Backward by hand.
func CE(out []float32, y []int32, c int) (float64, []float32, []float32) {
	g := make([]float32, len(out))
	return kernels.CrossEntropy(g, 1, out, y, len(y), c), g, nil
}

// MSE is the MSE loss and its gradient (kernels.MSE).
func MSE(out []float32, target []float64) (float64, []float32) {
	g := make([]float32, len(out))
	return kernels.MSE(g, 1, out, target), g
}

// Trainable is what FitTyped drives of a model built on models/rt.
type Trainable interface {
	Params() []*param.Param
	Hops() int
	Step(b *data.Batch) (float64, []float32, error)
	Predict(b *data.Batch) ([]float32, error)
}

// TypedTask is a synthetic dataset with its hop sets and split.
type TypedTask struct {
	DS          *data.Dataset
	Hops        *data.Hops
	Train, Test []int
}

// NewTypedTask returns the dataset gen makes (seed 11) and its first split
// (validation and test graphs together as the test set).
func NewTypedTask(t testing.TB, gen func(seed uint64, n, kmax int) (*data.Dataset, *data.Hops, error), graphs, kmax int) TypedTask {
	t.Helper()
	ds, hops, err := gen(11, graphs, kmax)
	if err != nil {
		t.Fatal(err)
	}
	s := ds.Splits[0]
	return TypedTask{DS: ds, Hops: hops, Train: s.Train, Test: append(append([]int(nil), s.Val...), s.Test...)}
}

// FitTyped trains m with Adam and returns its outputs on the test graphs
// and the test batch.
func FitTyped(t testing.TB, m Trainable, task TypedTask, epochs int, lr float64) ([]float32, *data.Batch) {
	t.Helper()
	opt := param.NewAdam(m.Params(), lr, 0)
	rng := rand.New(rand.NewPCG(5, 5))
	idx := append([]int(nil), task.Train...)
	for ep := 0; ep < epochs; ep++ {
		rng.Shuffle(len(idx), func(i, j int) { idx[i], idx[j] = idx[j], idx[i] })
		for lo := 0; lo < len(idx); lo += 32 {
			b, err := data.NewBatch(task.DS, task.Hops, idx[lo:min(lo+32, len(idx))], m.Hops())
			if err != nil {
				t.Fatal(err)
			}
			if _, _, err := m.Step(b); err != nil {
				t.Fatal(err)
			}
			opt.Step()
		}
	}
	b, err := data.NewBatch(task.DS, task.Hops, task.Test, m.Hops())
	if err != nil {
		t.Fatal(err)
	}
	out, err := m.Predict(b)
	if err != nil {
		t.Fatal(err)
	}
	return out, b
}

// TypedConfig returns the configuration of kind for ds: k hops, 2 layers,
// width 32, pooling pool.
func TypedConfig(kind string, k int, pool string, ds *data.Dataset) models.Config {
	cfg, err := models.ConfigFor(modelspec.Model{Kind: kind, K: k, Layers: 2, Hidden: 32, Pool: pool}, ds)
	if err != nil {
		panic(err)
	}
	return cfg
}

// HopsOf computes the hop sets N_1..N_kmax of ds.
func HopsOf(t testing.TB, ds *data.Dataset, kmax int) *data.Hops {
	t.Helper()
	hops, err := sp.Compute(context.Background(), ds.Graphs, kmax, false, 2)
	if err != nil {
		t.Fatal(err)
	}
	return hops
}

// QM9U0 returns the first n molecules of the mirror's QM9 validation file
// (4 bond types as relations, 15 node attributes) regressing U0 alone.
func QM9U0(t testing.TB, n int) *data.Dataset {
	t.Helper()
	ds, err := qm9.LoadN(filepath.Join(mirrortest.Dir(t), "qm9", "valid.jsonl.gz"), "valid", n)
	if err != nil {
		t.Fatal(err)
	}
	u0, err := qm9.TargetIndex("U0")
	if err != nil {
		t.Fatal(err)
	}
	ds.NumTargets = 1
	for j := range ds.Graphs {
		ds.Graphs[j].Target = ds.Graphs[j].Target[u0 : u0+1]
	}
	return ds
}

// MAEAgainstMean returns the test MAE of out (the outputs on batch b of
// task.Test, one target) and that of predicting the training targets' mean.
func MAEAgainstMean(task TypedTask, out []float32, b *data.Batch) (mae, meanMAE float64) {
	var mean float64
	for _, j := range task.Train {
		mean += task.DS.Graphs[j].Target[0]
	}
	mean /= float64(len(task.Train))
	base := make([]float32, len(b.Target))
	for i := range base {
		base[i] = float32(mean)
	}
	mae, _ = metric.MAEOf(out, b.Target)
	meanMAE, _ = metric.MAEOf(base, b.Target)
	return mae, meanMAE
}
