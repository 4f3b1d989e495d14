package gcn

import (
	"github.com/spn-project/spn/models/nbop"
	"github.com/spn-project/spn/models/rt"
)

// newGCNAgg returns the GCN propagation y = Â·x (nbop.GCN) over the batch
// adjacency's weights gd, for an N×d input.
func newGCNAgg(id string, be rt.Env, gd *graphData, N, d int) nbop.GCN {
	return nbop.GCN{ID: id, Be: be.Backend, D: &gd.GCNData, N: N, W: d}
}
