package kinds

import (
	"testing"

	"github.com/spn-project/spn/models"
	"github.com/spn-project/spn/schema/modelspec"
)

// TestCheckDevice checks which model sections may train on a device:
// spn, gin, rspn, espn, gcn and gat for classification, regression and
// multi-task binary classification with sum, mean or max pooling or the
// gated readout, with or without the global readout or the readout's
// layer norms, and the baseline;
// every other kind and option is refused with a message naming the kind
// and the device.
func TestCheckDevice(t *testing.T) {
	spn := modelspec.Model{Kind: "spn", K: 2, Layers: 2, Hidden: 8, Pool: "sum"}
	with := func(f func(*modelspec.Model)) modelspec.Model { m := spn; f(&m); return m }
	for _, c := range []struct {
		m    modelspec.Model
		task string
		want string
	}{
		{spn, models.TaskClassification, ""},
		{with(func(m *modelspec.Model) { m.Kind, m.K, m.Pool = "gin", 1, "mean" }), models.TaskClassification, ""},
		{with(func(m *modelspec.Model) { m.Kind, m.K = "gcn", 1 }), models.TaskClassification, ""},
		{with(func(m *modelspec.Model) { m.Kind, m.K, m.Linear = "gcn", 1, true }), models.TaskRegression, ""},
		{with(func(m *modelspec.Model) { m.Kind, m.K, m.Heads = "gat", 1, 2 }), models.TaskClassification, ""},
		{with(func(m *modelspec.Model) { m.Kind = "graphormer" }), models.TaskClassification,
			`model kind "graphormer" cannot train on device cuda:0: it has no device math (kinds that have: [baseline drew espn gat gcn gin rspn spn])`},
		{with(func(m *modelspec.Model) { m.Kind = "baseline" }), models.TaskClassification, ""},
		{with(func(m *modelspec.Model) { m.Kind = "rspn" }), models.TaskClassification, ""},
		{with(func(m *modelspec.Model) { m.Kind, m.GatedReadout, m.K = "rspn", true, 10 }), models.TaskRegression, ""},
		{with(func(m *modelspec.Model) { m.Kind, m.GlobalReadout = "rspn", true }), models.TaskRegression, ""},
		{with(func(m *modelspec.Model) { m.Kind, m.Pool = "rspn", "max" }), models.TaskRegression, ""},
		{with(func(m *modelspec.Model) { m.Pool = "attention" }), models.TaskClassification,
			`model kind "spn" cannot train on device cuda:0: pool "attention" has no device math (only sum, mean and max)`},
		{spn, models.TaskRegression, ""},
		{spn, models.TaskBinary, ""},
		{with(func(m *modelspec.Model) { m.Kind = "rspn" }), models.TaskBinary, ""},
		{with(func(m *modelspec.Model) { m.Kind, m.K = "espn", 3 }), models.TaskBinary, ""},
		{with(func(m *modelspec.Model) { m.Kind, m.GlobalReadout = "espn", true }), models.TaskBinary, ""},
		{with(func(m *modelspec.Model) { m.Kind, m.Pool = "espn", "max" }), models.TaskBinary, ""},
		{with(func(m *modelspec.Model) { m.Kind, m.Conv, m.Weights, m.Delay = "drew", "gin", "learned", 1 }), models.TaskClassification, ""},
		{with(func(m *modelspec.Model) { m.Kind, m.Conv, m.Weights = "drew", "gine", "equal" }), models.TaskBinary, ""},
		{spn, "ranking", `model kind "spn" cannot train on device cuda:0: task ranking has no device loss (only classification, regression and binary)`},
		{with(func(m *modelspec.Model) { m.Pool = "max" }), models.TaskClassification, ""},
		{with(func(m *modelspec.Model) { m.GlobalReadout = true }), models.TaskClassification, ""},
		{with(func(m *modelspec.Model) { m.LayerNorm = true }), models.TaskClassification, ""},
		{with(func(m *modelspec.Model) { m.Kind, m.K, m.LayerNorm = "espn", 3, true }), models.TaskBinary, ""},
		{with(func(m *modelspec.Model) { m.GatedReadout = true }), models.TaskRegression, ""},
		{with(func(m *modelspec.Model) { m.GatedReadout, m.Pool = true, "max" }), models.TaskRegression, ""},
	} {
		err := All().CheckDevice(models.Config{Model: c.m, Task: c.task, Out: 2, NumEdgeTypes: 4}, "cuda:0")
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != c.want {
			t.Errorf("%s (%s, pool %s): got %q, want %q", c.m.Kind, c.task, c.m.Pool, got, c.want)
		}
	}
}

// TestCheckDeviceCategorical: rspn trains on the device over
// categorical node features (the AtomEncoder has device math).
func TestCheckDeviceCategorical(t *testing.T) {
	m := modelspec.Model{Kind: "rspn", K: 2, Layers: 2, Hidden: 8, Pool: "sum"}
	if err := All().CheckDevice(models.Config{Model: m, Task: models.TaskRegression, Out: 1, NumEdgeTypes: 4, NodeCatVocab: []int{3}}, "cuda:0"); err != nil {
		t.Errorf("rspn over categorical node features: %v", err)
	}
}
