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

// TestAdamBlocksSameBits checks that StepBlocks gives the bits of Step when
// the blocks run concurrently and out of order, for parameters spanning
// several blocks (and a frozen one), and that CheckFinite names the first
// bad parameter as Param.CheckFinite does, wherever the bad value is.
func TestAdamBlocksSameBits(t *testing.T) {
	mk := func() []*Param {
		sizes := []int{3, blockLen + 5, 2*blockLen + 1, 1}
		var ps []*Param
		for i, n := range sizes {
			p := NewParam(string(rune('a'+i)), n)
			for j := range p.W {
				p.W[j] = float32(math.Sin(float64(i*7919 + j)))
			}
			ps = append(ps, p)
		}
		ps[3].Frozen = true
		ps[1].NoDecay = true
		return ps
	}
	concurrent := Blocks(func(n int, f func(b int)) {
		done := make(chan struct{})
		for b := n - 1; b >= 0; b-- {
			go func() { f(b); done <- struct{}{} }()
		}
		for range n {
			<-done
		}
	})
	serial, par := mk(), mk()
	serialOpt, parOpt := NewAdam(serial, 0.01, 1e-4), NewAdam(par, 0.01, 1e-4)
	for step := range 3 {
		for _, ps := range [][]*Param{serial, par} {
			for i, p := range ps {
				for j := range p.G {
					p.G[j] = float32(math.Cos(float64(step*31 + i*17 + j)))
				}
			}
		}
		if err := parOpt.CheckFinite(concurrent); err != nil {
			t.Fatalf("finite parameters: %v", err)
		}
		serialOpt.Step()
		parOpt.StepBlocks(concurrent)
		for i := range serial {
			for j := range serial[i].W {
				if math.Float32bits(serial[i].W[j]) != math.Float32bits(par[i].W[j]) {
					t.Fatalf("step %d: %s[%d] = %v in blocks, %v serially", step, serial[i].Name, j, par[i].W[j], serial[i].W[j])
				}
				if par[i].G[j] != 0 {
					t.Fatalf("step %d: gradient of %s[%d] not cleared", step, par[i].Name, j)
				}
			}
		}
	}
	// A NaN gradient in the third parameter's second block and an Inf value
	// in the fourth: the third is reported, as the serial loop would.
	par[2].G[blockLen+3] = float32(math.NaN())
	par[3].W[0] = float32(math.Inf(1))
	err := parOpt.CheckFinite(concurrent)
	want := par[2].CheckFinite()
	if err == nil || want == nil || err.Error() != want.Error() {
		t.Fatalf("CheckFinite = %v, want %v", err, want)
	}
}
