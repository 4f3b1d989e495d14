package gcn

import (
	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/models/nbop"
	"github.com/spn-project/spn/models/rt"
)

// graphData is the per-batch normalised adjacency the GCN op reads
// (nbop.GCNData over the batch adjacency), derived from the batch when a
// compiled graph is pointed at it (Model.Prepare).
type graphData struct {
	nbop.GCNData
}

// Set implements rt.AdjData: it derives the GCN weights of batch b, whose
// adjacency must be symmetric (the gradient uses Â as its own transpose).
func (gd *graphData) Set(b *data.Batch) error {
	if err := rt.CheckSymmetric(b.Adj); err != nil {
		return err
	}
	return gd.GCNData.Set(b.Adj, b.N)
}
