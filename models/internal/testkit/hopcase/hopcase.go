// Package hopcase is the hop kernels' test case: a batch of layered
// graphs over more than one chunk of rows and the CPU op's results on it
// (models/nbop's HopCombine, the reference). It is for tests only, apart
// from kerntest, which the device ops' tests of nbop and rt import.
package hopcase

import (
	"math/rand/v2"
	"testing"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/internal/testkit/kerntest"
	"github.com/spn-project/spn/internal/testkit/synth"
	"github.com/spn-project/spn/models/kernels"
	"github.com/spn-project/spn/models/nbop"
	"github.com/spn-project/spn/models/rt"
)

// Batch returns the hop kernels' test batch: every graph of
// synth.Layered(5, 24, 3, …) with hop sets up to k, more than one chunk of
// rows (kernels.ChunkRows) in all.
func Batch(t testing.TB, k int) *data.Batch {
	t.Helper()
	ds, hops, err := synth.Layered(5, 24, 3, [2]int{3, 6}, [2]int{2, 5}, k)
	if err != nil {
		t.Fatal(err)
	}
	b := kerntest.AllGraphs(t, ds, hops, k)
	return b
}

// Case is the hop aggregation on LayeredBatch computed by the CPU op
// (models/nbop's HopCombine, the spn kind's): the reference the hop kernels
// are compared with.
type Case struct {
	B       *data.Batch
	N, K, W int
	D       *nbop.Data
	// H (n×w), the hop weights α = softmax(logits), ε and the output
	// gradient dY are the inputs; Y the output, Sums the hop sums S_i and
	// Grad the gradients of H, α and ε.
	H, Alpha, Eps, DY, Y []float32
	Sums, Grad           [][]float32
}

// New runs HopCombine forward and backward over k hop sets and w
// columns on random inputs.
func New(t testing.TB, k, w int) *Case {
	t.Helper()
	b := Batch(t, k)
	n := b.N
	rng := rand.New(rand.NewPCG(1, 2))
	c := &Case{B: b, N: n, K: k, W: w, H: kerntest.Randn(rng, n*w, 1), DY: kerntest.Randn(rng, n*w, 1)}
	logits := kerntest.Randn(rng, k, 1)
	c.Eps, c.Alpha = []float32{0.3}, make([]float32, k)
	if err := rt.NewSoftmax("alpha", k).Forward([][]float32{logits}, c.Alpha); err != nil {
		t.Fatal(err)
	}
	c.D = &nbop.Data{}
	c.D.SetHop1(b, b.Hop[:k])
	be := kernels.CPU{Threads: 2}
	op := &nbop.HopCombine{ID: "agg", Be: be, D: c.D, K: k, N: n, W: w}
	in := [][]float32{c.H, c.Alpha, c.Eps}
	c.Y = make([]float32, n*w)
	if err := op.Forward(in, c.Y); err != nil {
		t.Fatal(err)
	}
	// The hop sums S_i the op keeps for its backward pass, by the same
	// kernel.
	c.Sums = make([][]float32, k)
	for i := range c.Sums {
		c.Sums[i] = make([]float32, n*w)
	}
	be.HopAggregateSums(make([]float32, n*w), c.Sums, c.H, kernels.HopMix{Hops: append([]data.CSR{c.D.Hop1}, c.D.Hops...), Coef: c.Alpha, Scale: 1 + c.Eps[0]}, n, w)
	c.Grad = [][]float32{make([]float32, n*w), make([]float32, k), make([]float32, 1)}
	if err := op.Backward(in, c.Y, c.DY, c.Grad); err != nil {
		t.Fatal(err)
	}
	return c
}

// Transposed returns the transposed hop sets the input gradient gathers
// over, in the order of the hop sets.
func (c *Case) Transposed() []data.CSR { return append([]data.CSR{c.D.Hop1T}, c.D.HopsT...) }
