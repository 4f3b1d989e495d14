package prox

import (
	"bytes"
	"context"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/data/proxcheck"
	"github.com/spn-project/spn/data/sp"
)

// TestGenerateAllH generates a reduced set for every h of the paper and
// runs the independent checker over every graph.
func TestGenerateAllH(t *testing.T) {
	for _, h := range []int{1, 3, 5, 8, 10} {
		cfg := Config{H: h, Graphs: 120, Seed: 7}
		ds, err := Generate(context.Background(), cfg)
		if err != nil {
			t.Fatalf("h=%d: %v", h, err)
		}
		if len(ds.Graphs) != 120 || ds.NumLabels != 10 || ds.NumClasses != 2 || len(ds.Splits) != 10 {
			t.Fatalf("h=%d: %d graphs, %d labels, %d classes, %d splits", h, len(ds.Graphs), ds.NumLabels, ds.NumClasses, len(ds.Splits))
		}
		redCounts := map[int]int{}
		for i := range ds.Graphs {
			g := &ds.Graphs[i]
			pos, err := proxcheck.Check(g, h)
			if err != nil {
				t.Fatalf("h=%d graph %d: %v", h, i, err)
			}
			if pos != (g.Y == 1) || g.Y != 1-i%2 {
				t.Fatalf("h=%d graph %d: label %d, checker says positive=%v", h, i, g.Y, pos)
			}
			levels, width := shape(&ds.Graphs[i&^1])
			if levels < 15 || levels > 24 || width < 3 || width > 9 {
				t.Fatalf("h=%d graph %d: %d levels × %d", h, i, levels, width)
			}
			if i%2 == 1 {
				twin := &ds.Graphs[i-1]
				if g.NumEdges() != twin.NumEdges()+1 || !equalLabels(g.Labels, twin.Labels) {
					t.Fatalf("h=%d graph %d is not its twin plus one edge", h, i)
				}
			} else {
				reds := 0
				for _, c := range g.Labels {
					if c == proxcheck.Red {
						reds++
					}
				}
				redCounts[reds]++
			}
		}
		if redCounts[1] != 20 || redCounts[2] != 20 || redCounts[3] != 20 {
			t.Errorf("h=%d: red counts %v, want 20 each", h, redCounts)
		}
		checkSplits(t, ds)
	}
}

// shape recovers the level count and width of a positive (unmodified)
// layered graph: node 0's neighbours are the second level.
func shape(g *data.Graph) (levels, width int) {
	width = len(g.Adj.Row(0))
	return g.N / width, width
}

func equalLabels(a, b []int32) bool {
	return bytes.Equal(int32Bytes(a), int32Bytes(b))
}

func int32Bytes(s []int32) []byte {
	out := make([]byte, 0, 4*len(s))
	for _, v := range s {
		out = append(out, byte(v), byte(v>>8), byte(v>>16), byte(v>>24))
	}
	return out
}

func checkSplits(t *testing.T, ds *data.Dataset) {
	t.Helper()
	tested := make([]int, len(ds.Graphs))
	for f, s := range ds.Splits {
		if err := s.Validate(len(ds.Graphs)); err != nil {
			t.Fatalf("fold %d: %v", f, err)
		}
		if len(s.Train)+len(s.Val)+len(s.Test) != len(ds.Graphs) {
			t.Fatalf("fold %d does not cover the dataset", f)
		}
		for _, part := range [][]int{s.Train, s.Val, s.Test} {
			pos := 0
			in := map[int]bool{}
			for _, i := range part {
				in[i] = true
				pos += ds.Graphs[i].Y
			}
			if 2*pos != len(part) {
				t.Fatalf("fold %d: part of %d graphs has %d positives", f, len(part), pos)
			}
			for _, i := range part {
				if !in[i^1] {
					t.Fatalf("fold %d: graph %d and its twin are in different parts", f, i)
				}
			}
		}
		for _, i := range s.Test {
			tested[i]++
		}
	}
	for i, c := range tested {
		if c != 1 {
			t.Fatalf("graph %d tested %d times", i, c)
		}
	}
}

func TestGenerateDeterministic(t *testing.T) {
	cfg := Config{H: 3, Graphs: 60, Seed: 42}
	var enc [3][]byte
	for i, threads := range []int{1, 2, 1} {
		c := cfg
		c.Threads = threads
		if i == 2 {
			c.Seed = 43
		}
		ds, err := Generate(context.Background(), c)
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := data.WriteDataset(&buf, ds); err != nil {
			t.Fatal(err)
		}
		enc[i] = buf.Bytes()
	}
	if !bytes.Equal(enc[0], enc[1]) {
		t.Fatal("same seed, different thread counts: different bytes")
	}
	if bytes.Equal(enc[0], enc[2]) {
		t.Fatal("different seeds gave identical datasets")
	}
}

func TestConfigErrors(t *testing.T) {
	for _, c := range []Config{
		{H: 0},
		{H: 3, Graphs: 7},
		{H: 3, Levels: [2]int{5, 4}},
		{H: 3, Width: [2]int{0, 3}},
		{H: 3, Folds: 2},
		{H: 3, Graphs: 10, Folds: 10},
		{H: 3, Levels: [2]int{2, 2}, Width: [2]int{2, 2}},
		{H: 3, Negatives: "loose"},
	} {
		if _, err := Generate(context.Background(), c); err == nil {
			t.Errorf("config %+v accepted", c)
		}
	}
}

// baseOf returns the layered graph g was made from (every one of its
// edges in g, fewest edges of g outside it) and its width.
func baseOf(t *testing.T, g *data.Graph) (data.Graph, int) {
	t.Helper()
	var best data.Graph
	bestW, bestExtra := 0, -1
	for w := 1; w <= g.N/2; w++ {
		if g.N%w != 0 {
			continue
		}
		base, err := layered(g.N/w, w)
		if err != nil {
			t.Fatal(err)
		}
		if len(extraEdges(g, &base)) != 0 {
			continue
		}
		if x := len(extraEdges(&base, g)); bestExtra < 0 || x < bestExtra {
			best, bestW, bestExtra = base, w, x
		}
	}
	if bestExtra < 0 {
		t.Fatal("graph is not a layered graph plus edges")
	}
	return best, bestW
}

// extraEdges returns the edges of g not in base (u < v).
func extraEdges(base, g *data.Graph) [][2]int {
	in := map[[2]int]bool{}
	for _, e := range base.Edges() {
		in[e] = true
	}
	var out [][2]int
	for _, e := range g.Edges() {
		if !in[e] {
			out = append(out, e)
		}
	}
	return out
}

// TestCodeNegatives generates with the official rule and checks every
// twin's edge with proxcheck.CodeEdge (in one orientation), the positive
// graphs with proxcheck.Check, and the label noise: none at h = 1, a
// sizeable share at h = 3.
func TestCodeNegatives(t *testing.T) {
	for _, tc := range []struct {
		h        int
		lo, hi   float64
		balanced bool
	}{{1, 0, 0, false}, {3, 0.15, 0.65, false}, {3, 0.15, 0.65, true}} {
		ds, err := Generate(context.Background(), Config{H: tc.h, Graphs: 200, Seed: 3, Negatives: NegCode, Balanced: tc.balanced})
		if err != nil {
			t.Fatalf("h=%d: %v", tc.h, err)
		}
		for i := 0; i < len(ds.Graphs); i += 2 {
			pos, neg := &ds.Graphs[i], &ds.Graphs[i+1]
			if ok, err := proxcheck.Check(pos, tc.h); err != nil || !ok || pos.Y != 1 || neg.Y != 0 {
				t.Fatalf("h=%d pair %d: positive graph checks %v, %v (labels %d, %d)", tc.h, i/2, ok, err, pos.Y, neg.Y)
			}
			base, _ := baseOf(t, neg)
			base.Labels = pos.Labels
			extra := extraEdges(&base, neg)
			if len(extra) != 1 {
				t.Fatalf("h=%d pair %d: twin has %d extra edges", tc.h, i/2, len(extra))
			}
			a, err1 := proxcheck.CodeEdge(&base, tc.h, extra[0][0], extra[0][1])
			b, err2 := proxcheck.CodeEdge(&base, tc.h, extra[0][1], extra[0][0])
			if err1 != nil || err2 != nil || !(a || b) {
				t.Fatalf("h=%d pair %d: edge %v breaks the official rule (%v, %v)", tc.h, i/2, extra[0], err1, err2)
			}
		}
		noisy, negs, err := proxcheck.Noise(ds.Graphs, tc.h)
		if err != nil {
			t.Fatal(err)
		}
		if f := float64(noisy) / float64(negs); f < tc.lo || f > tc.hi {
			t.Errorf("h=%d balanced=%v: %d of %d twins still positive (%.2f), want in [%.2f, %.2f]", tc.h, tc.balanced, noisy, negs, f, tc.lo, tc.hi)
		}
	}
}

// TestCodeCandidates compares the generator's candidate edges with an
// exhaustive scan of proxcheck.CodeEdge, an independent implementation of
// the official rule, on coloured layered graphs.
func TestCodeCandidates(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for trial := 0; trial < 12; trial++ {
		h := []int{1, 2, 3, 5}[trial%4]
		g, err := layered(6+trial%4, 2+trial%3)
		if err != nil {
			t.Fatal(err)
		}
		dist := sp.Distances(&g)
		colours, ok := colour(rng, g.N, dist, h, 1+trial%3)
		if !ok {
			continue
		}
		g.Labels = colours
		got := map[[2]int]bool{}
		for _, e := range codeCandidates(&g, dist, colours, h) {
			got[e] = true
		}
		for src := 0; src < g.N; src++ {
			for dst := 0; dst < g.N; dst++ {
				want, err := proxcheck.CodeEdge(&g, h, src, dst)
				if err != nil {
					t.Fatal(err)
				}
				if got[[2]int{src, dst}] != want {
					t.Fatalf("trial %d (h=%d): pair (%d, %d) candidate=%v, checker says %v", trial, h, src, dst, got[[2]int{src, dst}], want)
				}
			}
		}
	}
}

// TestBalancedAndColourBlind checks the balanced mode (each positive has
// one extra edge and stays positive; the twin is strictly negative;
// both extra edges span as many levels in most pairs) and the
// colour-blind mode (the same graphs with every label 0).
func TestBalancedAndColourBlind(t *testing.T) {
	const h = 3
	cfg := Config{H: h, Graphs: 100, Seed: 9, Balanced: true}
	ds, err := Generate(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	sameSpan := 0
	for i := 0; i < len(ds.Graphs); i += 2 {
		pos, neg := &ds.Graphs[i], &ds.Graphs[i+1]
		okPos, err1 := proxcheck.Check(pos, h)
		okNeg, err2 := proxcheck.Check(neg, h)
		if err1 != nil || err2 != nil || !okPos || okNeg {
			t.Fatalf("pair %d: positive=%v, twin positive=%v (%v, %v)", i/2, okPos, okNeg, err1, err2)
		}
		base, width := baseOf(t, neg)
		ep, en := extraEdges(&base, pos), extraEdges(&base, neg)
		if len(ep) != 1 || len(en) != 1 || pos.NumEdges() != neg.NumEdges() {
			t.Fatalf("pair %d: %d and %d extra edges", i/2, len(ep), len(en))
		}
		if abs(ep[0][0]/width-ep[0][1]/width) == abs(en[0][0]/width-en[0][1]/width) {
			sameSpan++
		}
	}
	if sameSpan < len(ds.Graphs)/2*9/10 {
		t.Errorf("extra edges span as many levels in %d of %d pairs", sameSpan, len(ds.Graphs)/2)
	}
	cfg.ColourBlind = true
	blind, err := Generate(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i := range blind.Graphs {
		g, c := &blind.Graphs[i], &ds.Graphs[i]
		if g.Y != c.Y || !slices.Equal(g.Adj.Idx, c.Adj.Idx) || !slices.Equal(g.Adj.Ptr, c.Adj.Ptr) {
			t.Fatalf("graph %d differs from its coloured version beyond the labels", i)
		}
		for _, l := range g.Labels {
			if l != 0 {
				t.Fatalf("graph %d has label %d", i, l)
			}
		}
	}
}

// BenchmarkGenerateFull generates the paper's full 9000-graph set for h=10 (the slowest).
//
//	go test ./data/prox -run '^$' -bench GenerateFull -benchtime 1x
func BenchmarkGenerateFull(b *testing.B) {
	for b.Loop() {
		ds, err := Generate(context.Background(), Config{H: 10, Seed: 1})
		if err != nil {
			b.Fatal(err)
		}
		for i := range ds.Graphs {
			if pos, err := proxcheck.Check(&ds.Graphs[i], 10); err != nil || pos != (ds.Graphs[i].Y == 1) {
				b.Fatalf("graph %d: positive=%v err=%v", i, pos, err)
			}
		}
	}
}
