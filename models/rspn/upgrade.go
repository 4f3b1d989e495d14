package rspn

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spn-project/spn/models"
)

// mlpFields are the parameters of one MLP, in rt.MLP.Params order, as
// suffixes of its name.
var mlpFields = []string{"lin1.w", "lin1.b", "bn1.gamma", "bn1.beta", "lin2.w", "lin2.b", "bn2.gamma", "bn2.beta"}

// mlpStats are the running statistics of one MLP, as suffixes of its name.
var mlpStats = []string{"bn1.running_mean", "bn1.running_var", "bn2.running_mean", "bn2.running_var"}

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
	var out []models.CheckpointParam
	for i := 0; i < len(ps); {
		layer, ok := strings.CutSuffix(ps[i].Name, ".mlp_s."+mlpFields[0])
		if !ok {
			out = append(out, ps[i])
			i++
			continue
		}
		if len(ps) < i+m*len(mlpFields) {
			return nil, nil, fmt.Errorf("parameters of revision 1 (rspn's MLPs apart): %s's %d MLPs end early", layer, m)
		}
		for f, field := range mlpFields {
			st := models.CheckpointParam{Name: layer + ".mlps." + field}
			for b, name := range blocks(layer) {
				p := ps[i+b*len(mlpFields)+f]
				if want := name + "." + field; p.Name != want {
					return nil, nil, fmt.Errorf("parameters of revision 1 (rspn's MLPs apart): parameter %q where %s's MLPs have %q", p.Name, layer, want)
				}
				if b > 0 && !slices.Equal(p.Shape, ps[i+f].Shape) {
					return nil, nil, fmt.Errorf("parameters of revision 1 (rspn's MLPs apart): %s has shape %v, %s.%s %v", p.Name, p.Shape, blocks(layer)[0], field, ps[i+f].Shape)
				}
				st.Values = append(st.Values, p.Values...)
			}
			st.Shape = slices.Clone(ps[i+f].Shape)
			if len(st.Shape) > 0 {
				st.Shape[0] *= m
			}
			out = append(out, st)
		}
		i += m * len(mlpFields)
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
		layer, ok := strings.CutSuffix(p.Name, ".mlps."+mlpFields[0])
		if !ok {
			continue
		}
		for _, stat := range mlpStats {
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
