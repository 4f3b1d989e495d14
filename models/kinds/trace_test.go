package kinds

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/spn-project/spn/models/baseline"
	"github.com/spn-project/spn/models/gat"
	"github.com/spn-project/spn/models/gcn"
	"github.com/spn-project/spn/models/graphormer"
	"github.com/spn-project/spn/models/internal/testkit/modeltest"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/models"
	"github.com/spn-project/spn/models/kernels"
	"github.com/spn-project/spn/models/param"
	"github.com/spn-project/spn/schema/modelspec"

	"github.com/spn-project/spn/internal/testkit/golden"
)

// traceModel is the part of the Gorgonia models the trace drives.
type traceModel interface {
	models.Model
	Step(b *data.Batch) (float64, []float32, error)
	Predict(b *data.Batch) ([]float32, error)
}

// TestTraceGolden pins the exact numbers of every Gorgonia model kind from
// a fixed seed: three Adam-updated training steps on batches of two sizes
// (dropout on, so the mask draws count), one step through the models.Model
// adaptor (Forward/Backward) and an evaluation-mode Predict. Losses,
// outputs and gradient sums are written as float bits, so any change of
// parameter order, initialisation, mask draws or arithmetic fails it
// (go test -update rewrites testdata/trace.golden). The bits depend on the
// GEMM of the build: the golden is that of the default (gonum) build; the
// OpenBLAS build (-tags openblas), whose kernels OpenBLAS picks by CPU,
// checks that two traces agree bit for bit instead.
func TestTraceGolden(t *testing.T) {
	got := traceOf(t)
	if strings.HasPrefix(kernels.GEMM, "OpenBLAS") {
		if again := traceOf(t); again != got {
			t.Fatal("two traces of the OpenBLAS build differ")
		}
		return
	}
	golden.CheckString(t, "testdata/trace.golden", got)
}

// traceOf computes the trace TestTraceGolden compares.
func traceOf(t *testing.T) string {
	ds, hops, _ := modeltest.LayeredBatch(t, 11, 24, 3)
	batch := func(idx ...int) *data.Batch {
		b, err := data.NewBatch(ds, hops, idx, 3)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	small, large := batch(0, 1, 2, 3, 4), batch(5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21)
	be := kernels.CPU{Threads: 2}
	cfgOf := func(kind string, k int) models.Config {
		c := modeltest.Config(modelspec.Model{Kind: kind, K: k, Layers: 2, Hidden: 8, Dropout: 0.3, Pool: models.PoolMean}, models.TaskClassification, 2, ds.NumLabels, 0)
		c.Model.Heads, c.Model.MaxDist = 2, 3
		return c
	}
	cases := []struct {
		name string
		make func() (traceModel, error)
	}{
		{"spn", func() (traceModel, error) { return newModel(cfgOf("spn", 3), 7, be) }},
		{"gin", func() (traceModel, error) { return newModel(cfgOf("gin", 1), 7, be) }},
		{"gcn", func() (traceModel, error) { return newModel(cfgOf(gcn.Name, 1), 7, be) }},
		{"gat", func() (traceModel, error) { return newModel(cfgOf(gat.Name, 1), 7, be) }},
		{"graphormer", func() (traceModel, error) { return newModel(cfgOf(graphormer.Name, 1), 7, be) }},
	}
	var sb strings.Builder
	bits := func(v []float32) string {
		s := make([]string, len(v))
		for i, x := range v {
			s[i] = fmt.Sprintf("%08x", math.Float32bits(x))
		}
		return strings.Join(s, " ")
	}
	gradSum := func(ps []*param.Param) uint64 {
		var s float64
		for _, p := range ps {
			for _, g := range p.G {
				s += float64(g)
			}
		}
		return math.Float64bits(s)
	}
	for _, c := range cases {
		m, err := c.make()
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		ps := m.Params()
		names := make([]string, len(ps))
		for i, p := range ps {
			names[i] = p.Name
		}
		fmt.Fprintf(&sb, "%s params %s\n", c.name, strings.Join(names, ","))
		opt := param.NewAdam(ps, 1e-2, 0)
		for i, b := range []*data.Batch{small, large, small} {
			loss, out, err := m.Step(b)
			if err != nil {
				t.Fatalf("%s step %d: %v", c.name, i, err)
			}
			fmt.Fprintf(&sb, "%s step %d loss %016x grad %016x out %s\n", c.name, i, math.Float64bits(loss), gradSum(ps), bits(out))
			opt.Step()
		}
		out, err := m.Forward(large, true)
		if err != nil {
			t.Fatalf("%s forward: %v", c.name, err)
		}
		seed := make([]float32, len(out))
		for i := range seed {
			seed[i] = float32(i%3) - 1
		}
		m.Backward(seed)
		fmt.Fprintf(&sb, "%s adaptor grad %016x out %s\n", c.name, gradSum(ps), bits(out))
		opt.Step()
		if out, err = m.Predict(small); err != nil {
			t.Fatalf("%s predict: %v", c.name, err)
		}
		fmt.Fprintf(&sb, "%s predict %s\n", c.name, bits(out))
	}

	ads := modeltest.AgnDataset(t, 3, 12, 6, 4, 2)
	for _, attr := range []int{0, 2} {
		cfg := modeltest.AgnConfig(ads, 6)
		cfg.AttrDim = attr
		d := *ads
		d.AttrDim = attr
		if attr == 0 {
			d.Graphs = nil
			for _, g := range ads.Graphs {
				g.Attrs = nil
				d.Graphs = append(d.Graphs, g)
			}
		}
		m, err := baseline.New(cfg, 5, be)
		if err != nil {
			t.Fatal(err)
		}
		ps := m.Params()
		opt := param.NewAdam(ps, 1e-2, 0)
		for i, idx := range [][]int{{0, 1, 2}, {3, 4, 5, 6, 7, 8, 9}} {
			b := modeltest.AgnBatch(t, &d, idx)
			out, err := m.Forward(b, true)
			if err != nil {
				t.Fatal(err)
			}
			seed := make([]float32, len(out))
			for j := range seed {
				seed[j] = float32(j%3) - 1
			}
			m.Backward(seed)
			fmt.Fprintf(&sb, "baseline-%s step %d grad %016x out %s\n", m.Form(), i, gradSum(ps), bits(out))
			opt.Step()
		}
	}

	return sb.String()
}
