package gg

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/models/kernels"
)

// typedBatch returns a batch of random typed graphs with edge features,
// categorical node features, hop sets up to kmax and binary targets with
// missing labels.
func typedBatch(t testing.TB, rng *rand.Rand, graphs, kmax int) (*data.Dataset, *data.Hops, *data.Batch) {
	t.Helper()
	ds := randomTypedDataset(rng, graphs, 4, 10)
	hops := hopsOf(t, ds, kmax)
	idx := make([]int, graphs)
	for i := range idx {
		idx[i] = i
	}
	b, err := data.NewBatchWith(ds, hops, idx, data.BatchOptions{K: kmax})
	if err != nil {
		t.Fatal(err)
	}
	return ds, hops, b
}

func TestTypedOpGradients(t *testing.T) {
	for _, threads := range []int{1, 2} {
		be := kernels.CPU{Threads: threads}
		rng := rand.New(rand.NewPCG(3, 4))
		_, _, b := typedBatch(t, rng, 6, 3)
		n, d, k := b.N, 4, 3
		N := n + 7
		td := &typedData{}
		td.set(b, k, true, true)
		_, edgeRows := kernels.EmbedOffsets(b.EdgeFeatVocab)
		_, nodeRows := kernels.EmbedOffsets(b.NodeCatVocab)
		R := b.NumEdgeTypes
		relIn := make([][]float32, R)
		relShapes := make([][]int, R)
		for j := range relIn {
			relIn[j] = randFloats(rng, N*d, 1)
			relShapes[j] = []int{N, d}
		}
		h := awayFromZero(randFloats(rng, N*d, 1))
		tabs := randFloats(rng, edgeRows*d, 0.1) // |e| small: h_v + e_uv keeps h's sign
		logits := randFloats(rng, b.NumGraphs*b.NumTargets, 2)
		cases := []opCase{
			{name: "combine", op: newCombine("combine", be, td, k, N, d),
				in:     [][]float32{randFloats(rng, N*d, 1), randFloats(rng, N*d, 1), randFloats(rng, N*d, 1), {0.2, 0.5, 0.3}, {0.4}},
				shapes: [][]int{{N, d}, {N, d}, {N, d}, {k}, {1}}, h: 1e-2, tol: 2e-2, zeroFrom: n * d},
			{name: "combine k=1", op: newCombine("combine1", be, &typedData{n: n}, 1, N, d),
				in:     [][]float32{randFloats(rng, N*d, 1), randFloats(rng, N*d, 1), randFloats(rng, N*d, 1), {1}, {0}},
				shapes: [][]int{{N, d}, {N, d}, {N, d}, {1}, {1}}, h: 1e-2, tol: 2e-2, zeroFrom: n * d},
			{name: "relation aggregation", op: newRelAgg("rel", be, td, R, N, d),
				in: relIn, shapes: relShapes, h: 1e-2, tol: 2e-2, zeroFrom: n * d},
			{name: "edge messages", op: newEdgeMsg("edge", be, td, edgeRows, N, d),
				in: [][]float32{h, tabs}, shapes: [][]int{{N, d}, {edgeRows, d}}, h: 1e-3, tol: 2e-2, zeroFrom: n * d},
			{name: "atom encoder", op: newCatEmbed("atoms", be, td, nodeRows, N, d),
				in: [][]float32{randFloats(rng, nodeRows*d, 1)}, shapes: [][]int{{nodeRows, d}}, h: 1e-2, tol: 2e-2, zeroFrom: n * d},
			{name: "graph sum", op: newGraphSum("gsum", be, td, N, d),
				in: [][]float32{randFloats(rng, N*d, 1)}, shapes: [][]int{{N, d}}, h: 1e-2, tol: 2e-2, zeroFrom: n * d},
			{name: "masked bce", op: newBCE("bce", td, b.NumGraphs+2, b.NumTargets),
				in:     [][]float32{append(logits, randFloats(rng, 2*b.NumTargets, 1)...)},
				shapes: [][]int{{b.NumGraphs + 2, b.NumTargets}}, h: 1e-2, tol: 2e-2, scalar: true},
		}
		for _, c := range cases {
			checkOpGrad(t, c)
		}
	}
}

// TestBCEIgnoresMissing checks that a missing label contributes neither
// loss nor gradient, whatever its logit.
func TestBCEIgnoresMissing(t *testing.T) {
	td := &typedData{g: 2, target: []float64{1, math.NaN(), 0, 1}}
	op := newBCE("bce", td, 2, 2)
	a, err := op.Do(tensorOf([]float32{0, 100, 0, 0}, 2, 2))
	if err != nil {
		t.Fatal(err)
	}
	b, err := op.Do(tensorOf([]float32{0, -100, 0, 0}, 2, 2))
	if err != nil {
		t.Fatal(err)
	}
	if a.Data().(float32) != b.Data().(float32) || math.Abs(float64(a.Data().(float32))-math.Ln2) > 1e-6 {
		t.Fatalf("losses %v and %v, want both ln 2", a.Data(), b.Data())
	}
}
