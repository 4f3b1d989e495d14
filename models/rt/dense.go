package rt

import (
	"math/rand/v2"

	G "gorgonia.org/gorgonia"

	"github.com/spn-project/spn/models/param"
)

// Dense is one Linear → BatchNorm → ReLU over node states, the first half
// of an MLP: PyTorch Geometric's GCNConv map Θ followed by GraphGym's
// batch norm and activation (DRew's GCN map per hop set). Θ is
// Glorot-uniform and b zero at initialisation, as GCNConv's; the batch
// norm's running statistics are trained as an MLP's.
type Dense struct {
	lin *param.Linear
	bn  *param.BatchNormReLU
	st  *bnStats
}

// NewDense returns the Dense called name (parameters name.lin.w,
// name.lin.b, name.bn.gamma, name.bn.beta) of width d, drawing Θ from
// init.
func NewDense(name string, d int, init *rand.Rand) Dense {
	l := Dense{lin: param.NewGlorotLinear(name+".lin", d, d, init), bn: param.NewBatchNormReLU(name+".bn", d)}
	l.st = newBNStats(l.bn)
	return l
}

// Params returns Θ, b, γ and β, in that order.
func (l *Dense) Params() []*param.Param { return append(l.lin.Params(), l.bn.Params()...) }

// AddBuffers adds the running statistics of the Dense called name to b,
// as name.bn.running_mean and name.bn.running_var.
func (l *Dense) AddBuffers(b map[string][]float64, name string) {
	b[name+".bn.running_mean"], b[name+".bn.running_var"] = l.st.RunMean, l.st.RunVar
}

// Apply adds the Dense called name (its ops' id prefix) over the N×d node
// states x to s's graph, its parameters bound by s.Param, with batch
// statistics and their update as s's Key asks: the linear op, then the
// fused batch norm and ReLU.
func (l *Dense) Apply(s *Step, name string, x *G.Node) *G.Node {
	g := graphOpts{be: s.Be, bd: s.BD, train: s.Key.train, update: s.Key.update, N: s.Key.N}
	d := l.lin.Out
	z := s.Op(NewLinear(name+".lin", s.Be, s.BD, LinearOpts{N: s.Key.N, In: l.lin.In, Out: d}), x, s.Param(l.lin.W), s.Param(l.lin.B))
	return s.Op(newBNReLU(name+".bn", g, l.st, d), z, s.Param(l.bn.Gamma), s.Param(l.bn.Beta))
}
