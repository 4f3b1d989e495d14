package ref

import (
	"testing"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/internal/testkit/synth"
	"github.com/spn-project/spn/models"
	"github.com/spn-project/spn/schema/modelspec"
)

// TestData returns a small synthetic dataset of n graphs with its hop sets
// (synth.Layered, kmax 5), the data of the reference models' tests.
func TestData(t testing.TB, n int) (*data.Dataset, *data.Hops) {
	t.Helper()
	ds, hops, err := synth.Layered(11, n, 3, [2]int{3, 6}, [2]int{2, 4}, 5)
	if err != nil {
		t.Fatal(err)
	}
	return ds, hops
}

// TestConfig returns a 3-layer, width-8 classification config of kind
// with k hops over TestData's 3 labels.
func TestConfig(kind string, k int, pool string, dropout float64) models.Config {
	return models.Config{
		Model:     modelspec.Model{Kind: kind, K: k, Layers: 3, Hidden: 8, Dropout: dropout, Pool: pool, Eps: 0.1, LearnEps: true},
		NumLabels: 3, Task: models.TaskClassification, Out: 2,
	}
}

// BatchOf returns the batch of graphs idx of ds with k hop sets.
func BatchOf(t testing.TB, ds *data.Dataset, hops *data.Hops, idx []int, k int) *data.Batch {
	t.Helper()
	b, err := data.NewBatch(ds, hops, idx, k)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
