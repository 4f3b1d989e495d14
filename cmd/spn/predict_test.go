package main

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/data/jsonl"
	"github.com/spn-project/spn/data/prox"
)

const predictSpec = `package spn

name: "p"
experiments: spn: {
	dataset: {kind: "prox", h: 3, graphs: 40, folds: 4, kmax: 3}
	model: {kind: "spn", k: 3, layers: 2, hidden: 8}
	training: epochs: 2
	protocol: {splits: 1, runs: 1}
}
tables: t: {
	formats: ["csv"]
	columns: [{key: "p", header: "3-Prox"}]
	rows: [{label: "SPN", cells: {p: experiment: "spn"}}]
}
`

// TestPredict trains a tiny experiment, then predicts graphs and their
// relabelled copies: the probabilities must agree within 1e-5 (only the
// order of float32 sums changes).
func TestPredict(t *testing.T) {
	dir := t.TempDir()
	spec := filepath.Join(dir, "p.cue")
	if err := os.WriteFile(spec, []byte(predictSpec), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	a := &app{stdout: &out, stderr: &errb, getenv: func(string) string { return "" }}
	cacheDir := filepath.Join(dir, "cache")
	if code := a.main([]string{"run", spec, "--cache", cacheDir, "--out", filepath.Join(dir, "results"), "--log-level", "error"}); code != exitOK {
		t.Fatalf("run: exit %d: %s", code, errb.String())
	}
	ds, err := prox.Generate(context.Background(), prox.Config{H: 3, Graphs: 6, Levels: [2]int{4, 5}, Width: [2]int{3, 4}, Folds: 3, Seed: 9})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(2, 2))
	perm := &data.Dataset{Name: ds.Name, NumLabels: ds.NumLabels, NumClasses: ds.NumClasses}
	for _, g := range ds.Graphs {
		p := rng.Perm(g.N)
		var edges [][2]int
		for _, e := range g.Edges() {
			edges = append(edges, [2]int{p[e[0]], p[e[1]]})
		}
		h, err := data.FromEdges(g.N, edges)
		if err != nil {
			t.Fatal(err)
		}
		h.Labels = make([]int32, g.N)
		for u, l := range g.Labels {
			h.Labels[p[u]] = l
		}
		h.Y = g.Y
		perm.Graphs = append(perm.Graphs, h)
	}
	predictFile := func(ds *data.Dataset) []map[string]any {
		f := filepath.Join(dir, "in.jsonl")
		var buf bytes.Buffer
		if err := jsonl.Write(&buf, ds); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		out.Reset()
		if code := a.main([]string{"predict", spec, "--experiment", "spn", "--input", f, "--cache", cacheDir}); code != exitOK {
			t.Fatalf("predict: exit %d: %s", code, errb.String())
		}
		var lines []map[string]any
		for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
			var m map[string]any
			if err := json.Unmarshal([]byte(l), &m); err != nil {
				t.Fatalf("output line %q: %v", l, err)
			}
			lines = append(lines, m)
		}
		return lines
	}
	p1, p2 := predictFile(ds), predictFile(perm)
	if len(p1) != 6 || len(p2) != 6 {
		t.Fatalf("got %d and %d lines, want 6", len(p1), len(p2))
	}
	for i := range p1 {
		a, b := p1[i]["probabilities"].([]any), p2[i]["probabilities"].([]any)
		if len(a) != 2 || len(b) != 2 {
			t.Fatalf("line %d: probabilities %v %v", i, a, b)
		}
		s := a[0].(float64) + a[1].(float64)
		if math.Abs(s-1) > 1e-9 {
			t.Errorf("line %d: probabilities sum to %v", i, s)
		}
		for j := range a {
			if d := math.Abs(a[j].(float64) - b[j].(float64)); d > 1e-5 {
				t.Errorf("graph %d: probability %d changes by %g after relabelling", i, j, d)
			}
		}
	}
	// Errors name what is wrong.
	errb.Reset()
	if code := a.main([]string{"predict", spec, "--experiment", "gin", "--input", "x", "--cache", cacheDir}); code != exitUsage || !strings.Contains(errb.String(), `no experiment "gin" in the spec (have [spn])`) {
		t.Errorf("unknown experiment: exit %d, %s", code, errb.String())
	}
	errb.Reset()
	if code := a.main([]string{"predict", spec, "--experiment", "spn", "--input", "x", "--cache", filepath.Join(dir, "empty")}); code != exitFail || !strings.Contains(errb.String(), "is not trained yet") {
		t.Errorf("untrained: exit %d, %s", code, errb.String())
	}
	// Invalid input graphs are errors naming the file and line, exit 2.
	good := `{"nodes": 2, "edges": [[0, 1]], "x": [0, 0]}` + "\n"
	goodY := `{"nodes": 2, "edges": [[0, 1]], "x": [0, 0], "y": 1}` + "\n"
	for _, tc := range []struct {
		name, in, want string
		flags          []string
	}{
		{"no edges key", good + `{"nodes": 2, "x": [0, 0]}`, `:2: no "edges"`, nil},
		{"no nodes", good + good + `{"nodes": 0, "edges": [], "x": []}`, `:3: graph 2: "nodes": 0: a graph without nodes has no prediction`, nil},
		{"y out of range", goodY + `{"nodes": 2, "edges": [[0, 1]], "x": [0, 0], "y": 2}`, `:2: graph 1: "y": 2 is outside the model's classes 0..1`, nil},
		{"target for a classifier", `{"nodes": 2, "edges": [[0, 1]], "x": [0, 0], "target": [1.5]}`, `:1: graph 0: "target" given, but the model predicts a class`, nil},
		{"label outside the vocabulary", good + `{"nodes": 2, "edges": [[0, 1]], "x": [0, 99]}`, `:2: graph 1: node 1 has label 99`, nil},
		{"bad JSON", good + `{"nodes": 2,`, `:2: bad JSON`, nil},
		// A star of 5 leaves: 10 entries in N_1, 20 in N_2, none in N_3.
		{"hop sets over --max-hop-entries", good + `{"nodes": 6, "edges": [[0, 1], [0, 2], [0, 3], [0, 4], [0, 5]], "x": [0, 0, 0, 0, 0, 0]}`,
			`:2: graph 1: its hop sets N_1..N_3 have more than 29 entries`, []string{"--max-hop-entries", "29"}},
	} {
		f := filepath.Join(dir, "bad.jsonl")
		os.WriteFile(f, []byte(tc.in+"\n"), 0o644)
		errb.Reset()
		out.Reset()
		code := a.main(append([]string{"predict", spec, "--experiment", "spn", "--input", f, "--cache", cacheDir}, tc.flags...))
		if code != exitUsage || !strings.HasPrefix(errb.String(), "spn predict: "+f+tc.want) || out.Len() != 0 {
			t.Errorf("%s: exit %d, stderr %q, stdout %q; want exit %d and %q", tc.name, code, errb.String(), out.String(), exitUsage, f+tc.want)
		}
	}
}
