package kerntest

import (
	"testing"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/models/kernels"
)

// AllGraphs returns every graph of ds as one batch with hop sets up to k
// and fails t unless it spans more than one chunk of rows
// (kernels.ChunkRows): the batches the device ops and their kernels are
// tested on.
func AllGraphs(t testing.TB, ds *data.Dataset, hops *data.Hops, k int) *data.Batch {
	t.Helper()
	all := make([]int, len(ds.Graphs))
	for i := range all {
		all[i] = i
	}
	b, err := data.NewBatch(ds, hops, all, k)
	if err != nil {
		t.Fatal(err)
	}
	if b.N <= kernels.ChunkRows {
		t.Fatalf("batch of %d nodes: want more than one chunk", b.N)
	}
	return b
}
