package qm9

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spn-project/spn/data/fetch"
	"github.com/spn-project/spn/internal/testkit/mirrortest"
)

func TestLoadMirror(t *testing.T) {
	for _, part := range []string{"valid", "test"} {
		ds, err := Load(filepath.Join(mirrortest.Dir(t), "qm9", part+".jsonl.gz"), part)
		if err != nil {
			t.Fatal(err)
		}
		if len(ds.Graphs) != 10000 {
			t.Fatalf("%s: %d molecules, want 10000", part, len(ds.Graphs))
		}
		if err := ds.Validate(); err != nil {
			t.Fatal(err)
		}
	}
	// The mirror has no train part: Fetch fails with a clear error.
	f := &fetch.Fetcher{DataDir: t.TempDir(), Mirror: mirrortest.Dir(t)}
	if _, err := Fetch(context.Background(), f, Options{}); err == nil || !strings.Contains(err.Error(), "train.jsonl.gz") {
		t.Fatalf("Fetch without train: %v", err)
	}
}

const mol = `{"targets": [[1],[2],[3],[4],[5],[6],[7],[8],[9],[10],[11],[12],[13]], "graph": [[0, 1, 1], [1, 2, 2]], "id": "qm9:1", "node_features": [[0,0,0,0,1,9,0.1,1,0,0,0,0,1,0,0],[0,1,0,0,0,6,0.2,0,0,0,0,0,1,0,0],[0,1,0,0,0,6,0.2,0,0,0,0,0,1,0,0]]}`

func TestRead(t *testing.T) {
	ds, err := Read(strings.NewReader(mol+"\n"), "m.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	g := ds.Graphs[0]
	if g.N != 3 || g.NumEdges() != 2 || g.Target[12] != 13 || g.Attrs[5] != 9 {
		t.Fatalf("got %+v", g)
	}
	// Row 1 is {0, 2}: bond 0-1 has type 1 (0-based 0), bond 1-2 type 2 (1).
	if got := g.EdgeType[g.Adj.Ptr[1]:g.Adj.Ptr[2]]; got[0] != 0 || got[1] != 1 {
		t.Fatalf("edge types of atom 1: %v", got)
	}
	if err := ds.Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestReadErrors(t *testing.T) {
	cases := map[string]string{
		"bond type":     strings.Replace(mol, "[1, 2, 2]", "[1, 7, 2]", 1),
		"atom range":    strings.Replace(mol, "[1, 2, 2]", "[1, 2, 9]", 1),
		"target count":  strings.Replace(mol, "[[1],", "[", 1),
		"feature count": strings.Replace(mol, "[0,0,0,0,1,9,0.1,1,0,0,0,0,1,0,0]", "[0]", 1),
		"bad json":      mol[:40],
		"conflict":      strings.Replace(mol, "[[0, 1, 1], [1, 2, 2]]", "[[0, 1, 1], [1, 2, 0]]", 1),
	}
	for name, in := range cases {
		_, err := Read(strings.NewReader("\n"+in), "m.jsonl")
		if err == nil || !strings.Contains(err.Error(), "m.jsonl:2:") {
			t.Errorf("%s: error %v does not name line 2", name, err)
		}
	}
}

func FuzzRead(f *testing.F) {
	f.Add([]byte(mol))
	f.Add([]byte(mol[:100]))
	f.Fuzz(func(t *testing.T, b []byte) {
		ds, err := Read(strings.NewReader(string(b)), "fuzz")
		if err != nil {
			return
		}
		if err := ds.Validate(); err != nil {
			t.Fatalf("read an invalid dataset: %v", err)
		}
	})
}
