package spn

import (
	"fmt"
	"strings"
	"testing"

	"github.com/spn-project/spn/models/internal/testkit/modeltest"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/models"
	"github.com/spn-project/spn/models/kernels"
	"github.com/spn-project/spn/schema/modelspec"

	"github.com/spn-project/spn/internal/testkit/golden"
)

// TestErrorsGolden renders the errors of bad configurations and bad batches
// and compares them with testdata/errors.golden (go test -update rewrites it).
func TestErrorsGolden(t *testing.T) {
	good := modeltest.Config(modelspec.Model{Kind: "spn", K: 3, Layers: 2, Hidden: 8, Dropout: 0.2, Pool: models.PoolSum}, models.TaskClassification, 2, 3, 0)
	be := kernels.CPU{}
	var sb strings.Builder
	newCases := []struct {
		name string
		edit func(c *models.Config)
		be   kernels.Backend
	}{
		{"unknown kind", func(c *models.Config) { c.Model.Kind = "gat" }, be},
		{"gin with k=2", func(c *models.Config) { c.Model.Kind, c.Model.K = "gin", 2 }, be},
		{"gin with N_∞", func(c *models.Config) { c.Model.Kind, c.Model.K, c.Model.Unreachable = "gin", 1, true }, be},
		{"k=0", func(c *models.Config) { c.Model.K = 0 }, be},
		{"no layers", func(c *models.Config) { c.Model.Layers = 0 }, be},
		{"no width", func(c *models.Config) { c.Model.Hidden = 0 }, be},
		{"dropout 1", func(c *models.Config) { c.Model.Dropout = 1 }, be},
		{"no outputs", func(c *models.Config) { c.Out = 0 }, be},
		{"unknown task", func(c *models.Config) { c.Task = "ranking" }, be},
		{"unknown pooling", func(c *models.Config) { c.Model.Pool = "median" }, be},
		{"nil backend", func(*models.Config) {}, nil},
	}
	for _, c := range newCases {
		cfg := good
		c.edit(&cfg)
		_, err := New(cfg, 1, c.be)
		fmt.Fprintf(&sb, "New, %s: %v\n", c.name, err)
	}
	ds, hops, b := modeltest.LayeredBatch(t, 3, 6, 3)
	m, err := New(good, 1, be)
	if err != nil {
		t.Fatal(err)
	}
	reg, err := New(modeltest.Config(modelspec.Model{Kind: "spn", K: 3, Layers: 2, Hidden: 8, Pool: models.PoolSum}, models.TaskRegression, 2, 3, 0), 1, be)
	if err != nil {
		t.Fatal(err)
	}
	unrCfg := good
	unrCfg.Model.Unreachable = true
	unr, err := New(unrCfg, 1, be)
	if err != nil {
		t.Fatal(err)
	}
	batchCases := []struct {
		name string
		m    *Model
		edit func(b *data.Batch)
	}{
		{"too few hop sets", m, func(b *data.Batch) { b.Hop = b.Hop[:2] }},
		{"label outside the vocabulary", m, func(b *data.Batch) { b.Labels = append([]int32{7}, b.Labels[1:]...) }},
		{"labels missing", m, func(b *data.Batch) { b.Labels = nil }},
		{"class outside the outputs", m, func(b *data.Batch) { b.Y = append([]int32{2}, b.Y[1:]...) }},
		{"graph pointers short", m, func(b *data.Batch) { b.GraphPtr = b.GraphPtr[:3] }},
		{"hop set of the wrong size", m, func(b *data.Batch) {
			b.Hop = append([]data.CSR{{Ptr: []int32{0}}}, b.Hop[1:]...)
		}},
		{"hop entry out of range", m, func(b *data.Batch) {
			h := data.CSR{Ptr: b.Hop[0].Ptr, Idx: append([]int32(nil), b.Hop[0].Idx...)}
			h.Idx[0] = int32(b.N)
			b.Hop = append([]data.CSR{h}, b.Hop[1:]...)
		}},
		{"regression targets missing", reg, func(b *data.Batch) { b.Target = nil }},
		{"N_∞ missing", unr, func(b *data.Batch) { b.Unreachable = nil }},
		{"N_∞ of the wrong size", unr, func(b *data.Batch) { b.Unreachable = &data.CSR{Ptr: []int32{0}} }},
	}
	for _, c := range batchCases {
		bb := *b
		c.edit(&bb)
		_, _, err := c.m.Step(&bb)
		fmt.Fprintf(&sb, "Step, %s: %v\n", c.name, err)
	}
	_, _, err = m.Step(nil)
	fmt.Fprintf(&sb, "Step, nil batch: %v\n", err)
	empty, err := data.NewBatch(ds, hops, nil, 3)
	if err != nil {
		t.Fatal(err)
	}
	_, err = m.Predict(empty)
	fmt.Fprintf(&sb, "Predict, empty batch: %v\n", err)

	golden.CheckString(t, "testdata/errors.golden", sb.String())
}
