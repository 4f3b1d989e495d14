package engine_test

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"gorgonia.org/tensor"

	"github.com/spn-project/spn/models/cuda/engine"
	"github.com/spn-project/spn/models/internal/testkit/enginetest"
)

// builtinMatTol bounds |device − CPU| of a MatMul value relative to the
// sum of the magnitudes of its products: cuBLAS orders and blocks the
// products its own way.
const builtinMatTol = 1e-5

// TestBuiltins runs the Gorgonia built-ins of the baseline's graph through
// gorgonia/tensor's API (tensor.MatMul, Mul, Gte, Repeat, Sum: the calls
// Gorgonia's ops make) on device tensors of the emulated device and on
// host tensors of the CPU engine.
func TestBuiltins(t *testing.T) { builtins(t, enginetest.Emulated(t)) }

// TestGPUBuiltins is TestBuiltins on GPU 0 (it skips without one).
func TestGPUBuiltins(t *testing.T) { builtins(t, enginetest.GPU(t)) }

func builtins(t *testing.T, e *engine.Engine) {
	e.PoisonScratch = true
	t.Cleanup(func() {
		if err := e.Reset(); err != nil {
			t.Error(err)
		}
	})
	host := func(v []float32, shape ...int) *tensor.Dense {
		return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(append([]float32(nil), v...)))
	}
	dev := func(v []float32, shape ...int) *tensor.Dense {
		d, err := e.FromHost(v, shape...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = e.FreeTensor(d) })
		return d
	}
	down := func(v tensor.Tensor) []float32 {
		t.Helper()
		if _, ok := v.Engine().(*engine.Engine); !ok {
			t.Fatalf("result of engine %T, want the device engine", v.Engine())
		}
		h, err := e.ToHost(v)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	same := func(what string, got tensor.Tensor, want *tensor.Dense) {
		t.Helper()
		if !got.Shape().Eq(want.Shape()) {
			t.Fatalf("%s: shape %v on the device, %v on the CPU", what, got.Shape(), want.Shape())
		}
		g, w := down(got), want.Data().([]float32)
		for i := range w {
			if math.Float32bits(g[i]) != math.Float32bits(w[i]) {
				t.Fatalf("%s: value %d is %v on the device, %v on the CPU", what, i, g[i], w[i])
			}
		}
	}

	// MatMul: the product of the forward pass and its two gradients,
	// Aᵀ·B and A·Bᵀ, transposing the operands in place as Gorgonia's
	// linAlgBinOp does (T, undone after the product).
	for _, c := range []struct{ m, k, n int }{{1, 1, 1}, {7, 5, 3}, {40, 130, 9}} {
		for _, tr := range [][2]bool{{false, false}, {true, false}, {false, true}, {true, true}} {
			as, bs := []int{c.m, c.k}, []int{c.k, c.n}
			if tr[0] {
				as = []int{c.k, c.m}
			}
			if tr[1] {
				bs = []int{c.n, c.k}
			}
			av, bv := values(c.m*c.k, 1.3), values(c.k*c.n, -0.7)
			prod := func(a, b *tensor.Dense) tensor.Tensor {
				t.Helper()
				if tr[0] {
					if err := a.T(); err != nil {
						t.Fatal(err)
					}
					defer a.UT()
				}
				if tr[1] {
					if err := b.T(); err != nil {
						t.Fatal(err)
					}
					defer b.UT()
				}
				y, err := tensor.MatMul(a, b)
				if err != nil {
					t.Fatal(err)
				}
				return y
			}
			name := fmt.Sprintf("MatMul %dx%dx%d transposed %v", c.m, c.k, c.n, tr)
			want := prod(host(av, as...), host(bv, bs...)).Data().([]float32)
			got := down(prod(dev(av, as...), dev(bv, bs...)))
			// Σ|products| per output value.
			mag := prod(host(absAll(av), as...), host(absAll(bv), bs...)).Data().([]float32)
			for i := range want {
				if d := math.Abs(float64(got[i] - want[i])); d > builtinMatTol*float64(mag[i]) || math.IsNaN(float64(got[i])) {
					t.Fatalf("%s: value %d is %v on the device, %v on the CPU", name, i, got[i], want[i])
				}
			}
		}
	}

	// Into a tensor over host memory with the engine (the value of
	// Gorgonia's alloc instruction for a product's or a repeat's
	// register): the result is on the device, the host memory unwritten.
	for _, what := range []string{"MatMul", "Repeat"} {
		c := tensor.New(tensor.Of(tensor.Float32), tensor.WithShape(4, 3))
		hostMem := c.Data().([]float32)
		tensor.WithEngine(e)(c)
		var want tensor.Tensor
		var err error
		if what == "MatMul" {
			av, bv := values(8, 0.5), values(6, 0.25)
			_, err = tensor.MatMul(dev(av, 4, 2), dev(bv, 2, 3), tensor.WithReuse(c))
			want, _ = tensor.MatMul(host(av, 4, 2), host(bv, 2, 3))
		} else {
			rv := values(3, 0.75)
			_, err = e.RepeatReuse(dev(rv, 1, 3), c, 0, 4)
			want, _ = tensor.Repeat(host(rv, 1, 3), 0, 4)
		}
		if err != nil {
			t.Fatal(err)
		}
		same(what+" into a host tensor of the engine", c, want.(*tensor.Dense))
		for i, v := range hostMem {
			if v != 0 {
				t.Fatalf("%s into a host tensor of the engine: host value %d written (%v)", what, i, v)
			}
		}
	}

	x, s := values(6*5, 0.9), values(6*5, -1.1)
	x[3], x[4] = 0, float32(math.Copysign(0, -1))
	// Mul (Hadamard product): the same bits.
	y, err := tensor.Mul(dev(x, 6, 5), dev(s, 6, 5))
	if err != nil {
		t.Fatal(err)
	}
	wy, err := tensor.Mul(host(x, 6, 5), host(s, 6, 5))
	if err != nil {
		t.Fatal(err)
	}
	same("Mul", y, wy.(*tensor.Dense))

	// Gte with a scalar 0 in the tensor's type (Rectify's mask), with the
	// tensor on either side: the same bits.
	for _, left := range []bool{true, false} {
		cmp := func(a *tensor.Dense) tensor.Tensor {
			t.Helper()
			var r tensor.Tensor
			var err error
			if left {
				r, err = tensor.Gte(a, float32(0), tensor.AsSameType())
			} else {
				r, err = tensor.Gte(float32(0), a, tensor.AsSameType())
			}
			if err != nil {
				t.Fatal(err)
			}
			return r
		}
		same(fmt.Sprintf("Gte (tensor on the left: %v)", left), cmp(dev(x, 6, 5)), cmp(host(x, 6, 5)).(*tensor.Dense))
	}

	// Repeat of a row along axis 0 (BroadcastAdd's), and Sum along axis 0
	// (its gradient): the same bits, Sum over up to 128 rows; beyond, the
	// device adds 128-row partials.
	row := values(5, 2.1)
	r, err := tensor.Repeat(dev(row, 1, 5), 0, 9)
	if err != nil {
		t.Fatal(err)
	}
	wr, err := tensor.Repeat(host(row, 1, 5), 0, 9)
	if err != nil {
		t.Fatal(err)
	}
	same("Repeat", r, wr.(*tensor.Dense))
	for _, n := range []int{1, 6, 128, 300} {
		v := values(n*5, 0.3+float32(n))
		sum, err := tensor.Sum(dev(v, n, 5), 0)
		if err != nil {
			t.Fatal(err)
		}
		ws, err := tensor.Sum(host(v, n, 5), 0)
		if err != nil {
			t.Fatal(err)
		}
		if n <= 128 {
			same(fmt.Sprintf("Sum of %d rows", n), sum, ws.(*tensor.Dense))
			continue
		}
		g, w := down(sum), ws.Data().([]float32)
		for j := range w {
			mag := 0.0
			for i := 0; i < n; i++ {
				mag += math.Abs(float64(v[i*5+j]))
			}
			if d := math.Abs(float64(g[j] - w[j])); d > 1e-6*mag || math.IsNaN(float64(g[j])) {
				t.Fatalf("Sum of %d rows: column %d is %v on the device, %v on the CPU", n, j, g[j], w[j])
			}
		}
	}

	// What the engine does not do is refused with an error, never
	// computed on the host.
	for _, c := range []struct {
		name string
		run  func() error
		want string
	}{
		{"Sum of all values", func() error { _, err := tensor.Sum(dev(x, 6, 5)); return err }, "only a matrix along axis 0"},
		{"Repeat along axis 1", func() error { _, err := tensor.Repeat(dev(row, 1, 5), 1, 3); return err }, "only a row repeated along axis 0"},
		{"Gte as booleans", func() error { _, err := tensor.Gte(dev(x, 6, 5), float32(0)); return err }, "AsSameType"},
		{"Gte of two tensors", func() error { _, err := tensor.Gte(dev(x, 6, 5), dev(s, 6, 5)); return err }, "not supported"},
		{"Mul of other shapes", func() error { _, err := tensor.Mul(dev(x, 6, 5), dev(s, 5, 6)); return err }, "multiplying shapes"},
	} {
		err := c.run()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
}

func absAll(v []float32) []float32 {
	a := make([]float32, len(v))
	for i, x := range v {
		a[i] = float32(math.Abs(float64(x)))
	}
	return a
}
