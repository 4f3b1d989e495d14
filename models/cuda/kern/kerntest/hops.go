package kerntest

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/models/kernels"
	"github.com/spn-project/spn/models/nbop"
	"github.com/spn-project/spn/models/rt"
	"github.com/spn-project/spn/models/synth"
)

// Randn returns n values drawn from N(0, scale²).
func Randn(rng *rand.Rand, n int, scale float64) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(rng.NormFloat64() * scale)
	}
	return x
}

// AbsDot returns Σ|a_i·b_i|, the scale of a dot product's rounding.
func AbsDot(a, b []float32) float64 {
	var s float64
	for i := range a {
		s += math.Abs(float64(a[i]) * float64(b[i]))
	}
	return s
}

// LayeredBatch returns the hop kernels' test batch: every graph of
// synth.Layered(5, 24, 3, …) with hop sets up to k, more than one chunk of
// rows (kernels.ChunkRows) in all.
func LayeredBatch(t testing.TB, k int) *data.Batch {
	t.Helper()
	ds, hops, err := synth.Layered(5, 24, 3, [2]int{3, 6}, [2]int{2, 5}, k)
	if err != nil {
		t.Fatal(err)
	}
	all := make([]int, len(ds.Graphs))
	for i := range all {
		all[i] = i
	}
	b, err := data.NewBatch(ds, hops, all, k)
	if err != nil {
		t.Fatal(err)
	}
	if b.N <= kernels.ChunkRows {
		t.Fatalf("batch of %d nodes: want more than one chunk", b.N)
	}
	return b
}

// HopCase is the hop aggregation on LayeredBatch computed by the CPU op
// (models/nbop's Combine, the spn kind's): the reference the hop kernels
// are compared with.
type HopCase struct {
	B       *data.Batch
	N, K, W int
	D       *nbop.Data
	// H (n×w), the hop weights α = softmax(logits), ε and the output
	// gradient dY are the inputs; Y the output, Sums the hop sums S_i and
	// Grad the gradients of H, α and ε.
	H, Alpha, Eps, DY, Y []float32
	Sums, Grad           [][]float32
}

// NewHopCase runs Combine forward and backward over k hop sets and w
// columns on random inputs.
func NewHopCase(t testing.TB, k, w int) *HopCase {
	t.Helper()
	b := LayeredBatch(t, k)
	n := b.N
	rng := rand.New(rand.NewPCG(1, 2))
	c := &HopCase{B: b, N: n, K: k, W: w, H: Randn(rng, n*w, 1), DY: Randn(rng, n*w, 1)}
	logits := Randn(rng, k, 1)
	c.Eps, c.Alpha = []float32{0.3}, make([]float32, k)
	if err := rt.NewSoftmax("alpha", k).Forward([][]float32{logits}, c.Alpha); err != nil {
		t.Fatal(err)
	}
	c.D = &nbop.Data{N: n, G: b.NumGraphs, Ptr: b.GraphPtr, Hop1: b.Hop[0], Hop1T: kernels.Transpose(b.Hop[0])}
	for _, h := range b.Hop[1:k] {
		c.D.Hops = append(c.D.Hops, h)
		c.D.HopsT = append(c.D.HopsT, kernels.Transpose(h))
	}
	op := nbop.Combine{ID: "agg", Be: kernels.CPU{Threads: 2}, D: c.D, K: k, N: n, W: w, Hop1: true, Sums: &c.Sums}
	in := [][]float32{c.H, c.Alpha, c.Eps}
	c.Y = make([]float32, n*w)
	if err := op.Forward(in, c.Y); err != nil {
		t.Fatal(err)
	}
	c.Grad = [][]float32{make([]float32, n*w), make([]float32, k), make([]float32, 1)}
	if err := op.Backward(in, c.Y, c.DY, c.Grad); err != nil {
		t.Fatal(err)
	}
	return c
}

// Transposed returns the transposed hop sets the input gradient gathers
// over, in the order of the hop sets.
func (c *HopCase) Transposed() []data.CSR { return append([]data.CSR{c.D.Hop1T}, c.D.HopsT...) }

// BNTrain is batch norm + ReLU in training mode on the n×w rows of x as
// models/rt's op computes it from the CPU kernels: mean and biased
// variance from kernels.ColSums, μ and 1/√(σ²+eps), the running
// statistics updated with momentum (unbiased variance), x̂ and
// y = ReLU(g·x̂ + bt). runMean and runVar are left as they are; the
// updated statistics are returned.
func BNTrain(x, g, bt []float32, runMean, runVar []float64, n, w int, momentum, eps float64) (mu, inv, xhat, y []float32, newMean, newVar []float64) {
	be := kernels.CPU{Threads: 2}
	newMean, newVar = append([]float64(nil), runMean...), append([]float64(nil), runVar...)
	s := kernels.ColSums(be, x, nil, n, w)
	mean := make([]float64, w)
	for j := range mean {
		mean[j] = s[j] / float64(n)
	}
	sq := kernels.ColSums(be, x, mean, n, w)
	mu, inv = make([]float32, w), make([]float32, w)
	for j := range mean {
		v := sq[j] / float64(n)
		newMean[j] = (1-momentum)*newMean[j] + momentum*mean[j]
		newVar[j] = (1-momentum)*newVar[j] + momentum*(v*float64(n)/float64(n-1))
		mu[j], inv[j] = float32(mean[j]), float32(1/math.Sqrt(v+eps))
	}
	xhat, y = make([]float32, n*w), make([]float32, n*w)
	kernels.BNReLUForward(be, xhat, y, x, mu, inv, g, bt, n, w)
	return mu, inv, xhat, y, newMean, newVar
}
