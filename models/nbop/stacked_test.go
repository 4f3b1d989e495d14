package nbop

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/internal/testkit/kerntest"
	"github.com/spn-project/spn/internal/testkit/synth"
	"github.com/spn-project/spn/models/cuda"
	"github.com/spn-project/spn/models/cuda/engine"
	"github.com/spn-project/spn/models/internal/testkit/enginetest"
	"github.com/spn-project/spn/models/internal/testkit/optest"
	"github.com/spn-project/spn/models/kernels"
	"github.com/spn-project/spn/models/op"
)

// stackedShape is one shape of the stacked forms: X of M blocks, RelAgg's
// R relations read from block From, RelCombine over k hops, pad padding
// rows (N = n + pad).
type stackedShape struct {
	name               string
	m, r, from, k, pad int
}

// stackedShapes are R-SPN's (M = 2 + R, the relations from block 2) and
// two others: relations from block 0 (sharing S's and H's blocks) without
// padding rows and k = 1 (no higher hops: dH = 0), and M = 2 with the
// one relation reading H's block.
var stackedShapes = []stackedShape{
	{"R-SPN M=6 R=4 From=2 k=3 pad=7", 6, 4, 2, 3, 7},
	{"M=3 R=3 From=0 k=1 pad=0", 3, 3, 0, 1, 0},
	{"M=2 R=1 From=1 k=2 pad=3", 2, 1, 1, 2, 3},
}

// stackedData returns a batch of graphs synth.Relational graphs (hop sets
// up to k; 40 of them span more than one row chunk) and its data for
// r ≤ 4 relations: the graphs' relations r_1..r_3, then the adjacency as
// a fourth.
func stackedData(t *testing.T, graphs, k, r int) (*data.Batch, *Data) {
	t.Helper()
	ds, hops, err := synth.Relational(3, graphs, k)
	if err != nil {
		t.Fatal(err)
	}
	all := make([]int, graphs)
	for i := range all {
		all[i] = i
	}
	b, err := data.NewBatch(ds, hops, all, k)
	if err != nil {
		t.Fatal(err)
	}
	if graphs >= 40 && b.N <= kernels.ChunkRows {
		t.Fatalf("%d graphs of %d nodes: want more than one row chunk", graphs, b.N)
	}
	D := &Data{}
	if err := D.Set(b, Need{K: k, Relations: true}); err != nil {
		t.Fatal(err)
	}
	rels := append(append([]data.CSR(nil), b.Rel...), b.Adj)
	if r > len(rels) {
		t.Fatalf("%d relations: the batch gives %d", r, len(rels))
	}
	D.Rel, D.RelT = rels[:r], nil
	for _, a := range D.Rel {
		if err := data.CheckCSR(a, b.N); err != nil {
			t.Fatal(err)
		}
		D.RelT = append(D.RelT, kernels.Transpose(a))
	}
	return b, D
}

// stackedPair is an op's stacked form and its separate form over the same
// values: block b of the stacked X is the separate input blocks[b] (−1:
// an input of neither form, a zero gradient), and stacked input 1 + i is
// the separate input rest[i].
type stackedPair struct {
	name              string
	stacked, separate optest.Both
	in, sepIn         [][]float32
	blocks, rest      []int
}

// stackedPairs returns RelAgg's pair for shape sh over D (n real rows,
// N = n + sh.pad) with random values of width w.
func stackedPairs(sh stackedShape, D *Data, be kernels.Backend, w int, rng *rand.Rand) []stackedPair {
	N := D.N + sh.pad
	nw := N * w
	X := randFloats(rng, sh.m*nw, 1)
	block := func(b int) []float32 { return append([]float32(nil), X[b*nw:(b+1)*nw]...) }
	rBlocks := make([]int, sh.m)
	var rIn [][]float32
	for b := range rBlocks {
		rBlocks[b] = -1
		if j := b - sh.from; j >= 0 && j < sh.r {
			rBlocks[b] = j
			rIn = append(rIn, block(b))
		}
	}
	return []stackedPair{
		{
			name:     "relations",
			stacked:  RelAgg{ID: "rel", Be: be, D: D, R: sh.r, N: N, W: w, Stacked: sh.m, From: sh.from},
			separate: RelAgg{ID: "rel", Be: be, D: D, R: sh.r, N: N, W: w},
			in:       [][]float32{X},
			sepIn:    rIn,
			blocks:   rBlocks,
		},
	}
}

// probe returns a fixed random output gradient for o.
func probe(o op.Op) []float32 {
	return randFloats(rand.New(rand.NewPCG(7, 11)), op.Size(o.Sig().Out), 1)
}

// compareStacked requires the stacked form's output y and gradients g to
// be the separate form's (sy, sg) bit for bit: block b of dX the
// gradient of separate input p.blocks[b], or zero; the other gradients
// those of p.rest.
func compareStacked(t *testing.T, what string, p stackedPair, y []float32, g [][]float32, sy []float32, sg [][]float32) {
	t.Helper()
	kerntest.EqualBits(t, what+": output", y, sy)
	if len(g) != len(p.in) || len(sg) != len(p.sepIn) {
		t.Fatalf("%s: %d and %d gradients, want %d and %d", what, len(g), len(sg), len(p.in), len(p.sepIn))
	}
	nw := len(g[0]) / len(p.blocks)
	for b, i := range p.blocks {
		got := g[0][b*nw : (b+1)*nw]
		if i >= 0 {
			kerntest.EqualBits(t, fmt.Sprintf("%s: block %d of dX, separate gradient %d", what, b, i), got, sg[i])
			continue
		}
		for j, v := range got {
			if math.Float32bits(v) != 0 {
				t.Fatalf("%s: block %d of dX [%d] = %v, want 0", what, b, j, v)
			}
		}
	}
	for i, s := range p.rest {
		kerntest.EqualBits(t, fmt.Sprintf("%s: gradient %d, separate %d", what, 1+i, s), g[1+i], sg[s])
	}
}

// cpuRun returns o's output (Forward into NaN, so that a value left
// unset shows) and the gradients of ⟨o(in), r⟩ through Gorgonia
// (optest.Gradients: its buffers hold NaN, so that with Sig.Sets a value
// of the first gradient left unset shows).
func cpuRun(t *testing.T, name string, o op.Op, in [][]float32, r []float32) ([]float32, [][]float32) {
	t.Helper()
	y := make([]float32, op.Size(o.Sig().Out))
	for i := range y {
		y[i] = float32(math.NaN())
	}
	if err := o.Forward(in, y); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return y, optest.Gradients(t, name, o, in, r)
}

// TestStacked checks RelAgg's stacked form (one input X
// of M blocks of N rows) on the CPU against their separate forms over
// the same values, for R-SPN's shape and two others with and without
// padding rows, over 40 graphs (more than one row chunk, two threads):
// the output and every gradient the same bits, the blocks of dX the
// separate gradients and the blocks neither form reads zero.
func TestStacked(t *testing.T) {
	be := kernels.CPU{Threads: 2}
	for _, sh := range stackedShapes {
		_, D := stackedData(t, 40, sh.k, sh.r)
		rng := rand.New(rand.NewPCG(31, uint64(sh.m)))
		for _, p := range stackedPairs(sh, D, be, 5, rng) {
			what := sh.name + ": " + p.name
			r := probe(p.stacked)
			y, g := cpuRun(t, what+" stacked", p.stacked, p.in, r)
			sy, sg := cpuRun(t, what+" separate", p.separate, p.sepIn, r)
			compareStacked(t, what, p, y, g, sy, sg)
		}
	}
}

// TestStackedGradients checks the stacked forms' gradients against
// central differences (optest.CheckGrad, directly and through Gorgonia;
// the padding rows of the output zero) over 6 graphs.
func TestStackedGradients(t *testing.T) {
	be := kernels.CPU{Threads: 1}
	for _, sh := range stackedShapes {
		_, D := stackedData(t, 6, sh.k, sh.r)
		rng := rand.New(rand.NewPCG(32, uint64(sh.m)))
		for _, p := range stackedPairs(sh, D, be, 4, rng) {
			optest.CheckGrad(t, optest.Case{Name: sh.name + ": " + p.name, Op: p.stacked, In: p.in, ZeroFrom: D.N * 4})
		}
	}
}

// TestStackedErrors: settings of Stacked and From RelAgg does not
// take come back as errors naming the op and the fields from Forward,
// Backward and their device math (which refuse them before reading their
// inputs or the device), and Sig does not panic on them.
func TestStackedErrors(t *testing.T) {
	D := &Data{N: 2}
	tests := []struct {
		name string
		o    optest.Both
		want string
	}{
		{"relations past the blocks", RelAgg{ID: "r", D: D, R: 4, N: 2, W: 4, Stacked: 5, From: 2},
			"r: RelAgg.From + R = 2 + 4 > Stacked = 5: the relations read blocks From..From+R−1 of X's Stacked"},
		{"relations, more than the blocks", RelAgg{ID: "r", D: D, R: 3, N: 2, W: 4, Stacked: 2},
			"r: RelAgg.From + R = 0 + 3 > Stacked = 2: the relations read blocks From..From+R−1 of X's Stacked"},
		{"relations negative Stacked", RelAgg{ID: "r", D: D, R: 2, N: 2, W: 4, Stacked: -1},
			"r: RelAgg.R = 2, Stacked = -1, From = 0: want none negative"},
		{"relations negative From", RelAgg{ID: "r", D: D, R: 2, N: 2, W: 4, Stacked: 6, From: -1},
			"r: RelAgg.R = 2, Stacked = 6, From = -1: want none negative"},
		{"relations negative R", RelAgg{ID: "r", D: D, R: -1, N: 2, W: 4},
			"r: RelAgg.R = -1, Stacked = 0, From = 0: want none negative"},
		{"relations From without Stacked", RelAgg{ID: "r", D: D, R: 2, N: 2, W: 4, From: 2},
			"r: RelAgg.From = 2 without Stacked: From is the block of X_1 in a stacked input"},
	}
	for _, tc := range tests {
		_ = tc.o.Sig()
		errs := map[string]error{
			"Forward":        tc.o.Forward(nil, nil),
			"Backward":       tc.o.Backward(nil, nil, nil, nil),
			"DeviceForward":  tc.o.DeviceForward(nil, nil, nil),
			"DeviceBackward": tc.o.DeviceBackward(nil, nil, nil, nil, nil),
		}
		for f, err := range errs {
			if err == nil || err.Error() != tc.want {
				t.Errorf("%s: %s: err = %v, want %q", tc.name, f, err, tc.want)
			}
		}
	}
	// From + R = Stacked is the last block: no error.
	ok := RelAgg{ID: "r", D: &Data{}, R: 4, N: 2, W: 4, Stacked: 6, From: 2}
	if err := ok.check(); err != nil {
		t.Errorf("relations in the last blocks: %v", err)
	}
	if s := ok.Sig(); len(s.In) != 1 || s.In[0][0] != 12 || s.In[0][1] != 4 {
		t.Errorf("stacked RelAgg's inputs %v, want [[12 4]]", s.In)
	}
}

// TestStackedOnDevice runs RelAgg's stacked form on the emulated device:
// against their separate forms there (DeviceForward and DeviceBackward
// into zeroed memory, as op's adaptor gives it) the output and every
// gradient the same bits, the blocks of dX neither form reads zero; and
// against the CPU (optest.CheckDevice) the same bits. R-SPN's shape and two others, over 40 graphs (more than one
// row chunk) with and without padding rows.
func TestStackedOnDevice(t *testing.T) { stackedOnDevice(t, enginetest.Emulated(t)) }

// TestGPUStackedOnDevice is TestStackedOnDevice on GPU 0 (it skips
// without one).
func TestGPUStackedOnDevice(t *testing.T) { stackedOnDevice(t, enginetest.GPU(t)) }

func stackedOnDevice(t *testing.T, e *engine.Engine) {
	be := kernels.CPU{Threads: 1}
	for _, sh := range stackedShapes {
		_, D := stackedData(t, 40, sh.k, sh.r)
		done := packed(t, e, D)
		rng := rand.New(rand.NewPCG(33, uint64(sh.m)))
		for _, p := range stackedPairs(sh, D, be, 5, rng) {
			what := sh.name + ": " + p.name
			r := probe(p.stacked)
			y, g := deviceRun(t, e, what+" stacked", p.stacked, p.in, r)
			sy, sg := deviceRun(t, e, what+" separate", p.separate, p.sepIn, r)
			compareStacked(t, what+" on the device", p, y, g, sy, sg)
			optest.CheckDevice(t, e, what, p.stacked, p.in, optest.Tol{})
		}
		done()
	}
}

// deviceRun runs o's DeviceForward and DeviceBackward on e over the
// inputs in and the output gradient dy, the output and the gradients in
// zeroed memory (op's adaptor's: o is a ZeroOut op, and the adaptor
// zeroes every gradient), the scratch poisoned with NaN; it returns the
// output and the gradients on the host.
func deviceRun(t *testing.T, e *engine.Engine, name string, o optest.Both, in [][]float32, dy []float32) ([]float32, [][]float32) {
	t.Helper()
	poison := e.PoisonScratch
	e.PoisonScratch = true
	defer func() { e.PoisonScratch = poison }()
	fail := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	upload := func(v []float32) *cuda.Buffer {
		t.Helper()
		b, err := cuda.NewBuffer(e.Context(), v)
		fail(err)
		t.Cleanup(func() { b.Free() })
		return b
	}
	ins, gs := make([]*cuda.Buffer, len(in)), make([]*cuda.Buffer, len(in))
	for i, v := range in {
		ins[i] = upload(v)
		var err error
		gs[i], err = e.Zeros(len(v))
		fail(err)
	}
	y, err := e.Zeros(op.Size(o.Sig().Out))
	fail(err)
	fail(o.DeviceForward(e, ins, y))
	fail(o.DeviceBackward(e, ins, y, upload(dy), gs))
	host := func(b *cuda.Buffer) []float32 {
		t.Helper()
		h := make([]float32, b.Len())
		fail(cuda.Download(h, b))
		return h
	}
	out, grads := host(y), make([][]float32, len(gs))
	for i, b := range gs {
		grads[i] = host(b)
	}
	fail(e.Reset())
	return out, grads
}

// relationShapes are the shapes of RelCombine (the relations in blocks
// 2..R+1): R-SPN's, and R = 2 with k = 1 (no higher hops) and no padding
// rows.
var relationShapes = []stackedShape{
	stackedShapes[0],
	{"M=4 R=2 From=2 k=1 pad=0", 4, 2, 2, 1, 0},
}

// TestStackedRelations checks RelCombine, R-SPN's whole combination over
// its stacked MLPs, against RelAgg and GivenFirstHop composed
// (R = RelAgg(X_1..X_R), then GivenFirstHop(S, R, H), dX_j = RelAgg's
// gradient of dR): the same bits on the CPU and on the emulated device;
// against finite differences (optest.CheckGrad); the device against the
// CPU (optest.CheckDevice, GivenFirstHop's tolerances: dα and dε in
// double on the device); and the setting it refuses.
func TestStackedRelations(t *testing.T) {
	e := enginetest.Emulated(t)
	be := kernels.CPU{Threads: 2}
	const w = 5
	for _, sh := range relationShapes {
		_, D := stackedData(t, 40, sh.k, sh.r)
		done := packed(t, e, D)
		N := D.N + sh.pad
		nw := N * w
		rng := rand.New(rand.NewPCG(34, uint64(sh.m)))
		X := randFloats(rng, sh.m*nw, 1)
		block := func(v []float32, b int) []float32 { return v[b*nw : (b+1)*nw] }
		alpha, eps := randFloats(rng, sh.k, 0.5), []float32{0.3}
		var xs [][]float32
		for j := 0; j < sh.r; j++ {
			xs = append(xs, append([]float32(nil), block(X, 2+j)...))
		}
		rel := RelAgg{ID: "rel", Be: be, D: D, R: sh.r, N: N, W: w}
		sep := GivenFirstHop{ID: "combine", Be: be, D: D, K: sh.k, N: N, W: w}
		in := [][]float32{X, alpha, eps}
		stacked := &RelCombine{ID: "combine", Be: be, D: D, K: sh.k, R: sh.r, N: N, W: w}
		what := sh.name
		r := probe(stacked)
		for _, dev := range []bool{false, true} {
			run := func(name string, o optest.Both, in [][]float32, r []float32) ([]float32, [][]float32) {
				if dev {
					return deviceRun(t, e, name, o, in, r)
				}
				return cpuRun(t, name, o, in, r)
			}
			where := fmt.Sprintf("%s, device %v", what, dev)
			R, _ := run(where+": relations", rel, xs, probe(rel))
			sy, sg := run(where+": combine", sep, [][]float32{block(X, 0), R, block(X, 1), alpha, eps}, r)
			_, rg := run(where+": relations' gradient", rel, xs, sg[1])
			y, g := run(where+": stacked", stacked, in, r)
			kerntest.EqualBits(t, where+": output", y, sy)
			for b := 0; b < sh.m; b++ {
				want := make([]float32, nw)
				switch {
				case b == 0:
					want = sg[0]
				case b == 1:
					want = sg[2]
				case b-2 < sh.r:
					want = rg[b-2]
				}
				kerntest.EqualBits(t, fmt.Sprintf("%s: block %d of dX", where, b), block(g[0], b), want)
			}
			kerntest.EqualBits(t, where+": dα", g[1], sg[3])
			kerntest.EqualBits(t, where+": dε", g[2], sg[4])
		}
		optest.CheckDevice(t, e, what, stacked, in, optest.Tol{Abs: 1e-4, Rel: 1e-5})
		done()
		_, small := stackedData(t, 6, sh.k, sh.r)
		Ns := small.N + sh.pad
		optest.CheckGrad(t, optest.Case{Name: sh.name + ": combine with relations",
			Op:       &RelCombine{ID: "combine", Be: be, D: small, K: sh.k, R: sh.r, N: Ns, W: 4},
			In:       [][]float32{randFloats(rng, sh.m*Ns*4, 1), randFloats(rng, sh.k, 0.5), {0.3}},
			ZeroFrom: small.N * 4})
	}
	D := &Data{N: 2}
	for _, c := range []struct {
		o    *RelCombine
		want string
	}{
		{&RelCombine{ID: "c", D: D, K: 2, R: -1, N: 2, W: 4}, "c: RelCombine.R = -1: want R ≥ 0 relations"},
	} {
		_ = c.o.Sig()
		for f, err := range map[string]error{
			"Forward":        c.o.Forward(nil, nil),
			"Backward":       c.o.Backward(nil, nil, nil, nil),
			"DeviceForward":  c.o.DeviceForward(nil, nil, nil),
			"DeviceBackward": c.o.DeviceBackward(nil, nil, nil, nil, nil),
		} {
			if err == nil || err.Error() != c.want {
				t.Errorf("%+v: %s: %v, want %q", c.o, f, err, c.want)
			}
		}
	}
	if s := (&RelCombine{ID: "c", K: 3, R: 4, N: 2, W: 4}).Sig(); fmt.Sprint(s.In) != "[[12 4] [3] [1]]" || !s.Sets {
		t.Errorf("RelCombine: inputs %v (Sets %v), want [[12 4] [3] [1]] (Sets)", s.In, s.Sets)
	}
}

// packed puts D's hop sets and relations on e's device (PackTyped, one
// upload) for a test; the function it returns takes them off again.
func packed(t *testing.T, e *engine.Engine, D *Data) func() {
	t.Helper()
	var pk cuda.Pack
	release, err := D.PackTyped(&pk)
	if err != nil {
		t.Fatal(err)
	}
	buf, err := pk.Upload(e.Context(), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	return func() {
		t.Helper()
		release()
		if err := buf.Free(); err != nil {
			t.Fatal(err)
		}
	}
}
