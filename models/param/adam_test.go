package param

import (
	"math"
	"testing"
)

// TestAdam checks two steps of Adam with L2 weight decay against the
// update written out by hand (PyTorch's torch.optim.Adam semantics), and
// that frozen parameters do not move.
func TestAdam(t *testing.T) {
	p := NewParam("p", 2)
	p.W[0], p.W[1] = 1, -2
	frozen := NewParam("f", 1)
	frozen.W[0] = 3
	frozen.Frozen = true
	opt := NewAdam([]*Param{p, frozen}, 0.1, 0.01)
	grads := [][2]float64{{0.5, -1}, {0.25, 2}}
	w := []float64{1, -2}
	m, v := []float64{0, 0}, []float64{0, 0}
	for step, g := range grads {
		p.G[0], p.G[1] = float32(g[0]), float32(g[1])
		frozen.G[0] = 7
		opt.Step()
		for i := range w {
			gi := g[i] + 0.01*w[i]
			m[i] = 0.9*m[i] + 0.1*gi
			v[i] = 0.999*v[i] + 0.001*gi*gi
			mh := m[i] / (1 - math.Pow(0.9, float64(step+1)))
			vh := v[i] / (1 - math.Pow(0.999, float64(step+1)))
			w[i] -= 0.1 * mh / (math.Sqrt(vh) + 1e-8)
			if math.Abs(float64(p.W[i])-w[i]) > 1e-6 {
				t.Fatalf("step %d: w[%d] = %v, want %v", step+1, i, p.W[i], w[i])
			}
		}
		if p.G[0] != 0 || frozen.G[0] != 0 {
			t.Fatal("Step must clear the gradients")
		}
	}
	if frozen.W[0] != 3 {
		t.Fatalf("frozen parameter moved to %v", frozen.W[0])
	}
}

// TestAdamMinimises runs Adam on f(w) = Σ (w_i − i)² and expects the minimum.
func TestAdamMinimises(t *testing.T) {
	p := NewParam("p", 4)
	opt := NewAdam([]*Param{p}, 0.05, 0)
	for range 2000 {
		for i := range p.W {
			p.G[i] = 2 * (p.W[i] - float32(i))
		}
		opt.Step()
	}
	for i, v := range p.W {
		if math.Abs(float64(v)-float64(i)) > 1e-2 {
			t.Fatalf("w[%d] = %v, want %d", i, v, i)
		}
	}
}
