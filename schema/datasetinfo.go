package schema

import (
	"fmt"
	"path/filepath"

	"github.com/spn-project/spn/data/ogb"
	"github.com/spn-project/spn/data/qm9"
	"github.com/spn-project/spn/schema/modelspec"
)

// DatasetInfo is what a dataset section declares about its graphs
// (schema/modelspec).
type DatasetInfo = modelspec.DatasetInfo

// InfoOf returns the declared properties of dataset section d: h-Prox and
// the TU sets have untyped edges without categorical features, QM9 has
// qm9.NumEdgeTypes bond types (and real node attributes), OGB's sets have
// categorical atom and bond features (their bond type is a feature, not a
// relation), a file dataset what its graphs hold (Contents, filled when the
// spec loads; unknown before).
func InfoOf(d Dataset) DatasetInfo {
	info := DatasetInfo{Kind: d.Kind, KMax: d.KMax, Unreachable: d.Unreachable, Known: true}
	switch d.Kind {
	case "prox", "tu":
	case "qm9":
		info.Relations = qm9.NumEdgeTypes
	case "ogb":
		info.EdgeFeatures = len(ogb.BondFeatureDims()) > 0
		info.NodeCategories = len(ogb.AtomFeatureDims()) > 0
	case "file":
		if d.Contents == nil {
			info.Known = false
			break
		}
		info.EdgeFeatures, info.NodeCategories = d.Contents.EdgeFeat, d.Contents.NodeFeat
	default:
		info.Known = false
	}
	return info
}

// Label is a short human label of dataset section d, the dataset's part
// of stage names and report headings: "prox(h=3)", "tu(NCI1)",
// "ogb(ogbg-molhiv, simple features)", "file(peptides.jsonl)".
func (d Dataset) Label() string {
	switch {
	case d.Kind == "prox":
		return fmt.Sprintf("prox(h=%d)", d.H)
	case d.Kind == "file" && d.Path != "":
		return "file(" + filepath.Base(d.Path) + ")"
	case d.Features != "":
		return d.Kind + "(" + d.Name + ", " + d.Features + " features)"
	case d.Name != "":
		return d.Kind + "(" + d.Name + ")"
	}
	return d.Kind
}
