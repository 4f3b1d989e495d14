package rt

import (
	"math/rand/v2"

	G "gorgonia.org/gorgonia"

	"github.com/spn-project/spn/models/param"
)

// MLP is the Linear → BatchNorm → ReLU → Linear → BatchNorm → ReLU of an
// SPN, GIN, GCN or GAT layer (the nn structs hold the parameters, with the
// hand-written model's names and initialisation).
type MLP struct {
	lin1     *param.Linear
	bn1      *param.BatchNormReLU
	lin2     *param.Linear
	bn2      *param.BatchNormReLU
	st1, st2 *bnStats
}

// NewMLP returns the MLP of layer name, drawing lin1 and then lin2 from
// init as models.newSPN does.
func NewMLP(name string, d int, init *rand.Rand) MLP {
	var l MLP
	l.lin1, l.bn1 = param.NewLinear(name+".lin1", d, d, init), param.NewBatchNormReLU(name+".bn1", d)
	l.lin2, l.bn2 = param.NewLinear(name+".lin2", d, d, init), param.NewBatchNormReLU(name+".bn2", d)
	l.st1 = &bnStats{RunMean: l.bn1.RunMean, RunVar: l.bn1.RunVar, Momentum: l.bn1.Momentum, Eps: l.bn1.Eps}
	l.st2 = &bnStats{RunMean: l.bn2.RunMean, RunVar: l.bn2.RunVar, Momentum: l.bn2.Momentum, Eps: l.bn2.Eps}
	return l
}

// Params returns lin1, bn1, lin2 and bn2's parameters, in that order.
func (l *MLP) Params() []*param.Param {
	ps := l.lin1.Params()
	ps = append(ps, l.bn1.Params()...)
	ps = append(ps, l.lin2.Params()...)
	return append(ps, l.bn2.Params()...)
}

// AddBuffers adds the running statistics of the MLP called name (e.g.
// "layer2") to b, as name.bn1.running_mean, … (the names the reference SPN, models/internal/ref, uses).
func (l *MLP) AddBuffers(b map[string][]float64, name string) {
	b[name+".bn1.running_mean"], b[name+".bn1.running_var"] = l.st1.RunMean, l.st1.RunVar
	b[name+".bn2.running_mean"], b[name+".bn2.running_var"] = l.st2.RunMean, l.st2.RunVar
}

// MLPNodes are the parameter nodes of an MLP in one graph: W₁, b₁, γ₁, β₁,
// W₂, b₂, γ₂, β₂.
type MLPNodes [8]*G.Node

// Bind returns the parameter nodes of l, made by param in params order.
func (l *MLP) Bind(param func(*param.Param) *G.Node) MLPNodes {
	return MLPNodes{param(l.lin1.W), param(l.lin1.B), param(l.bn1.Gamma), param(l.bn1.Beta),
		param(l.lin2.W), param(l.lin2.B), param(l.bn2.Gamma), param(l.bn2.Beta)}
}

// Apply adds the MLP of layer name over the N×d node states x to bdr's
// graph, with batch statistics and their update as key asks.
func (l *MLP) Apply(bdr *Builder, be Env, bd *BatchData, key Key, name string, x *G.Node, n MLPNodes) *G.Node {
	N, d := key.N, l.lin1.Out
	z := bdr.Op(be, NewLinear(name+".lin1", be, bd, false, N, d, d), x, n[0], n[1])
	z = bdr.Op(be, newBNReLU(name+".bn1", be, bd, l.st1, key.train, key.update, N, d), z, n[2], n[3])
	z = bdr.Op(be, NewLinear(name+".lin2", be, bd, false, N, d, d), z, n[4], n[5])
	return bdr.Op(be, newBNReLU(name+".bn2", be, bd, l.st2, key.train, key.update, N, d), z, n[6], n[7])
}
