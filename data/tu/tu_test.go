package tu

import (
	"archive/zip"
	"bytes"
	"context"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spn-project/spn/data/fetch"
	"github.com/spn-project/spn/internal/testkit/mirrortest"

	"github.com/spn-project/spn/internal/testkit/golden"
)

// TestLoadMirror checks the counts the data actually has.
func TestLoadMirror(t *testing.T) {
	tests := []struct {
		name                     string
		graphs, nodes, edges     int
		labels, attrDim, classes int
	}{
		{"DD", 1178, 334925, 843046, 82, 0, 2},
		{"NCI1", 4110, 122747, 132753, 37, 0, 2},
		{"PROTEINS", 1113, 43471, 81044, 3, 1, 2},
		{"PROTEINS_full", 1113, 43471, 81044, 3, 29, 2},
		{"ENZYMES", 600, 19580, 37282, 3, 18, 6},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ds, info, err := LoadWithInfo(mirrortest.TUZip(t, tc.name), mirrortest.Splits(t, SplitsName(tc.name)))
			if err != nil {
				t.Fatal(err)
			}
			nodes, edges := 0, 0
			for _, g := range ds.Graphs {
				nodes += g.N
				edges += g.NumEdges()
			}
			if len(ds.Graphs) != tc.graphs || nodes != tc.nodes || edges != tc.edges {
				t.Errorf("graphs/nodes/edges = %d/%d/%d, want %d/%d/%d", len(ds.Graphs), nodes, edges, tc.graphs, tc.nodes, tc.edges)
			}
			if ds.NumLabels != tc.labels || ds.AttrDim != tc.attrDim || ds.NumClasses != tc.classes {
				t.Errorf("labels/attrs/classes = %d/%d/%d, want %d/%d/%d", ds.NumLabels, ds.AttrDim, ds.NumClasses, tc.labels, tc.attrDim, tc.classes)
			}
			if info.SelfLoops != 0 || info.OneWay != 0 || info.Duplicates != 0 || info.EdgeLines != 2*tc.edges {
				t.Errorf("edge file clean-up: %+v", info)
			}
			if len(ds.Splits) != 10 {
				t.Errorf("%d splits, want 10", len(ds.Splits))
			}
			if err := ds.Validate(); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestFetchThroughMirror(t *testing.T) {
	f := &fetch.Fetcher{DataDir: t.TempDir(), Mirror: mirrortest.Dir(t)}
	ds, err := Fetch(context.Background(), f, "ENZYMES")
	if err != nil {
		t.Fatal(err)
	}
	if ds.Name != "ENZYMES" || len(ds.Graphs) != 600 || len(ds.Splits) != 10 {
		t.Fatalf("fetched %s with %d graphs and %d splits", ds.Name, len(ds.Graphs), len(ds.Splits))
	}
	if ds.AttrDim != 18 || len(ds.Graphs[0].Attrs) != 18*ds.Graphs[0].N {
		t.Fatalf("ENZYMES keeps %d attributes", ds.AttrDim)
	}
	ds, err = Fetch(context.Background(), f, "PROTEINS_full")
	if err != nil {
		t.Fatal(err)
	}
	if ds.AttrDim != 0 || ds.Graphs[0].Attrs != nil || ds.NumLabels != 3 {
		t.Fatalf("PROTEINS_full: %d attributes, %d labels; Errica uses the 3 labels only", ds.AttrDim, ds.NumLabels)
	}
	if _, err := Fetch(context.Background(), f, "MUTAG"); err == nil {
		t.Fatal("unknown dataset accepted")
	}
}

// tiny is a valid two-graph dataset in TU text form.
var tiny = map[string]string{
	"A":               "1, 2\n2, 1\n2, 3\n3, 2\n4, 5\n5, 4\n",
	"graph_indicator": "1\n1\n1\n2\n2\n",
	"graph_labels":    "-1\n1\n",
	"node_labels":     "7\n3\n7\n3\n9\n",
	"node_attributes": "1.0, 2\n3, 4\n5, 6\n7, 8\n9, 10\n",
}

func tinyWith(over map[string]string) Files {
	get := func(k string) []byte {
		if v, ok := over[k]; ok {
			if v == "<absent>" {
				return nil
			}
			return []byte(v)
		}
		return []byte(tiny[k])
	}
	return NewFiles("T", get("A"), get("graph_indicator"), get("graph_labels"), get("node_labels"), get("node_attributes"))
}

func TestParseTiny(t *testing.T) {
	ds, info, err := Parse("T", tinyWith(nil))
	if err != nil {
		t.Fatal(err)
	}
	if len(ds.Graphs) != 2 || ds.NumClasses != 2 || ds.NumLabels != 3 || ds.AttrDim != 2 {
		t.Fatalf("got %d graphs, %d classes, %d labels, %d attrs", len(ds.Graphs), ds.NumClasses, ds.NumLabels, ds.AttrDim)
	}
	g := ds.Graphs[1]
	if g.N != 2 || g.NumEdges() != 1 || g.Y != 1 || g.Labels[0] != 0 || g.Labels[1] != 2 || g.Attrs[3] != 10 {
		t.Fatalf("graph 1 = %+v", g)
	}
	if info.Edges != 3 || info.EdgeLines != 6 {
		t.Fatalf("info %+v", info)
	}
	// Self loops and repeats are dropped, one-way edges kept undirected.
	ds, info, err = Parse("T", tinyWith(map[string]string{"A": "1, 2\n1, 2\n2, 2\n2, 3\n4, 5\n5, 4\n"}))
	if err != nil {
		t.Fatal(err)
	}
	if info.SelfLoops != 1 || info.Duplicates != 1 || info.OneWay != 2 || info.Edges != 3 {
		t.Fatalf("info %+v", info)
	}
	if r := ds.Graphs[0].Adj.Row(1); len(r) != 2 {
		t.Fatalf("node 2's neighbours %v", r)
	}
}

func TestParseErrorsGolden(t *testing.T) {
	cases := []struct {
		name string
		over map[string]string
	}{
		{"malformed edge line", map[string]string{"A": "1, 2\n2 1\n"}},
		{"edge id out of range", map[string]string{"A": "1, 2\n2, 17\n"}},
		{"edge across graphs", map[string]string{"A": "1, 4\n"}},
		{"non-integer indicator", map[string]string{"graph_indicator": "1\n1\nx\n2\n2\n"}},
		{"indicator skips a graph", map[string]string{"graph_indicator": "1\n1\n1\n3\n3\n"}},
		{"indicator decreases", map[string]string{"graph_indicator": "1\n2\n1\n2\n2\n"}},
		{"too few graph labels", map[string]string{"graph_labels": "1\n"}},
		{"too many node labels", map[string]string{"node_labels": "1\n1\n1\n1\n1\n1\n"}},
		{"ragged attributes", map[string]string{"node_attributes": "1, 2\n3\n5, 6\n7, 8\n9, 10\n"}},
		{"bad attribute", map[string]string{"node_attributes": "1, 2\n3, y\n5, 6\n7, 8\n9, 10\n"}},
		{"NaN attribute", map[string]string{"node_attributes": "1, 2\n3, 4\n5, nan\n7, 8\n9, 10\n"}},
		{"infinite attribute", map[string]string{"node_attributes": "1, 2\n3, 4\n5, 6\n-Inf, 8\n9, 10\n"}},
		{"attribute beyond float32", map[string]string{"node_attributes": "1, 2\n3, 4\n5, 6\n1e39, 8\n9, 10\n"}},
		{"attribute rows missing", map[string]string{"node_attributes": "1, 2\n"}},
	}
	var out strings.Builder
	for _, tc := range cases {
		_, _, err := Parse("T", tinyWith(tc.over))
		if err == nil {
			t.Errorf("%s: parsed without error", tc.name)
			continue
		}
		out.WriteString(tc.name + ": " + err.Error() + "\n")
	}
	golden.CheckString(t, "testdata/parse_errors.golden", out.String())
}

func writeZip(t *testing.T, entries map[string]string) string {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, name := range slices.Sorted(maps.Keys(entries)) {
		w, err := zw.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(entries[name]))
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "T.zip")
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestZipLayouts(t *testing.T) {
	for _, prefix := range []string{"T//", "T/", ""} {
		entries := map[string]string{}
		for k, v := range tiny {
			entries[prefix+"T_"+k+".txt"] = v
		}
		ds, err := Load(writeZip(t, entries), "")
		if err != nil {
			t.Fatalf("prefix %q: %v", prefix, err)
		}
		if ds.Name != "T" || len(ds.Graphs) != 2 {
			t.Fatalf("prefix %q: %s with %d graphs", prefix, ds.Name, len(ds.Graphs))
		}
	}
}

func TestZipErrorsGolden(t *testing.T) {
	good := map[string]string{}
	for k, v := range tiny {
		good["T//T_"+k+".txt"] = v
	}
	zp := writeZip(t, good)
	b, _ := os.ReadFile(zp)
	trunc := filepath.Join(t.TempDir(), "T.zip")
	os.WriteFile(trunc, b[:len(b)/2], 0o644)
	corrupt := filepath.Join(t.TempDir(), "T.zip")
	c := append([]byte{}, b...)
	for i := 40; i < 60; i++ {
		c[i] ^= 0x55
	}
	os.WriteFile(corrupt, c, 0o644)
	missing := map[string]string{"T//T_A.txt": tiny["A"]}
	var out strings.Builder
	for _, tc := range []struct{ name, path string }{
		{"truncated zip", trunc},
		{"corrupted entry", corrupt},
		{"missing entry", writeZip(t, missing)},
	} {
		_, err := Load(tc.path, "")
		if err == nil {
			t.Errorf("%s: loaded without error", tc.name)
			continue
		}
		msg := strings.ReplaceAll(err.Error(), filepath.Dir(tc.path), "DIR")
		out.WriteString(tc.name + ": " + msg + "\n")
	}
	golden.CheckString(t, "testdata/zip_errors.golden", out.String())
}

func TestSplitErrorsGolden(t *testing.T) {
	cases := []struct{ name, json string }{
		{"syntax error", "[{\"test\": [0],\n \"model_selection\": [{\"train\": [1,]}]}]"},
		{"wrong type", "[{\"test\": [\"a\"]}]"},
		{"unknown field", "[{\"tset\": [0]}]"},
		{"no folds", "[]"},
		{"index out of range", `[{"test": [0, 5], "model_selection": [{"train": [1], "validation": [2]}]}]`},
		{"test overlaps train", `[{"test": [0], "model_selection": [{"train": [0, 1], "validation": [2]}]}]`},
		{"index twice in test", `[{"test": [0, 1, 1], "model_selection": [{"train": [2], "validation": []}]}]`},
		{"fold misses a graph", `[{"test": [0], "model_selection": [{"train": [1], "validation": []}]}]`},
		{"graph never tested", `[{"test": [0], "model_selection": [{"train": [1], "validation": [2]}]}, {"test": [1], "model_selection": [{"train": [0], "validation": [2]}]}]`},
		{"two model selections", `[{"test": [0], "model_selection": [{"train": [1], "validation": [2]}, {"train": [1], "validation": [2]}]}]`},
		{"trailing data", `[{"test": [0, 1, 2], "model_selection": [{"train": [], "validation": []}]}] x`},
	}
	var out strings.Builder
	for _, tc := range cases {
		_, err := ParseSplits("splits.json", []byte(tc.json), 3)
		if err == nil {
			t.Errorf("%s: parsed without error", tc.name)
			continue
		}
		out.WriteString(tc.name + ": " + err.Error() + "\n")
	}
	golden.CheckString(t, "testdata/split_errors.golden", out.String())
	// Split file that does not match the dataset: ENZYMES splits on NCI1.
	_, err := Load(mirrortest.TUZip(t, "NCI1"), mirrortest.Splits(t, "ENZYMES"))
	if err == nil || !strings.Contains(err.Error(), "ENZYMES_splits.json") {
		t.Fatalf("mismatched split file: %v", err)
	}
}

func FuzzParseTU(f *testing.F) {
	f.Add([]byte(tiny["A"]), []byte(tiny["graph_indicator"]), []byte(tiny["graph_labels"]), []byte(tiny["node_labels"]), []byte(tiny["node_attributes"]))
	f.Add([]byte("1, 1\n"), []byte("1\n"), []byte("0\n"), []byte(""), []byte(""))
	f.Add([]byte("1,2\r\n"), []byte("1\r\n1\r\n"), []byte("3"), []byte("1\n2\n"), []byte("0.5\n1e3\n"))
	f.Fuzz(func(t *testing.T, a, ind, gl, nl, na []byte) {
		ds, _, err := Parse("F", NewFiles("F", a, ind, gl, nl, na))
		if err != nil {
			return
		}
		if err := ds.Validate(); err != nil {
			t.Fatalf("parsed dataset is invalid: %v", err)
		}
	})
}

func FuzzParseSplits(f *testing.F) {
	f.Add([]byte(`[{"test": [0], "model_selection": [{"train": [1], "validation": [2]}]}]`), 3)
	f.Add([]byte(`[{"test": [0,1,2], "model_selection": [{"train": [], "validation": []}]}]`), 3)
	f.Add([]byte(`[`), 1)
	f.Fuzz(func(t *testing.T, b []byte, n int) {
		if n < 0 || n > 1000 {
			return
		}
		splits, err := ParseSplits("f", b, n)
		if err != nil {
			return
		}
		for i, s := range splits {
			if err := s.Validate(n); err != nil {
				t.Fatalf("split %d invalid: %v", i, err)
			}
		}
	})
}

func FuzzReadZip(f *testing.F) {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, k := range slices.Sorted(maps.Keys(tiny)) {
		w, _ := zw.Create("T//T_" + k + ".txt")
		w.Write([]byte(tiny[k]))
	}
	zw.Close()
	f.Add(buf.Bytes())
	f.Add(buf.Bytes()[:buf.Len()/2])
	f.Add([]byte("PK\x03\x04"))
	f.Fuzz(func(t *testing.T, b []byte) {
		zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
		if err != nil {
			return
		}
		ds, _, err := ReadZip(zr, "T")
		if err != nil {
			return
		}
		if err := ds.Validate(); err != nil {
			t.Fatalf("read an invalid dataset: %v", err)
		}
	})
}

// TestFetchRejectsChangedLabel: an ENZYMES zip whose first graph label is
// changed to -7 is still well-formed, but it has 7 classes: Fetch refuses
// it, naming the zip and the figure, even with no lock entry yet.
func TestFetchRejectsChangedLabel(t *testing.T) {
	src, err := os.ReadFile(mirrortest.TUZip(t, "ENZYMES"))
	if err != nil {
		t.Fatal(err)
	}
	zr, err := zip.NewReader(bytes.NewReader(src), int64(len(src)))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	zw := zip.NewWriter(&out)
	for _, f := range zr.File {
		rc, _ := f.Open()
		b, _ := io.ReadAll(rc)
		rc.Close()
		if strings.HasSuffix(f.Name, "_graph_labels.txt") {
			b = append([]byte("-7"), b[bytes.IndexByte(b, '\n'):]...)
		}
		w, _ := zw.Create(f.Name)
		w.Write(b)
	}
	zw.Close()
	mir := t.TempDir()
	os.MkdirAll(filepath.Join(mir, "tu"), 0o755)
	os.MkdirAll(filepath.Join(mir, "splits", "errica"), 0o755)
	os.WriteFile(filepath.Join(mir, "tu", "ENZYMES.zip"), out.Bytes(), 0o644)
	sp, _ := os.ReadFile(mirrortest.Splits(t, "ENZYMES"))
	os.WriteFile(filepath.Join(mir, "splits", "errica", "ENZYMES_splits.json"), sp, 0o644)
	dir := t.TempDir()
	_, err = Fetch(context.Background(), &fetch.Fetcher{DataDir: dir, Mirror: mir}, "ENZYMES")
	want := filepath.Join(dir, "tu", "ENZYMES.zip") + `: content figure "classes" is 7, expected 6`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("want %q, got %v", want, err)
	}
}

// A structurally valid but wrong split file from a bad mirror (a fold
// with a graph twice) is kept in the data folder on the first fetch; the
// error says how to replace the kept copy once the mirror is fixed.
func TestFetchBadMirrorHint(t *testing.T) {
	good := mirrortest.Dir(t)
	bad := t.TempDir()
	zipURL, splitsURL := URLs("ENZYMES")
	for _, u := range []string{zipURL, splitsURL} {
		rel, ok := fetch.LocalPath(u)
		if !ok {
			t.Fatalf("no local path for %s", u)
		}
		b, err := os.ReadFile(filepath.Join(good, rel))
		if err != nil {
			t.Fatal(err)
		}
		if u == splitsURL {
			b = []byte(`[{"test": [0, 0], "model_selection": [{"train": [1], "validation": [2]}]}]`)
		}
		os.MkdirAll(filepath.Dir(filepath.Join(bad, rel)), 0o755)
		if err := os.WriteFile(filepath.Join(bad, rel), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f := &fetch.Fetcher{DataDir: t.TempDir(), Mirror: bad}
	_, err := Fetch(context.Background(), f, "ENZYMES")
	if err == nil || !strings.Contains(err.Error(), "graph 0 is twice in test") || !strings.HasSuffix(err.Error(), "run `spn data fetch ENZYMES --refresh`") {
		t.Fatalf("error %v", err)
	}
}
