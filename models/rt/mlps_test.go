package rt

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/spn-project/spn/internal/testkit/kerntest"
	"github.com/spn-project/spn/models/cuda"
	"github.com/spn-project/spn/models/cuda/engine"
	"github.com/spn-project/spn/models/internal/testkit/enginetest"
	"github.com/spn-project/spn/models/internal/testkit/modeltest"
	"github.com/spn-project/spn/models/internal/testkit/optest"
	"github.com/spn-project/spn/models/kernels"
)

// mlpsIn returns random inputs of m stacked MLPs of width d over N rows
// (x, then W₁, b₁, γ₁, β₁, W₂, b₂, γ₂, β₂ in NewMLPs' layout); beta is
// every β's value (10 keeps the ReLUs away from their kinks).
func mlpsIn(rng *rand.Rand, m, N, d int, beta float32) [][]float32 {
	in := [][]float32{modeltest.RandFloats(rng, N*d, 1)}
	for range 2 {
		in = append(in, modeltest.RandFloats(rng, m*d*d, 0.5), modeltest.RandFloats(rng, m*d, 0.5),
			modeltest.RandFloats(rng, m*d, 1), modeltest.ConstFloats(m*d, beta))
	}
	return in
}

// mlpsShapes are the input shapes of m stacked MLPs.
func mlpsShapes(m, N, d int) [][]int {
	w, v := []int{m * d, d}, []int{m * d}
	return [][]int{{N, d}, w, v, v, v, w, v, v, v}
}

// TestMLPsLayout: NewMLPs(m) holds the values of m MLPs drawn one after
// the other by NewMLP, block by block, and the stacked op's output,
// gradients and running statistics are the m fused MLPs' own bits, its
// input gradient theirs added in block order.
func TestMLPsLayout(t *testing.T) {
	const m, n, N, d = 3, 300, 320, 5
	stacked := NewMLPs("layer1", d, m, rand.New(rand.NewPCG(5, 6)))
	init := rand.New(rand.NewPCG(5, 6))
	var singles []MLP
	for b := 0; b < m; b++ {
		singles = append(singles, NewMLP(fmt.Sprintf("mlp%d", b), d, init))
	}
	ps := stacked.Params()
	if got := ps[0].Name; got != "layer1.lin1.w" {
		t.Errorf("first parameter %q", got)
	}
	for i, p := range ps {
		size := len(p.W) / m
		for b, s := range singles {
			if want := s.Params()[i].W; !slices.Equal(p.W[b*size:(b+1)*size], want) {
				t.Fatalf("parameter %s, block %d: %v, want MLP %d's %v", p.Name, b, p.W[b*size:(b+1)*size], b, want)
			}
		}
	}
	for _, st := range []*bnStats{stacked.st1, stacked.st2} {
		if len(st.RunMean) != m*d || len(st.RunVar) != m*d {
			t.Fatalf("running statistics of %d and %d values, want %d", len(st.RunMean), len(st.RunVar), m*d)
		}
	}

	rng := rand.New(rand.NewPCG(7, 8))
	be := Env{Backend: kernels.CPU{Threads: 2}}
	bd := &BatchData{N: n}
	in := mlpsIn(rng, m, N, d, 0.5)
	dy := modeltest.RandFloats(rng, m*N*d, 1)
	for _, train := range []bool{true, false} {
		stacked := NewMLPs("layer1", d, m, rand.New(rand.NewPCG(5, 6)))
		o := newMLPsOp("layer1", &stacked, graphOpts{be: be, bd: bd, train: train, update: train, N: N})
		y := make([]float32, m*N*d)
		if err := o.Forward(in, y); err != nil {
			t.Fatal(err)
		}
		g := make([][]float32, len(in))
		for i := range g {
			g[i] = make([]float32, len(in[i]))
		}
		if err := o.Backward(in, y, dy, g); err != nil {
			t.Fatal(err)
		}
		dx := make([]float32, N*d)
		for b := 0; b < m; b++ {
			s := NewMLP("one", d, rand.New(rand.NewPCG(1, 1)))
			one := newMLPOp("one", &s, graphOpts{be: be, bd: bd, train: train, update: train, N: N}, d)
			bin := o.block(in, b)
			yb := make([]float32, N*d)
			if err := one.Forward(bin, yb); err != nil {
				t.Fatal(err)
			}
			kerntest.EqualBits(t, fmt.Sprintf("train=%v: block %d's output", train, b), y[b*N*d:(b+1)*N*d], yb)
			gb := make([][]float32, len(bin))
			for i := range gb {
				gb[i] = make([]float32, len(bin[i]))
			}
			if err := one.Backward(bin, yb, dy[b*N*d:(b+1)*N*d], gb); err != nil {
				t.Fatal(err)
			}
			for i, v := range o.block(g, b)[1:] {
				kerntest.EqualBits(t, fmt.Sprintf("train=%v: block %d's gradient of input %d", train, b, i+1), v, gb[i+1])
			}
			for i, v := range gb[0] {
				if b == 0 {
					dx[i] = v
				} else {
					dx[i] += v
				}
			}
			if train {
				rm := stacked.st1.RunMean[b*d : (b+1)*d]
				if !slices.Equal(rm, s.st1.RunMean) {
					t.Errorf("block %d's first running mean %v, want %v", b, rm, s.st1.RunMean)
				}
				rv := stacked.st2.RunVar[b*d : (b+1)*d]
				if !slices.Equal(rv, s.st2.RunVar) {
					t.Errorf("block %d's second running variance %v, want %v", b, rv, s.st2.RunVar)
				}
			}
		}
		kerntest.EqualBits(t, fmt.Sprintf("train=%v: dx", train), g[0], dx)
	}
}

// TestMLPsGradients checks the stacked MLPs' backward pass against finite
// differences (optest.CheckGrad, directly and through Gorgonia), with
// padding rows, in both modes.
func TestMLPsGradients(t *testing.T) {
	const m, n, N, d = 3, 300, 320, 4
	rng := rand.New(rand.NewPCG(9, 10))
	be := Env{Backend: kernels.CPU{Threads: 2}}
	bd := &BatchData{N: n}
	for _, train := range []bool{true, false} {
		mlps := NewMLPs("layer1", d, m, rng)
		if !train { // the second batch norm's input is about 10·√d: σ = 10 keeps its ReLU away from the kink, as β = 10 does
			for j := range mlps.st2.RunVar {
				mlps.st2.RunVar[j] = 100
			}
		}
		modeltest.CheckOpGrad(t, modeltest.OpCase{Name: fmt.Sprintf("mlps train=%v", train), Op: newMLPsOp("layer1", &mlps, graphOpts{be: be, bd: bd, train: train, update: false, N: N}),
			In: mlpsIn(rng, m, N, d, 10), Shapes: mlpsShapes(m, N, d), H: 1e-2, Tol: 2e-2})
	}
}

// TestMLPsOnDevice runs the stacked MLPs on the emulated device: against
// the CPU within the MLP's tolerance (optest.CheckDevice: cuBLAS's
// products against the CPU's GEMM), and against the m fused MLPs' own
// device math bit for bit (outputs, the parameters' gradients, the
// running statistics; dx their input gradients added in block order).
func TestMLPsOnDevice(t *testing.T) { mlpsOnDevice(t, enginetest.Emulated(t), true) }

// TestGPUMLPsOnDevice is TestMLPsOnDevice on GPU 0 (it skips without one),
// the fused MLPs' device math within 1e-5 instead of bit for bit: cuBLAS
// may pick other kernels for a batch of products than for one.
func TestGPUMLPsOnDevice(t *testing.T) { mlpsOnDevice(t, enginetest.GPU(t), false) }

// mlpsOnDevice is TestMLPsOnDevice on e; exact asks for the fused MLPs'
// bits, else values within 1e-5 (absolute and relative).
func mlpsOnDevice(t *testing.T, e *engine.Engine, exact bool) {
	same := func(what string, got, want []float32) {
		t.Helper()
		if exact {
			kerntest.EqualBits(t, what, got, want)
			return
		}
		kerntest.Near(t, what, got, want, 1e-5, 1e-5)
	}
	same64 := func(got, want []float64) bool {
		for i := range got {
			if exact && got[i] != want[i] || math.Abs(got[i]-want[i]) > 1e-5*(1+math.Abs(want[i])) {
				return false
			}
		}
		return len(got) == len(want)
	}
	const m, n, N, d = 4, 300, 320, 5
	rng := rand.New(rand.NewPCG(11, 12))
	be := Env{Backend: kernels.CPU{Threads: 1}}
	bd := &BatchData{N: n}
	free := func(sts ...*bnStats) {
		for _, st := range sts {
			if st.Dev != nil {
				st.Dev.Free()
				st.Dev = nil
			}
		}
	}
	for _, train := range []bool{true, false} {
		mlps := NewMLPs("layer1", d, m, rng)
		optest.CheckDevice(t, e, fmt.Sprintf("mlps train=%v", train), newMLPsOp("layer1", &mlps, graphOpts{be: be, bd: bd, train: train, update: train, N: N}), mlpsIn(rng, m, N, d, 0.5), optest.Tol{Abs: 1e-4, Rel: 1e-4})
		free(mlps.st1, mlps.st2)
	}

	up := func(vs ...[]float32) []*cuda.Buffer {
		var bs []*cuda.Buffer
		for _, v := range vs {
			b, err := cuda.NewBuffer(e.Context(), v)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { b.Free() })
			bs = append(bs, b)
		}
		return bs
	}
	down := func(b *cuda.Buffer) []float32 {
		v := make([]float32, b.Len())
		if err := cuda.Download(v, b); err != nil {
			t.Fatal(err)
		}
		return v
	}
	zeros := func(n int) *cuda.Buffer { return up(make([]float32, n))[0] }
	host := mlpsIn(rng, m, N, d, 0.5)
	in := up(host...)
	dy := up(modeltest.RandFloats(rng, m*N*d, 1))[0]
	for _, train := range []bool{true, false} {
		mlps := NewMLPs("layer1", d, m, rand.New(rand.NewPCG(1, 2)))
		o := newMLPsOp("layer1", &mlps, graphOpts{be: be, bd: bd, train: train, update: train, N: N})
		y := zeros(m * N * d)
		if err := o.DeviceForward(e, in, y); err != nil {
			t.Fatal(err)
		}
		var g []*cuda.Buffer
		for _, v := range host {
			g = append(g, zeros(len(v)))
		}
		if err := o.DeviceBackward(e, in, y, dy, g); err != nil {
			t.Fatal(err)
		}
		ys, dys := down(y), down(dy)
		dx := make([]float32, N*d)
		for b := 0; b < m; b++ {
			s := NewMLP("one", d, rand.New(rand.NewPCG(1, 2)))
			one := newMLPOp("one", &s, graphOpts{be: be, bd: bd, train: train, update: train, N: N}, d)
			var bin []*cuda.Buffer
			for _, v := range o.block(host, b) {
				bin = append(bin, up(v)[0])
			}
			yb := zeros(N * d)
			if err := one.DeviceForward(e, bin, yb); err != nil {
				t.Fatal(err)
			}
			same(fmt.Sprintf("train=%v: block %d's output", train, b), ys[b*N*d:(b+1)*N*d], down(yb))
			var gb []*cuda.Buffer
			for _, v := range bin {
				gb = append(gb, zeros(v.Len()))
			}
			if err := one.DeviceBackward(e, bin, yb, up(dys[b*N*d : (b+1)*N*d])[0], gb); err != nil {
				t.Fatal(err)
			}
			var all [][]float32
			for _, x := range g {
				all = append(all, down(x))
			}
			for i, v := range o.block(all, b)[1:] {
				same(fmt.Sprintf("train=%v: block %d's gradient of input %d", train, b, i+1), v, down(gb[i+1]))
			}
			for i, v := range down(gb[0]) {
				if b == 0 {
					dx[i] = v
				} else {
					dx[i] += v
				}
			}
			if train {
				for i, pair := range [][2]*bnStats{{mlps.st1, s.st1}, {mlps.st2, s.st2}} {
					if err := pair[1].Dev.Download(pair[1]); err != nil {
						t.Fatal(err)
					}
					wide := &bnStats{RunMean: make([]float64, m*d), RunVar: make([]float64, m*d)}
					if err := pair[0].Dev.Download(wide); err != nil {
						t.Fatal(err)
					}
					if !same64(wide.RunMean[b*d:(b+1)*d], pair[1].RunMean) || !same64(wide.RunVar[b*d:(b+1)*d], pair[1].RunVar) {
						t.Errorf("block %d, batch norm %d: running statistics %v %v, want %v %v", b, i+1,
							wide.RunMean[b*d:(b+1)*d], wide.RunVar[b*d:(b+1)*d], pair[1].RunMean, pair[1].RunVar)
					}
				}
			}
			free(s.st1, s.st2)
		}
		same(fmt.Sprintf("train=%v: dx", train), down(g[0]), dx)
		free(mlps.st1, mlps.st2)
	}
}
