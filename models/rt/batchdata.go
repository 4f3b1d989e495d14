package rt

import (
	"github.com/spn-project/spn/data"
)

// BatchData is the per-batch data the ops of one compiled graph read when
// they run. A compiled graph has fixed shapes: node-level tensors have
// rows = capacity N ≥ n and graph-level tensors G ≥ g rows. The ops compute
// on the first n (g) rows only and keep the padding rows at zero, so the
// result does not depend on the padding and one compiled graph serves every
// batch whose sizes fall in its bucket (see Model.build).
type BatchData struct {
	// N and G are the batch's real node and graph counts.
	N, G int
	// Hops are the hop sets the layers aggregate over (Arch.Prepare:
	// N_1..N_k, or the adjacency for GIN).
	Hops []data.CSR
	// Ptr are the graph offsets (len G+1).
	Ptr []int32
	// Labels (N) and Attrs (N×AttrDim) are the node inputs.
	Labels []int32
	Attrs  []float32
	// Y (G) are the classes, Target (G×Out) the regression targets.
	Y      []int32
	Target []float64
	// Dev is the batch on a device, for the ops' device math (nil on the
	// CPU path).
	Dev *DeviceBatch
}

// NewBatchData returns the data of batch b over the hop sets hops.
func NewBatchData(b *data.Batch, hops []data.CSR) *BatchData {
	bd := &BatchData{}
	bd.set(b, hops)
	return bd
}

// set points bd at batch b over the hop sets hops.
func (bd *BatchData) set(b *data.Batch, hops []data.CSR) {
	bd.N, bd.G = b.N, b.NumGraphs
	bd.Hops = hops
	bd.Ptr, bd.Labels, bd.Attrs, bd.Y, bd.Target = b.GraphPtr, b.Labels, b.Attrs, b.Y, b.Target
}

// release drops the references to the batch (keeping n and g).
func (bd *BatchData) release() {
	bd.Hops, bd.Ptr, bd.Labels, bd.Attrs, bd.Y, bd.Target = nil, nil, nil, nil, nil, nil
}

// Rows returns the number of real rows of a node-level (or, with graph,
// graph-level) tensor.
func (bd *BatchData) Rows(graph bool) int {
	if graph {
		return bd.G
	}
	return bd.N
}
