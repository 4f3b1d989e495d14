package kern_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/spn-project/spn/internal/testkit/kerntest"
	"github.com/spn-project/spn/models/kernels"
)

// The launch sequences of the reductions over a batch's rows, as
// models/cuda/engine's ColSums and models/op's DeviceDots make them, for
// the kernel tests: a thread loops over one chunk's rows, a second launch
// adds the chunks.

// colSums adds the column sums of dz (n×d) to db by spn_col_part and, for
// more than one chunk, spn_col_sums, in blocks of block threads.
func colSums(t *testing.T, db, dz []float32, n, d, block int) {
	t.Helper()
	nc := kernels.NumChunks(n)
	if nc <= 1 {
		launch(t, "spn_col_part", cover(d, block), block, db, []float32(nil), dz, n, d)
		return
	}
	part := make([]float32, nc*d)
	launch(t, "spn_col_part", cover(nc*d, block), block, db, part, dz, n, d)
	launch(t, "spn_col_sums", cover(d, block), block, db, part, nc, d)
}

// dots returns ⟨g, X_m⟩ for the T matrices of xs (n×d each), then
// ⟨g, x1⟩ when x1 is not nil, by spn_row_dots, spn_dot_chunks (more than
// one chunk) and spn_sum_chunks (xs' dots into out, x1's into out1).
func dots(t *testing.T, g, xs []float32, T int, x1 []float32, n, d, block int) []float32 {
	t.Helper()
	return pairDots(t, g, xs, T, nil, nil, 0, x1, n, d, block)
}

// pairDots is dots with U more products between xs' and x1's: ⟨h, Y_m⟩
// for the U matrices of hs, as op.DeviceDots launches them.
func pairDots(t *testing.T, g, xs []float32, T int, h, hs []float32, U int, x1 []float32, n, d, block int) []float32 {
	t.Helper()
	split := T + U
	M := split
	if x1 != nil {
		M++
	}
	rp := make([]float64, max(n*M, 1))
	launch(t, "spn_row_dots", cover(n*M, block), block, rp, g, xs, x1, T, h, hs, U, n, d)
	part, rows := rp, n
	if nc := kernels.NumChunks(n); nc > 1 {
		part, rows = make([]float64, nc*M), nc
		launch(t, "spn_dot_chunks", cover(nc*M, block), block, part, rp, M, n)
	}
	out, out1 := make([]float32, max(split, 1)), make([]float32, 1)
	if x1 == nil {
		out1 = nil
	}
	launch(t, "spn_sum_chunks", cover(M, block), block, out, out1, part, rows, M, 0, M, split)
	return append(out[:split], out1...)
}

// embedGrad adds the embedding gradient of dy over the rows (ptr, idx)
// to dE (L×d) by spn_embed_part and, for rows of more than one chunk,
// spn_embed_backward, as nbop.DeviceRows.Grad launches them.
func embedGrad(t *testing.T, dE, dy []float32, ptr, idx []int32, d, block int) {
	t.Helper()
	L, K := len(ptr)-1, 1
	for l := 0; l < L; l++ {
		K = max(K, kernels.NumChunks(int(ptr[l+1]-ptr[l])))
	}
	if K == 1 {
		launch(t, "spn_embed_part", cover(L*d, block), block, dE, []float32(nil), dy, ptr, idx, L, 1, d)
		return
	}
	part := make([]float32, L*K*d)
	launch(t, "spn_embed_part", cover(L*K*d, block), block, dE, part, dy, ptr, idx, L, K, d)
	launch(t, "spn_embed_backward", cover(L*d, block), block, dE, part, ptr, L, K, d)
}

// TestEmbedGradLongRows: the embedding gradient of a row of 700 entries
// (a common category) and of short ones, into a zeroed gradient:
// rows of at most one chunk give the bits of the CPU's one sum, longer
// rows that sum within rounding (|Δ| ≤ 1e-6·Σ|terms|), whatever the
// launch's blocks.
func TestEmbedGradLongRows(t *testing.T) {
	const n, d = 1000, 5
	rng := rand.New(rand.NewPCG(10, 11))
	dy := kerntest.Randn(rng, n*d, 1)
	// Row 0 takes the nodes from 300 on, rows 1..3 the first 300 in turn
	// (100 each: one chunk), row 4 none.
	rowOf := func(u int) int32 {
		if u >= 300 {
			return 0
		}
		return int32(1 + u%3)
	}
	ptr := make([]int32, 6)
	var idx []int32
	for l := int32(0); l < 5; l++ {
		for u := 0; u < n; u++ {
			if rowOf(u) == l {
				idx = append(idx, int32(u))
			}
		}
		ptr[l+1] = int32(len(idx))
	}
	want := make([]float32, 5*d)
	for l := 0; l < 5; l++ {
		for _, u := range idx[ptr[l]:ptr[l+1]] {
			for j := 0; j < d; j++ {
				want[l*d+j] += dy[int(u)*d+j]
			}
		}
	}
	var first []float32
	for _, block := range []int{64, 7} {
		dE := make([]float32, 5*d)
		embedGrad(t, dE, dy, ptr, idx, d, block)
		checkEmbedGrad(t, "dE", dE, want, dy, ptr, idx, d)
		if first == nil {
			first = dE
		} else {
			equalBits(t, "blocks of 7", dE, first)
		}
	}
}

// checkEmbedGrad compares an embedding gradient got (into a zeroed
// gradient) with the CPU's want row by row: the same bits for a row of at
// most one chunk of entries, |Δ| ≤ 1e-6·Σ|terms| for a longer one (its
// chunks' partials added in order instead of one sum).
func checkEmbedGrad(t *testing.T, what string, got, want, dy []float32, ptr, idx []int32, d int) {
	t.Helper()
	for l := 0; l+1 < len(ptr); l++ {
		g, w := got[l*d:(l+1)*d], want[l*d:(l+1)*d]
		entries := idx[ptr[l]:ptr[l+1]]
		if len(entries) <= kernels.ChunkRows {
			equalBits(t, fmt.Sprintf("%s: row %d (%d entries)", what, l, len(entries)), g, w)
			continue
		}
		for j := range g {
			var abs float64
			for _, u := range entries {
				abs += math.Abs(float64(dy[int(u)*d+j]))
			}
			if diff := math.Abs(float64(g[j]) - float64(w[j])); diff > 1e-6*abs {
				t.Errorf("%s: row %d (%d entries), column %d: %v, the CPU's sum %v", what, l, len(entries), j, g[j], w[j])
			}
		}
	}
}

// TestColSums: the bias gradient's column sums give the bits of the CPU
// GEMM's (kernels.CPU.MatMulAT with no weights), added to what db held,
// for one chunk and several, whatever the launch's blocks.
func TestColSums(t *testing.T) {
	const d = 5
	for _, n := range []int{0, 1, 127, 128, 129, 300, 1000} {
		rng := rand.New(rand.NewPCG(8, uint64(n)))
		dz, db0 := kerntest.Randn(rng, max(n*d, 1), 1), kerntest.Randn(rng, d, 1)
		want := append([]float32(nil), db0...)
		kernels.CPU{Threads: 2}.MatMulAT([]float32{}, want, []float32{}, dz[:n*d], kernels.MatMulShape{N: n, In: 0, Out: d})
		for _, block := range []int{32, 3} {
			db := append([]float32(nil), db0...)
			colSums(t, db, dz, n, d, block)
			equalBits(t, "db", db, want)
		}
	}
}

// TestDots: spn_row_dots, spn_dot_chunks and spn_sum_chunks give each
// dot product within rounding of the exact value, the same bits whatever
// the launch's blocks and whatever other products share the launches
// (a second factor h with its matrices between xs' and x1's: each
// product the bits of its own chain), and the one-chunk shortcut (no
// spn_dot_chunks) the bits the three launches give.
func TestDots(t *testing.T) {
	const T, d = 3, 7
	for _, n := range []int{1, 100, 128, 129, 700} {
		rng := rand.New(rand.NewPCG(9, uint64(n)))
		g, xs, x1 := kerntest.Randn(rng, n*d, 1), kerntest.Randn(rng, T*n*d, 1), kerntest.Randn(rng, n*d, 1)
		got := dots(t, g, xs, T, x1, n, d, 32)
		equalBits(t, "blocks of 5", dots(t, g, xs, T, x1, n, d, 5), got)
		equalBits(t, "without x1", dots(t, g, xs, T, nil, n, d, 32), got[:T])
		equalBits(t, "x1 alone", dots(t, g, nil, 0, x1, n, d, 32), got[T:])
		const U = 2
		h, hs := kerntest.Randn(rng, n*d, 1), kerntest.Randn(rng, U*n*d, 1)
		paired := pairDots(t, g, xs[:n*d], 1, h, hs, U, x1, n, d, 32)
		equalBits(t, "pairs: ⟨g, X_0⟩", paired[:1], got[:1])
		equalBits(t, "pairs: ⟨h, Y_m⟩", paired[1:1+U], dots(t, h, hs, U, nil, n, d, 32))
		equalBits(t, "pairs: ⟨g, x1⟩", paired[1+U:], got[T:])
		equalBits(t, "pairs alone", pairDots(t, g, nil, 0, h, hs, U, nil, n, d, 7), paired[1:1+U])
		for m := 0; m <= T; m++ {
			x := x1
			if m < T {
				x = xs[m*n*d : (m+1)*n*d]
			}
			var exact float64
			for i := range g {
				exact += float64(g[i]) * float64(x[i])
			}
			near(t, "dot", got[m:m+1], []float32{float32(exact)}, dotTol*kerntest.AbsDot(g, x), 0)
		}
		if n <= kernels.ChunkRows { // the shortcut against the chunk launch
			M := T + 1
			rp := make([]float64, n*M)
			launch(t, "spn_row_dots", cover(n*M, 32), 32, rp, g, xs, x1, T, []float32(nil), []float32(nil), 0, n, d)
			part := make([]float64, M)
			launch(t, "spn_dot_chunks", cover(M, 32), 32, part, rp, M, n)
			full := make([]float32, M)
			launch(t, "spn_sum_chunks", cover(M, 32), 32, full, []float32(nil), part, 1, M, 0, M, M)
			equalBits(t, "one chunk", got, full)
		}
	}
}
