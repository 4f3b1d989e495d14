package ogb

import (
	"fmt"

	"github.com/spn-project/spn/data"
)

// Feature sets a dataset keeps (the spec's dataset.features).
const (
	// FeaturesFull keeps OGB's 9 atom and 3 bond features: the paper's
	// "OGB's full features", and spn's default.
	FeaturesFull = "full"
	// FeaturesSimple keeps the first two of each: atomic number and
	// chirality, bond type and bond stereo. OGB's examples call it
	// --feature simple; the official SP-MPNN code reads only these unless
	// run with --use_feat.
	FeaturesSimple = "simple"
)

// simpleColumns is how many atom and bond feature columns FeaturesSimple
// keeps.
const simpleColumns = 2

// Keep returns ds with the feature set features (FeaturesFull or ""
// returns ds itself): the first two columns of its categorical atom and
// bond features for FeaturesSimple (all of them where it has fewer). The
// graphs' structure, labels and splits are shared with ds; the feature
// arrays are new.
func Keep(ds *data.Dataset, features string) (*data.Dataset, error) {
	switch features {
	case "", FeaturesFull:
		return ds, nil
	case FeaturesSimple:
	default:
		return nil, fmt.Errorf("OGB feature set %q is unknown (want %q or %q)", features, FeaturesFull, FeaturesSimple)
	}
	nw, ew := len(ds.NodeCatVocab), len(ds.EdgeFeatVocab)
	nk, ek := min(nw, simpleColumns), min(ew, simpleColumns)
	out := *ds
	out.NodeCatVocab = ds.NodeCatVocab[:nk:nk]
	out.EdgeFeatVocab = ds.EdgeFeatVocab[:ek:ek]
	out.Graphs = make([]data.Graph, len(ds.Graphs))
	for i, g := range ds.Graphs {
		g.NodeCat = firstColumns(g.NodeCat, nw, nk)
		g.EdgeFeat = firstColumns(g.EdgeFeat, ew, ek)
		out.Graphs[i] = g
	}
	return &out, nil
}

// firstColumns returns the first k columns of the row-major matrix x of
// width w.
func firstColumns(x []int32, w, k int) []int32 {
	if x == nil || w == 0 {
		return x
	}
	rows := len(x) / w
	out := make([]int32, 0, rows*k)
	for r := range rows {
		out = append(out, x[r*w:r*w+k]...)
	}
	return out
}
