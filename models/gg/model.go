// Package gg builds spn's SPN/GIN model as a Gorgonia expression graph:
// Gorgonia holds the computation graph, differentiates it symbolically
// (gorgonia.Grad) and runs forward and backward on a TapeMachine, while
// every heavy node is a project op calling the parallel, deterministic
// kernels of models/kernels (CSR hop aggregation, GEMM, batch norm,
// pooling). The parameters are the same nn.Param values as the
// hand-written model (same names, same initialisation from the same seed),
// so nn.Adam and the checkpoint code work unchanged on Params().
//
// A compiled Gorgonia graph has fixed shapes, so one graph is built,
// compiled and run per batch.
package gg

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/spn-project/spn/models"
	"github.com/spn-project/spn/models/kernels"
	"github.com/spn-project/spn/models/nbop"
	"github.com/spn-project/spn/models/nn"
	"github.com/spn-project/spn/schema"
)

// layer holds the parameters of one SPN layer (the nn structs are used only
// as parameter holders with the hand-written model's names and init).
type layer struct {
	agg *nn.HopAggregation // ε and the α logits
	mlp
	// read is the global readout map W (d×d; model.global_readout), nil
	// without global readout.
	read *nn.Param
}

// Model is the SPN (or GIN) of models.SPN computed through Gorgonia.
type Model struct {
	engine
	useAdj bool
	layers []*layer
	// gd are the graphs of the batch, for the global readout.
	gd nbop.Data
}

var (
	_ models.Model      = (*Model)(nil)
	_ models.HopWeights = (*Model)(nil)
)

// New builds the model cfg.Model.Kind ("spn" or "gin"); all initialisation
// and dropout masks derive from seed exactly as in models.NewSPN/NewGIN, so
// both models built from the same seed hold equal parameters.
func New(cfg models.Config, seed uint64, be kernels.Backend) (*Model, error) {
	switch cfg.Model.Kind {
	case "spn", "gin":
	default:
		return nil, fmt.Errorf("model.kind %q: gg.New builds spn and gin only", cfg.Model.Kind)
	}
	if err := checkConfig(cfg); err != nil {
		return nil, err
	}
	useAdj := cfg.Model.Kind == "gin"
	m := cfg.Model
	if be == nil {
		return nil, fmt.Errorf("gg.New: nil kernel backend")
	}
	// Same generators, streams and draw order as models.newSPN.
	init := rand.New(rand.NewPCG(seed, 0x5eed1))
	md := &Model{engine: newEngine(cfg, seed, be, MaxCachedFloats), useAdj: useAdj}
	md.arch = md
	d := m.Hidden
	md.enc = nn.NewEncoder("enc", cfg.NumLabels, cfg.AttrDim, d, init)
	readInit := globalReadInit(seed)
	for t := 1; t <= m.Layers; t++ {
		name := fmt.Sprintf("layer%d", t)
		md.layers = append(md.layers, &layer{
			agg:  nn.NewHopAggregation(name+".agg", m.K, d, m.Eps, m.LearnEps),
			mlp:  newMLP(name, d, init),
			read: newGlobalRead(name, m, readInit),
		})
	}
	for t := 0; t <= m.Layers; t++ {
		md.readout = append(md.readout, nn.NewLinear(fmt.Sprintf("readout%d", t), d, cfg.Out, init))
	}
	return md, nil
}

// Hops implements models.Model: k for SPN, 0 for GIN (which reads Batch.Adj).
func (m *Model) Hops() int {
	if m.useAdj {
		return 0
	}
	return m.cfg.Model.K
}

// Params implements models.Model, in the order and with the names of
// models.SPN.Params.
func (m *Model) Params() []*nn.Param {
	ps := m.enc.Params()
	for _, l := range m.layers {
		ps = append(ps, l.agg.Params()...)
		ps = append(ps, l.mlp.params()...)
		if l.read != nil {
			ps = append(ps, l.read)
		}
	}
	for _, r := range m.readout {
		ps = append(ps, r.Params()...)
	}
	return ps
}

// Buffers implements models.Model: the batch-norm running statistics, under
// the names models.SPN uses.
func (m *Model) Buffers() map[string][]float64 {
	b := map[string][]float64{}
	for t, l := range m.layers {
		l.addBuffers(b, t+1)
	}
	return b
}

// HopWeights implements models.HopWeights: α and ε per layer.
func (m *Model) HopWeights() (alpha [][]float64, eps []float64) {
	for _, l := range m.layers {
		a := l.agg.Alpha()
		row := make([]float64, len(a))
		for i, v := range a {
			row[i] = float64(v)
		}
		alpha = append(alpha, row)
		eps = append(eps, float64(l.agg.Eps.W[0]))
	}
	return alpha, eps
}

// gradParams implements arch: the graph binds the parameters in the order
// of Params.
func (m *Model) gradParams(*program) []*nn.Param { return m.Params() }

// globalReadInit returns the generator of the global readout maps: a
// stream of its own, so that switching model.global_readout on leaves
// every other parameter's initialisation unchanged.
func globalReadInit(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x91ead)) }

// newGlobalRead returns the global readout map W (d×d) of layer name,
// uniform in ±1/√d as a linear layer's weights, or nil when m has no
// global readout.
func newGlobalRead(name string, m schema.Model, init *rand.Rand) *nn.Param {
	if !m.GlobalReadout {
		return nil
	}
	w := nn.NewParam(name+".global_readout.w", m.Hidden, m.Hidden)
	w.Uniform(init, 1/math.Sqrt(float64(m.Hidden)))
	return w
}
