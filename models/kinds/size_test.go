package kinds

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/spn-project/spn/models"
	"github.com/spn-project/spn/models/kernels"
	"github.com/spn-project/spn/schema/modelspec"
)

// TestParamCount checks every kind's ParamCount against the parameter
// values of the model its New builds, over configurations that vary each
// field a kind's shapes depend on.
func TestParamCount(t *testing.T) {
	reg := All()
	built := map[string]int{}
	for _, kind := range reg.Names() {
		k, _ := reg.Lookup(kind)
		for _, cfg := range sizeConfigs(kind) {
			name := fmt.Sprintf("%s/d%d_L%d_k%d_heads%d_dist%d_lin%v_global%v_gated%v_ln%v_R%d_labels%d_attrs%d_out%d_vocab%v/%v",
				kind, cfg.Model.Hidden, cfg.Model.Layers, cfg.Model.K, cfg.Model.Heads, cfg.Model.MaxDist, cfg.Model.Linear,
				cfg.Model.GlobalReadout, cfg.Model.GatedReadout, cfg.Model.LayerNorm, cfg.NumEdgeTypes, cfg.NumLabels, cfg.AttrDim, cfg.Out, cfg.NodeCatVocab, cfg.EdgeFeatVocab)
			m, err := reg.New(cfg, 1, kernels.CPU{Threads: 1})
			if err != nil {
				continue // a combination the kind refuses
			}
			built[kind]++
			var want int64
			for _, p := range m.Params() {
				want += int64(len(p.W))
			}
			if got := k.ParamCount(cfg); got != want {
				t.Errorf("%s: ParamCount = %d, the model holds %d", name, got, want)
			}
		}
	}
	for _, kind := range reg.Names() {
		if built[kind] < 20 {
			t.Errorf("%s: only %d configurations built; the test covers too little of the kind", kind, built[kind])
		}
	}
}

// sizeConfigs returns configurations of kind over the fields its shapes
// depend on (some of which the kind refuses).
func sizeConfigs(kind string) []models.Config {
	var out []models.Config
	for _, d := range []int{1, 4, 6, 12} {
		for _, layers := range []int{1, 3} {
			for _, v := range []int{0, 1, 2, 3} {
				m := modelspec.Model{Kind: kind, Hidden: d, Layers: layers, K: 1, Heads: 1, MaxDist: 1, Pool: models.PoolSum}
				cfg := models.Config{Model: m, NumLabels: 5, AttrDim: 0, Task: models.TaskClassification, Out: 3}
				switch kind {
				case "spn", "rspn", "espn":
					cfg.Model.K = 1 + v%3
					cfg.Model.GlobalReadout = v >= 2
				case "gcn", "gat":
					cfg.Model.Linear = v%2 == 1
				}
				switch kind {
				case "gat", "graphormer":
					cfg.Model.Heads = []int{1, 2, 3, 6}[v]
					cfg.Model.MaxDist = 1 + v
				case "rspn":
					cfg.Task, cfg.Out = models.TaskRegression, 1+v
					cfg.NumEdgeTypes = 1 + v
					cfg.Model.GatedReadout = v%2 == 1
				case "espn":
					cfg.Task, cfg.Out = models.TaskBinary, 1+v
					cfg.NumLabels = 0
					cfg.NodeCatVocab = []int{7, 3, 2}[:1+v%3]
					cfg.EdgeFeatVocab = []int{5, 4}[:1+v%2]
				case "baseline":
					cfg.Model.Dropout = 0
				case "drew":
					cfg.Model.Conv, cfg.Model.Weights = modelspec.ConvGIN, modelspec.WeightsEqual
					cfg.Model.K, cfg.Model.Delay = []int{0, 1, 2, 0}[v], modelspec.Delay(v%3)
					if v >= 2 {
						cfg.Model.Weights = modelspec.WeightsLearned
					}
					if v%2 == 1 {
						cfg.Model.Conv, cfg.Task, cfg.Out = modelspec.ConvGINE, models.TaskBinary, 1+v
						cfg.NodeCatVocab, cfg.EdgeFeatVocab = []int{7, 3}[:1+v/2], []int{5, 4}[:1+v/3]
					}
					if v == 2 {
						cfg.Model.Conv = modelspec.ConvGCN
					}
				}
				switch kind {
				case "spn", "gin", "espn": // the kinds with model.layer_norm
					cfg.Model.LayerNorm = v%2 == 0
				}
				switch v {
				case 1:
					cfg.AttrDim = 4
				case 2:
					cfg.NumLabels, cfg.AttrDim = 0, 2
				}
				if kind == "espn" {
					cfg.NumLabels, cfg.AttrDim = 0, 0
				}
				out = append(out, cfg)
			}
		}
	}
	return out
}

// TestSizeRefused checks that a model over models.MaxParamValues is
// refused, by Size and by New, with an error naming its size, before
// anything is allocated (the sizes here would need petabytes).
func TestSizeRefused(t *testing.T) {
	reg := All()
	for _, c := range []struct {
		name string
		m    modelspec.Model
		want string
	}{
		{"spn hidden", modelspec.Model{Kind: "spn", Hidden: 2_000_000, Layers: 4, K: 2, Pool: models.PoolSum}, `model.kind "spn" with hidden = 2000000, layers = 4: 32000076000022 (3.2e+13) parameter values; at most 1073741824 (2^30) are allowed`},
		{"gcn layers", modelspec.Model{Kind: "gcn", Hidden: 64, Layers: 1 << 40, K: 1, Pool: models.PoolSum}, `model.kind "gcn" with hidden = 64, layers = 1099511627776: 9572348231418242 (9.6e+15) parameter values; at most 1073741824 (2^30) are allowed`},
		{"graphormer saturating", modelspec.Model{Kind: "graphormer", Hidden: math.MaxInt32 * 2, Layers: math.MaxInt32, K: 1, Heads: 2, MaxDist: 1, Pool: models.PoolSum}, "more than 9.2e+18 parameter values"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := models.Config{Model: c.m, NumLabels: 3, Task: models.TaskClassification, Out: 2}
			if _, err := reg.Size(cfg); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Size: %v, want an error containing %q", err, c.want)
			}
			if _, err := reg.New(cfg, 1, kernels.CPU{Threads: 1}); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("New: %v, want an error containing %q", err, c.want)
			}
		})
	}
	cfg := models.Config{Model: modelspec.Model{Kind: "spn", Hidden: 64, Layers: 4, K: 2, Pool: models.PoolSum}, NumLabels: 3, Task: models.TaskClassification, Out: 2}
	if n, err := reg.Size(cfg); err != nil || n != reg["spn"].ParamCount(cfg) {
		t.Fatalf("Size of a small spn = %d, %v; want its ParamCount %d", n, err, reg["spn"].ParamCount(cfg))
	}
}

// A model of 1,000 layers (of few parameters) is refused on its layers,
// by the spec check (spn vet) and by Size: past models.MaxLayers the
// cost of building its graphs stops making sense.
func TestLayersRefused(t *testing.T) {
	reg := All()
	m := modelspec.Model{Kind: "spn", Hidden: 8, Layers: 1000, K: 3, Pool: models.PoolMean}
	errs := reg.CheckModel(m, modelspec.DatasetInfo{})
	if len(errs) != 1 || errs[0].Field != "layers" || !strings.Contains(errs[0].Msg, "1000 layers; at most 64 are allowed") {
		t.Errorf("CheckModel: %v", errs)
	}
	cfg := models.Config{Model: m, NumLabels: 3, Task: models.TaskClassification, Out: 2}
	if _, err := reg.Size(cfg); err == nil || !strings.Contains(err.Error(), "at most 64 layers") {
		t.Errorf("Size: %v", err)
	}
	m.Layers = models.MaxLayers
	if errs := reg.CheckModel(m, modelspec.DatasetInfo{}); len(errs) != 0 {
		t.Errorf("CheckModel of %d layers: %v", m.Layers, errs)
	}
}
