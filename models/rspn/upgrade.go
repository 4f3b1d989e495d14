package rspn

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/spn-project/spn/models"
	"github.com/spn-project/spn/models/rt"
)

// mlpNames returns the names of one MLP's parameters, in rt.MLP.Params
// order, and of its running statistics, sorted, each after the MLP's
// own name and a dot: rt.MLP's names, read off a throwaway MLP of width 1.
func mlpNames() (params, stats []string) {
	const name = "mlp"
	l := rt.NewMLP(name, 1, rand.New(rand.NewPCG(0, 0)))
	for _, p := range l.Params() {
		params = append(params, strings.TrimPrefix(p.Name, name+"."))
	}
	b := map[string][]float64{}
	l.AddBuffers(b, name)
	for k := range b {
		stats = append(stats, strings.TrimPrefix(k, name+"."))
	}
	slices.Sort(stats)
	return params, stats
}

// UpgradeCheckpoint implements models.Upgrader. A checkpoint of revision
// 1, a layer's 2 + R MLPs apart (layerT.mlp_s.*, layerT.mlp_h.*,
// layerT.mlp_r1.* … layerT.mlp_rR.*), becomes the stacked layout of
// rt.NewMLPs: each parameter and running statistic of the MLPs
// concatenated in that block order under layerT.mlps.*, the matrices
// (2 + R)·d × d. The values are unchanged, so the model computes what it
// did. A checkpoint without revision 1's names comes back as it is.
func (Kind) UpgradeCheckpoint(cfg models.Config, ps []models.CheckpointParam, bs []models.CheckpointBuffer) ([]models.CheckpointParam, []models.CheckpointBuffer, error) {
	blocks := func(layer string) []string {
		b := []string{layer + ".mlp_s", layer + ".mlp_h"}
		for j := 1; j <= cfg.NumEdgeTypes; j++ {
			b = append(b, fmt.Sprintf("%s.mlp_r%d", layer, j))
		}
		return b
	}
	m := 2 + cfg.NumEdgeTypes
	fields, stats := mlpNames()
	var out []models.CheckpointParam
	for i := 0; i < len(ps); {
		layer, ok := strings.CutSuffix(ps[i].Name, ".mlp_s."+fields[0])
		if !ok {
			out = append(out, ps[i])
			i++
			continue
		}
		if len(ps) < i+m*len(fields) {
			return nil, nil, fmt.Errorf("parameters of revision 1 (rspn's MLPs apart): %s's %d MLPs end early", layer, m)
		}
		names := blocks(layer)
		for f, field := range fields {
			first := ps[i+f]
			st := models.CheckpointParam{Name: layer + ".mlps." + field, Shape: slices.Clone(first.Shape)}
			for b, name := range names {
				p := ps[i+b*len(fields)+f]
				if want := name + "." + field; p.Name != want {
					return nil, nil, fmt.Errorf("parameters of revision 1 (rspn's MLPs apart): parameter %q where %s's MLPs have %q", p.Name, layer, want)
				}
				if !slices.Equal(p.Shape, first.Shape) {
					return nil, nil, fmt.Errorf("parameters of revision 1 (rspn's MLPs apart): %s has shape %v, %s %v", p.Name, p.Shape, first.Name, first.Shape)
				}
				st.Values = append(st.Values, p.Values...)
			}
			if len(st.Shape) > 0 {
				st.Shape[0] *= m
			}
			out = append(out, st)
		}
		i += m * len(fields)
	}
	if len(out) == len(ps) {
		return ps, bs, nil // no MLPs apart: the current layout
	}
	byName := make(map[string]models.CheckpointBuffer, len(bs))
	for _, b := range bs {
		byName[b.Name] = b
	}
	var bufs []models.CheckpointBuffer
	for _, p := range out {
		layer, ok := strings.CutSuffix(p.Name, ".mlps."+fields[0])
		if !ok {
			continue
		}
		for _, stat := range stats {
			st := models.CheckpointBuffer{Name: layer + ".mlps." + stat}
			for _, name := range blocks(layer) {
				b, ok := byName[name+"."+stat]
				if !ok {
					return nil, nil, fmt.Errorf("buffers of revision 1 (rspn's MLPs apart): no %s.%s", name, stat)
				}
				st.Values = append(st.Values, b.Values...)
				delete(byName, name+"."+stat)
			}
			bufs = append(bufs, st)
		}
	}
	for _, b := range bs {
		if _, ok := byName[b.Name]; ok {
			bufs = append(bufs, b) // the other buffers, in their order
		}
	}
	return out, bufs, nil
}
