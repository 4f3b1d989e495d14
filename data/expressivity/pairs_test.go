package expressivity

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spn-project/spn/data/exp"
	"github.com/spn-project/spn/internal/testkit/mirrortest"
)

func TestReadPairs(t *testing.T) {
	src := `{"name": "c6-vs-2c3", "a": {"nodes": 6, "edges": [[0,1],[1,2],[2,3],[3,4],[4,5],[5,0]]}, "b": {"nodes": 6, "edges": [[0,1],[1,2],[2,0],[3,4],[4,5],[5,3]]}}

{"a": {"nodes": 2, "edges": [[0,1]], "x": [0, 1]}, "b": {"nodes": 2, "edges": [[1,0]], "x": [1, 0], "y": 1}}
`
	ps, err := ReadPairs(strings.NewReader(src), "pairs.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 2 || ps[0].Name != "c6-vs-2c3" || ps[1].Name != "pair 3" || ps[0].A.NumEdges() != 6 || ps[1].B.Labels[0] != 1 {
		t.Fatalf("got %+v", ps)
	}
	r, err := Check(context.Background(), &ps[0], Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r.WL || !r.SP || r.MinK != 2 || r.A.Wiener != 27 || !r.A.Connected || r.B.Connected {
		t.Errorf("C6 vs 2×C3: %+v", r)
	}
}

func TestReadPairsErrors(t *testing.T) {
	tests := []struct{ src, want string }{
		{"", "f.jsonl: no pairs"},
		{"{", "f.jsonl:1: bad JSON"},
		{`{"a": {"nodes": 1, "edges": []}}`, `f.jsonl:1: missing graph "b"`},
		{`{"a": {"nodes": 1, "edges": []}, "b": {"nodes": 1, "edges": []}, "c": 1}`, `f.jsonl:1: bad JSON: json: unknown field "c"`},
		{"\n" + `{"a": {"nodes": 2, "edges": [[0,2]]}, "b": {"nodes": 1, "edges": []}}`, `f.jsonl:2: graph "a": edge 0 [0,2]: node id out of range 0..1`},
		{`{"a": {"nodes": 2, "edges": [[0,0]]}, "b": {"nodes": 1, "edges": []}}`, `graph "a": edge 0 [0,0]: self loop`},
		{`{"a": {"nodes": 1, "edges": []}, "b": {"nodes": 2, "edges": [], "x": [1]}}`, `graph "b": 1 labels in "x" for 2 nodes`},
		{`{"a": {"nodes": 1, "edges": []}, "b": 5}`, `f.jsonl:1: graph "b": bad JSON`},
		// A JSON error inside a graph has no column: ParseGraph's input is
		// not the line.
		{`{"a": {"nodes": "x", "edges": []}, "b": {"nodes": 1, "edges": []}}`, `f.jsonl:1: graph "a": bad JSON: json: cannot unmarshal string`},
		// One in the line has, counting the indentation: that of "b".
		{`  {"a": {"nodes": 1, "edges": []} "b": 1}`, `f.jsonl:1:35: bad JSON: invalid character '"' after object key:value pair`},
		{`{"a": {"nodes": 1, "edges": []}, "b": {"nodes": 1, "edges": []}} {}`, "f.jsonl:1:66: bad JSON: data after the JSON value"},
		{`{"a": {"nodes": 1, "edges": []}, "b": {"nodes": 1, "edges": []}}]`, "f.jsonl:1:65: bad JSON: data after the JSON value"},
	}
	for _, tt := range tests {
		_, err := ReadPairs(strings.NewReader(tt.src), "f.jsonl")
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ReadPairs(%q) = %v, want an error containing %q", tt.src, err, tt.want)
		}
	}
}

func FuzzReadPairs(f *testing.F) {
	f.Add(`{"name": "p", "a": {"nodes": 3, "edges": [[0,1],[1,2]], "x": [0,1,0]}, "b": {"nodes": 3, "edges": [[0,2]]}}`)
	f.Add(`{"a": {"nodes": 0, "edges": []}, "b": {"nodes": 1, "edges": [], "attrs": [[0.5]]}}`)
	f.Add("\n\n{\"a\": null}")
	f.Add(`{"a": {"nodes": 2, "edges": [[0,1],[0,1]]}, "b": {"nodes": 2, "edges": []}}`)
	f.Fuzz(func(t *testing.T, src string) {
		ps, err := ReadPairs(strings.NewReader(src), "fuzz.jsonl")
		if err != nil {
			return
		}
		for i := range ps {
			p := &ps[i]
			if p.A.N > 64 || p.B.N > 64 {
				continue
			}
			if _, err := Check(context.Background(), p, Options{Ks: []int{1, 2}, Unreachable: true}); err != nil {
				t.Fatalf("pair %d parsed but does not check: %v", i, err)
			}
		}
	})
}

// TestEXP checks the EXP and CEXP datasets of the mirror: every EXP pair
// (consecutive graphs) is 1-WL-indistinguishable by construction, and
// CEXP keeps at least some such pairs.
func TestEXP(t *testing.T) {
	if testing.Short() {
		t.Skip("reads EXP and CEXP")
	}
	dir := mirrortest.Dir(t)
	for _, name := range exp.Names() {
		ds, err := exp.Load(filepath.Join(dir, "expressivity", name, "GRAPHSAT.txt"), name)
		if err != nil {
			t.Fatal(err)
		}
		ps, err := Consecutive(ds)
		if err != nil {
			t.Fatal(err)
		}
		wl := 0
		for i := range ps {
			r, err := Check(context.Background(), &ps[i], Options{Ks: []int{1}})
			if err != nil {
				t.Fatal(err)
			}
			if r.WL {
				wl++
			}
		}
		t.Logf("%s: %d pairs, 1-WL separates %d", name, len(ps), wl)
		if name == "EXP" && wl != 0 {
			t.Errorf("EXP: 1-WL separates %d of %d pairs, want 0", wl, len(ps))
		}
		if name == "CEXP" && (wl == 0 || wl == len(ps)) {
			t.Errorf("CEXP: 1-WL separates %d of %d pairs, want some but not all", wl, len(ps))
		}
	}
}

func TestNodeAndEdgeFeatures(t *testing.T) {
	src := `{"name": "cat", "a": {"nodes": 2, "edges": [[0,1]], "node_feat": [[1, 0], [0, 0]]}, "b": {"nodes": 2, "edges": [[0,1]], "node_feat": [[0, 0], [0, 1]]}}
{"name": "same", "a": {"nodes": 2, "edges": [[0,1]], "node_feat": [[1, 0], [0, 0]]}, "b": {"nodes": 2, "edges": [[0,1]], "node_feat": [[0, 0], [1, 0]]}}
{"name": "edges", "a": {"nodes": 2, "edges": [[0,1]], "edge_feat": [[1]]}, "b": {"nodes": 2, "edges": [[0,1]], "edge_feat": [[1]]}}
`
	ps, err := ReadPairs(strings.NewReader(src), "f.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []bool{true, false} {
		r, err := Check(context.Background(), &ps[i], Options{})
		if err != nil {
			t.Fatal(err)
		}
		if r.WL != want {
			t.Errorf("%s: 1-WL %v, want %v", ps[i].Name, r.WL, want)
		}
	}
	if _, err := Check(context.Background(), &ps[2], Options{}); err == nil || !strings.Contains(err.Error(), "edge types or features") {
		t.Errorf("edge features: %v", err)
	}
}

// BenchmarkPaperPairs measures Check on the paper's three pairs (every k).
func BenchmarkPaperPairs(b *testing.B) {
	pps := PaperPairs()
	for b.Loop() {
		for i := range pps {
			if _, err := Check(context.Background(), &pps[i].Pair, Options{}); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkEXP measures Check on all 600 EXP pairs with k = 1..3.
func BenchmarkEXP(b *testing.B) {
	ds, err := exp.Load(filepath.Join(mirrortest.Dir(b), "expressivity", "EXP", "GRAPHSAT.txt"), "EXP")
	if err != nil {
		b.Fatal(err)
	}
	ps, err := Consecutive(ds)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		for i := range ps {
			if _, err := Check(context.Background(), &ps[i], Options{Ks: []int{1, 2, 3}}); err != nil {
				b.Fatal(err)
			}
		}
	}
}
