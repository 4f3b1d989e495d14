package rt

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/spn-project/spn/models"
	"github.com/spn-project/spn/models/internal/testkit/modeltest"

	"github.com/spn-project/spn/models/kernels"
)

// The float64 checks: every op has a float64 reference forward written
// straight from its formula; central differences of the reference (step
// 1e-6, in float64, far below the reach of the ReLU and max kinks) must
// match the op's float32 gradients computed through gorgonia.Grad to
// float32 accuracy.

// ref64 is a float64 reference forward of an Op: inputs → output.
type ref64 func(in [][]float64) []float64

func to64(s []float32) []float64 {
	o := make([]float64, len(s))
	for i, v := range s {
		o[i] = float64(v)
	}
	return o
}

// check64 compares the Gorgonia gradients of c.Op with central differences
// of the reference f in float64.
func check64(t *testing.T, c modeltest.OpCase, f ref64) {
	t.Helper()
	in := make([][]float64, len(c.In))
	for i, v := range c.In {
		in[i] = to64(v)
	}
	y := f(in)
	rng := rand.New(rand.NewPCG(11, 11))
	r := make([]float32, len(y))
	for i := range r {
		r[i] = float32(rng.NormFloat64())
	}
	loss := func() float64 {
		y := f(in)
		if len(y) == 1 && len(r) == 1 && c.Scalar {
			return y[0]
		}
		var s float64
		for i, v := range y {
			s += v * float64(r[i])
		}
		return s
	}
	grads := modeltest.GradThroughGorgonia(t, c, append([]float32(nil), r...))
	const h = 1e-6
	gi := 0
	for i := range in {
		if c.Diff != nil && !c.Diff[i] {
			continue
		}
		an := grads[gi]
		gi++
		for j := range in[i] {
			old := in[i][j]
			in[i][j] = old + h
			lp := loss()
			in[i][j] = old - h
			lm := loss()
			in[i][j] = old
			num := (lp - lm) / (2 * h)
			if math.Abs(num-float64(an[j])) > 2e-4*(1+math.Abs(num)) {
				t.Errorf("%s: d input%d[%d] analytic %.7g, float64 numeric %.7g", c.Name, i, j, an[j], num)
				break
			}
		}
	}
}

func TestOpGradientsFloat64(t *testing.T) {
	be := Env{Backend: kernels.CPU{Threads: 2}}
	rng := rand.New(rand.NewPCG(21, 22))
	n, N, d, k := 150, 160, 4, 3
	hop := modeltest.RandomHopSets(rng, n, k)
	ptr := []int32{0, 7, 7, 40, 150}
	g, G := len(ptr)-1, 8
	labels := make([]int32, n)
	for i := range labels {
		labels[i] = int32(rng.IntN(3))
	}
	attrs := modeltest.RandFloats(rng, n*2, 1)
	ycls := []int32{1, 0, 2, 1}
	target := []float64{0.5, -1, 2, 0, 1, -0.5, 0.25, 3}
	bd := &BatchData{N: n, G: g, Hops: hop, Ptr: ptr, Labels: labels, Attrs: attrs, Y: ycls, Target: target}
	st := &bnStats{RunMean: make([]float64, d), RunVar: make([]float64, d), Momentum: 0.1, Eps: 1e-5}
	stEval := &bnStats{RunMean: []float64{0.3, -0.2, 0.1, 0}, RunVar: []float64{1.5, 0.8, 1.2, 2}, Momentum: 0.1, Eps: 1e-5}

	refs := []struct {
		c modeltest.OpCase
		f ref64
	}{
		{modeltest.OpCase{Name: "softmax", Op: NewSoftmax("alpha", k), In: [][]float32{modeltest.RandFloats(rng, k, 1)}, Shapes: [][]int{{k}}},
			func(in [][]float64) []float64 {
				var s float64
				y := make([]float64, len(in[0]))
				for i, v := range in[0] {
					y[i] = math.Exp(v)
					s += y[i]
				}
				for i := range y {
					y[i] /= s
				}
				return y
			}},
		{modeltest.OpCase{Name: "linear", Op: NewLinear("lin", be, bd, LinearOpts{N: N, In: d, Out: 3}),
			In: [][]float32{modeltest.RandFloats(rng, N*d, 1), modeltest.RandFloats(rng, d*3, 0.5), modeltest.RandFloats(rng, 3, 0.5)}, Shapes: [][]int{{N, d}, {d, 3}, {3}}},
			func(in [][]float64) []float64 { return linear64(in[0], in[1], in[2], n, N, d, 3) }},
		{modeltest.OpCase{Name: "linear graph-level", Op: NewLinear("readout", be, bd, LinearOpts{Graph: true, N: G, In: d, Out: 2}),
			In: [][]float32{modeltest.RandFloats(rng, G*d, 1), modeltest.RandFloats(rng, d*2, 0.5), modeltest.RandFloats(rng, 2, 0.5)}, Shapes: [][]int{{G, d}, {d, 2}, {2}}},
			func(in [][]float64) []float64 { return linear64(in[0], in[1], in[2], g, G, d, 2) }},
		{modeltest.OpCase{Name: "encoder", Op: newEncoder("enc", be, bd, encoderShape{NumLabels: 3, AttrDim: 2, N: N, D: d}),
			In: [][]float32{modeltest.RandFloats(rng, 3*d, 1), modeltest.RandFloats(rng, 2*d, 1), modeltest.RandFloats(rng, d, 1)}, Shapes: [][]int{{3, d}, {2, d}, {d}}},
			func(in [][]float64) []float64 {
				y := linear64(to64(attrs), in[1], in[2], n, N, 2, d)
				for u, l := range labels {
					for j := 0; j < d; j++ {
						y[u*d+j] += in[0][int(l)*d+j]
					}
				}
				return y
			}},
		{modeltest.OpCase{Name: "batchnorm-relu train", Op: newBNReLU("bn", graphOpts{be: be, bd: bd, train: true, update: false, N: N}, st, d),
			In: [][]float32{modeltest.RandFloats(rng, N*d, 1), {1, -0.8, 1.2, 0.7}, {0, 0.1, -0.2, 0.3}}, Shapes: [][]int{{N, d}, {d}, {d}}},
			func(in [][]float64) []float64 { return bn64(in, nil, n, N, d) }},
		{modeltest.OpCase{Name: "batchnorm-relu eval", Op: newBNReLU("bn", graphOpts{be: be, bd: bd, train: false, update: false, N: N}, stEval, d),
			In: [][]float32{modeltest.RandFloats(rng, N*d, 1), {1, -0.8, 1.2, 0.7}, {0, 0.1, -0.2, 0.3}}, Shapes: [][]int{{N, d}, {d}, {d}}},
			func(in [][]float64) []float64 { return bn64(in, stEval, n, N, d) }},
		{modeltest.OpCase{Name: "dropout", Op: newDropout("drop", G, 2),
			In: [][]float32{modeltest.RandFloats(rng, G*2, 1), modeltest.DropMask(rng, G*2, 0.4)}, Shapes: [][]int{{G, 2}, {G, 2}}, Diff: []bool{true, false}},
			func(in [][]float64) []float64 {
				y := make([]float64, len(in[0]))
				for i := range y {
					y[i] = in[0][i] * in[1][i]
				}
				return y
			}},
		{modeltest.OpCase{Name: "cross-entropy", Op: newCrossEntropy("ce", bd, G, 3), In: [][]float32{modeltest.RandFloats(rng, G*3, 1)}, Shapes: [][]int{{G, 3}}, Scalar: true},
			func(in [][]float64) []float64 {
				var l float64
				for i := 0; i < g; i++ {
					row := in[0][i*3 : i*3+3]
					var s float64
					for _, v := range row {
						s += math.Exp(v)
					}
					l += math.Log(s) - row[ycls[i]]
				}
				return []float64{l / float64(g)}
			}},
		{modeltest.OpCase{Name: "mse", Op: newMSE("mse", bd, G, 2), In: [][]float32{modeltest.RandFloats(rng, G*2, 1)}, Shapes: [][]int{{G, 2}}, Scalar: true},
			func(in [][]float64) []float64 {
				var l float64
				for i, tv := range target {
					e := in[0][i] - tv
					l += e * e
				}
				return []float64{l / float64(len(target))}
			}},
	}
	for _, kind := range []string{models.PoolSum, models.PoolMean, models.PoolMax} {
		p, err := newPool("pool", be, bd, poolOpts{Kind: kind, N: N, G: G, D: d})
		if err != nil {
			t.Fatal(err)
		}
		refs = append(refs, struct {
			c modeltest.OpCase
			f ref64
		}{modeltest.OpCase{Name: "pool " + kind, Op: p, In: [][]float32{modeltest.RandFloats(rng, N*d, 1)}, Shapes: [][]int{{N, d}}},
			func(in [][]float64) []float64 {
				y := make([]float64, G*d)
				for gi := 0; gi < g; gi++ {
					a, b := int(ptr[gi]), int(ptr[gi+1])
					for j := 0; j < d && b > a; j++ {
						acc := in[0][a*d+j]
						for r := a + 1; r < b; r++ {
							v := in[0][r*d+j]
							if kind == models.PoolMax {
								acc = math.Max(acc, v)
							} else {
								acc += v
							}
						}
						if kind == models.PoolMean {
							acc /= float64(b - a)
						}
						y[gi*d+j] = acc
					}
				}
				return y
			}})
	}
	for _, rc := range refs {
		rc.c.Name = fmt.Sprintf("%s (float64 reference)", rc.c.Name)
		check64(t, rc.c, rc.f)
	}
}

// linear64 is y = x·W + b on the first n of N rows (zero padding rows).
func linear64(x, w, b []float64, n, N, in, out int) []float64 {
	y := make([]float64, N*out)
	for r := 0; r < n; r++ {
		for o := 0; o < out; o++ {
			s := b[o]
			for i := 0; i < in; i++ {
				s += x[r*in+i] * w[i*out+o]
			}
			y[r*out+o] = s
		}
	}
	return y
}

// bn64 is ReLU(γ·(x−μ)/√(σ²+1e-5) + β) over the first n of N rows, with
// batch statistics (st == nil) or st's running statistics.
func bn64(in [][]float64, st *bnStats, n, N, d int) []float64 {
	x, gm, bt := in[0], in[1], in[2]
	y := make([]float64, N*d)
	for j := 0; j < d; j++ {
		var mu, v float64
		if st == nil {
			for r := 0; r < n; r++ {
				mu += x[r*d+j]
			}
			mu /= float64(n)
			for r := 0; r < n; r++ {
				v += (x[r*d+j] - mu) * (x[r*d+j] - mu)
			}
			v /= float64(n)
		} else {
			mu, v = st.RunMean[j], st.RunVar[j]
		}
		for r := 0; r < n; r++ {
			y[r*d+j] = math.Max(gm[j]*(x[r*d+j]-mu)/math.Sqrt(v+1e-5)+bt[j], 0)
		}
	}
	return y
}
