package gg

import (
	"fmt"
	"math/rand/v2"

	G "gorgonia.org/gorgonia"

	"github.com/spn-project/spn/models/nn"
)

// newTFLayer returns the parameters of one pre-LN Graphormer block of width
// d: layer norms (γ = 1, β = 0), the q, k, v and output projections, the
// spatial bias per distance bucket and head (zero), and a d→d→d FFN.
func newTFLayer(name string, d, heads, maxDist int, init *rand.Rand) *tfLayer {
	l := &tfLayer{
		ln1g: nn.NewParam(name+".ln1.gamma", d), ln1b: nn.NewParam(name+".ln1.beta", d),
		q: nn.NewLinear(name+".attn.q", d, d, init), k: nn.NewLinear(name+".attn.k", d, d, init),
		v: nn.NewLinear(name+".attn.v", d, d, init), o: nn.NewLinear(name+".attn.o", d, d, init),
		bias: nn.NewParam(name+".attn.spatial_bias", maxDist+2, heads),
		ln2g: nn.NewParam(name+".ln2.gamma", d), ln2b: nn.NewParam(name+".ln2.beta", d),
		ff1: nn.NewLinear(name+".ffn1", d, d, init), ff2: nn.NewLinear(name+".ffn2", d, d, init),
	}
	l.ln1g.Fill(1)
	l.ln2g.Fill(1)
	l.ln1b.NoDecay, l.ln2b.NoDecay, l.ln1g.NoDecay, l.ln2g.NoDecay, l.bias.NoDecay = true, true, true, true, true
	return l
}

// params returns the block's parameters in a fixed order.
func (l *tfLayer) params() []*nn.Param {
	ps := []*nn.Param{l.ln1g, l.ln1b}
	for _, lin := range []*nn.Linear{l.q, l.k, l.v} {
		ps = append(ps, lin.Params()...)
	}
	ps = append(ps, l.bias)
	ps = append(ps, l.o.Params()...)
	ps = append(ps, l.ln2g, l.ln2b)
	ps = append(ps, l.ff1.Params()...)
	return append(ps, l.ff2.Params()...)
}

// apply adds the block to the graph:
//
//	a = LN₁(h);  h' = h + Wo·Attn(Wq a, Wk a, Wv a; spatial bias)
//	f = LN₂(h'); out = h' + W₂·ReLU(W₁ f)
func (l *tfLayer) apply(bdr *builder, param func(*nn.Param) *G.Node, name string, be env, bd *batchData, gd *graphData, heads, maxDist, N, d int, h *G.Node) *G.Node {
	lin := func(id string, ln *nn.Linear, x *G.Node) *G.Node {
		return bdr.op(be, newLinear(id, be, bd, false, N, d, d), x, param(ln.W), param(ln.B))
	}
	add := func(a, b *G.Node) *G.Node {
		if bdr.err != nil {
			return nil
		}
		s, err := G.Add(a, b)
		if err != nil {
			bdr.err = fmt.Errorf("building the residual of %s: %w", name, err)
		}
		return s
	}
	a := bdr.op(be, newLayerNorm(name+".ln1", be, bd, N, d), h, param(l.ln1g), param(l.ln1b))
	q, k, v := lin(name+".attn.q", l.q, a), lin(name+".attn.k", l.k, a), lin(name+".attn.v", l.v, a)
	att := bdr.op(be, newGraphAttn(name+".attn", be, bd, gd, heads, maxDist+2, N, d), q, k, v, param(l.bias))
	h = add(h, lin(name+".attn.o", l.o, att))
	f := bdr.op(be, newLayerNorm(name+".ln2", be, bd, N, d), h, param(l.ln2g), param(l.ln2b))
	f = bdr.op(be, newReLU(name+".ffn.relu", N, d), lin(name+".ffn1", l.ff1, f))
	return add(h, lin(name+".ffn2", l.ff2, f))
}
