package exp

import (
	"context"
	"strings"
	"testing"

	"github.com/spn-project/spn/data/fetch"
	"github.com/spn-project/spn/internal/testkit/mirrortest"

	"github.com/spn-project/spn/internal/testkit/golden"
)

func TestFetchMirror(t *testing.T) {
	f := &fetch.Fetcher{DataDir: t.TempDir(), Mirror: mirrortest.Dir(t)}
	for _, name := range Names() {
		ds, err := Fetch(context.Background(), f, name)
		if err != nil {
			t.Fatal(err)
		}
		pos := 0
		for _, g := range ds.Graphs {
			pos += g.Y
		}
		if len(ds.Graphs) != 1200 || ds.NumClasses != 2 || ds.NumLabels != 2 || pos != 600 {
			t.Fatalf("%s: %d graphs, %d classes, %d labels, %d of class 1", name, len(ds.Graphs), ds.NumClasses, ds.NumLabels, pos)
		}
	}
}

func TestRead(t *testing.T) {
	in := "2\n3 1\n0 1 1\n1 2 0 2\n0 1 1\n\n2 0\n1 1 1\n1 1 0\n"
	ds, err := Read(strings.NewReader(in), "t")
	if err != nil {
		t.Fatal(err)
	}
	if len(ds.Graphs) != 2 || ds.Graphs[0].NumEdges() != 2 || ds.Graphs[0].Y != 1 || ds.Graphs[1].Y != 0 || ds.Graphs[0].Labels[1] != 1 {
		t.Fatalf("got %+v", ds)
	}
}

func TestReadErrorsGolden(t *testing.T) {
	cases := []struct{ name, in string }{
		{"empty", ""},
		{"bad count", "x\n"},
		{"bad header", "1\n3\n"},
		{"degree mismatch", "1\n2 0\n0 2 1\n0 1 0\n"},
		{"neighbour out of range", "1\n2 0\n0 1 5\n0 1 0\n"},
		{"self loop", "1\n2 0\n0 1 0\n0 1 0\n"},
		{"truncated", "2\n2 0\n0 1 1\n0 1 0\n"},
		{"trailing data", "1\n1 0\n0 0\n7\n"},
	}
	var out strings.Builder
	for _, tc := range cases {
		_, err := Read(strings.NewReader(tc.in), "in.txt")
		if err == nil {
			t.Errorf("%s: read without error", tc.name)
			continue
		}
		out.WriteString(tc.name + ": " + err.Error() + "\n")
	}
	golden.CheckString(t, "testdata/read_errors.golden", out.String())
}

func FuzzRead(f *testing.F) {
	f.Add([]byte("2\n3 1\n0 1 1\n1 2 0 2\n0 1 1\n2 0\n1 1 1\n1 1 0\n"))
	f.Add([]byte("1\n2 0\n0 1 1\n0 1 0\n"))
	f.Add([]byte("99999999\n"))
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
