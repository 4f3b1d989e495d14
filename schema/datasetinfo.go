package schema

import (
	"github.com/spn-project/spn/data/ogb"
	"github.com/spn-project/spn/data/qm9"
)

// DatasetInfo is what a dataset section declares about its graphs without
// loading them: what the model kinds check a model section against (spn
// vet and plan), so that a model reading inputs the dataset lacks fails
// before training.
type DatasetInfo struct {
	// Kind is the dataset kind; Known is false for a kind this table does
	// not describe (its Relations and feature fields are then unknown and
	// the checks that need them are skipped).
	Kind  string
	Known bool
	// KMax is the largest precomputed hop distance (dataset.kmax);
	// Unreachable whether N_∞ is kept.
	KMax        int
	Unreachable bool
	// Relations is the number of edge types (0: untyped edges).
	Relations int
	// EdgeFeatures and NodeCategories say whether the graphs carry
	// categorical edge features and categorical node features.
	EdgeFeatures, NodeCategories bool
}

// InfoOf returns the declared properties of dataset section d: h-Prox and
// the TU sets have untyped edges without categorical features, QM9 has
// qm9.NumEdgeTypes bond types (and real node attributes), OGB's sets have
// categorical atom and bond features (their bond type is a feature, not a
// relation).
func InfoOf(d Dataset) DatasetInfo {
	info := DatasetInfo{Kind: d.Kind, KMax: d.KMax, Unreachable: d.Unreachable, Known: true}
	switch d.Kind {
	case "prox", "tu":
	case "qm9":
		info.Relations = qm9.NumEdgeTypes
	case "ogb":
		info.EdgeFeatures = len(ogb.BondFeatureDims()) > 0
		info.NodeCategories = len(ogb.AtomFeatureDims()) > 0
	default:
		info.Known = false
	}
	return info
}
