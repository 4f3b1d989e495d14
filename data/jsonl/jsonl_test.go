package jsonl

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/data/prox"

	"github.com/spn-project/spn/internal/testkit/golden"
)

func TestWriteGolden(t *testing.T) {
	g, err := data.FromEdges(3, [][2]int{{1, 0}, {2, 1}})
	if err != nil {
		t.Fatal(err)
	}
	g.Labels = []int32{0, 2, 1}
	g.Y = 1
	h, _ := data.FromEdges(2, nil)
	h.Labels = []int32{1, 1}
	ds := &data.Dataset{Name: "t", Graphs: []data.Graph{g, h}, NumLabels: 3, NumClasses: 2}
	var buf bytes.Buffer
	if err := Write(&buf, ds); err != nil {
		t.Fatal(err)
	}
	golden.CheckString(t, "testdata/write.golden", buf.String())
}

func TestRoundTripProx(t *testing.T) {
	ds, err := prox.Generate(context.Background(), prox.Config{H: 3, Graphs: 30, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := Write(&buf, ds); err != nil {
		t.Fatal(err)
	}
	got, err := Read(&buf, ds.Name)
	if err != nil {
		t.Fatal(err)
	}
	ds.Splits = nil
	if !reflect.DeepEqual(got, ds) {
		t.Fatal("round trip changed the dataset")
	}
}

func TestRoundTripAttrsAndTargets(t *testing.T) {
	in := `{"nodes":2,"edges":[[1,0]],"attrs":[[0.5,1],[2,3]],"target":[1.5,-2]}
{"nodes":1,"edges":[],"attrs":[[4,5]],"target":[0,0]}
`
	ds, err := Read(strings.NewReader(in), "reg")
	if err != nil {
		t.Fatal(err)
	}
	if ds.AttrDim != 2 || ds.NumTargets != 2 || ds.NumClasses != 0 || ds.Graphs[0].Attrs[3] != 3 {
		t.Fatalf("got %+v", ds)
	}
	var buf bytes.Buffer
	if err := Write(&buf, ds); err != nil {
		t.Fatal(err)
	}
	want := `{"nodes":2,"edges":[[0,1]],"attrs":[[0.5,1],[2,3]],"target":[1.5,-2]}
{"nodes":1,"edges":[],"attrs":[[4,5]],"target":[0,0]}
`
	if buf.String() != want {
		t.Fatalf("rewritten:\n%s\nwant:\n%s", buf.String(), want)
	}
}

// TestMolecules: OGB-encoded molecules (categorical atom and bond
// features, a missing binary label as null) survive a write and a read;
// the documented example parses.
func TestMolecules(t *testing.T) {
	example := `{"nodes": 2, "edges": [[0,1]], "node_feat": [[5,0,4,5,3,0,2,0,0],[7,0,1,5,2,0,2,0,0]], "edge_feat": [[0,0,0]], "target": [null,1]}`
	in := example + "\n" + `{"nodes":3,"edges":[[2,1],[0,1]],"node_feat":[[5,0,1,5,3,0,2,0,0],[5,0,2,5,2,0,2,0,0],[7,0,1,5,2,0,2,0,0]],"edge_feat":[[1,0,1],[0,0,0]],"target":[0,0]}` + "\n" + `{"nodes":1,"edges":[],"node_feat":[[16,0,0,5,2,0,3,0,0]],"target":[1,null]}` + "\n"
	ds, err := Read(strings.NewReader(in), "mol.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if ds.Task != data.TaskBinary || len(ds.NodeCatVocab) != 9 || ds.NodeCatVocab[0] != 17 || !reflect.DeepEqual(ds.EdgeFeatVocab, []int{2, 1, 2}) {
		t.Fatalf("task %q, vocabularies %v %v", ds.Task, ds.NodeCatVocab, ds.EdgeFeatVocab)
	}
	g := ds.Graphs[1]
	// CSR rows 0:[1] 1:[0 2] 2:[1]; bond 2-1 has features 1,0,1.
	if want := []int32{0, 0, 0, 0, 0, 0, 1, 0, 1, 1, 0, 1}; !reflect.DeepEqual(g.EdgeFeat, want) {
		t.Errorf("edge features %v, want %v", g.EdgeFeat, want)
	}
	if lone := ds.Graphs[2]; lone.EdgeFeat == nil || len(lone.EdgeFeat) != 0 {
		t.Errorf("a graph without bonds has edge features %v, want empty", lone.EdgeFeat)
	}
	var buf bytes.Buffer
	if err := Write(&buf, ds); err != nil {
		t.Fatal(err)
	}
	want := `{"nodes":2,"edges":[[0,1]],"node_feat":[[5,0,4,5,3,0,2,0,0],[7,0,1,5,2,0,2,0,0]],"edge_feat":[[0,0,0]],"target":[null,1]}
{"nodes":3,"edges":[[0,1],[1,2]],"node_feat":[[5,0,1,5,3,0,2,0,0],[5,0,2,5,2,0,2,0,0],[7,0,1,5,2,0,2,0,0]],"edge_feat":[[0,0,0],[1,0,1]],"target":[0,0]}
{"nodes":1,"edges":[],"node_feat":[[16,0,0,5,2,0,3,0,0]],"target":[1,null]}
`
	if buf.String() != want {
		t.Fatalf("rewritten:\n%s\nwant:\n%s", buf.String(), want)
	}
}

// TestMissingRegressionTargets: a null among targets that are not all 0
// or 1 is a missing regression target (NaN), read as a regression and
// written back as null; with only 0 and 1 beside it, a missing binary
// label.
func TestMissingRegressionTargets(t *testing.T) {
	in := `{"nodes":1,"edges":[],"target":[null,2.5]}
{"nodes":2,"edges":[[0,1]],"target":[-0.5,null]}
{"nodes":1,"edges":[],"target":[1,0]}
`
	ds, err := Read(strings.NewReader(in), "r.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if ds.TaskOf() != data.TaskRegression {
		t.Fatalf("task %q, want regression", ds.TaskOf())
	}
	for _, c := range []struct {
		g, t int
		want float64 // NaN: missing
	}{{0, 0, math.NaN()}, {0, 1, 2.5}, {1, 0, -0.5}, {1, 1, math.NaN()}, {2, 0, 1}} {
		got := ds.Graphs[c.g].Target[c.t]
		if math.IsNaN(c.want) != math.IsNaN(got) || !math.IsNaN(got) && got != c.want {
			t.Errorf("graph %d target %d = %v, want %v", c.g, c.t, got, c.want)
		}
	}
	var buf bytes.Buffer
	if err := Write(&buf, ds); err != nil {
		t.Fatal(err)
	}
	if want := `{"nodes":1,"edges":[],"target":[null,2.5]}
{"nodes":2,"edges":[[0,1]],"target":[-0.5,null]}
{"nodes":1,"edges":[],"target":[1,0]}
`; buf.String() != want {
		t.Fatalf("rewritten:\n%s\nwant:\n%s", buf.String(), want)
	}
	bin, err := Read(strings.NewReader(`{"nodes":1,"edges":[],"target":[null,1]}`+"\n"+`{"nodes":1,"edges":[],"target":[0,0]}`), "b.jsonl")
	if err != nil || bin.Task != data.TaskBinary {
		t.Fatalf("0, 1 and null: %v, task %q, want binary", err, bin.Task)
	}
}

func TestReadErrorsGolden(t *testing.T) {
	ok := `{"nodes":2,"edges":[[0,1]],"x":[0,1],"y":0}` + "\n"
	cases := []struct{ name, in string }{
		{"empty", ""},
		{"bad json", ok + `{"nodes":2,"edges":[[0,1]`},
		{"unknown field", `{"nodes":1,"edges":[],"colour":3,"y":0}`},
		{"two values", `{"nodes":1,"edges":[],"y":0} {}`},
		{"a bracket after the value", `{"nodes":1,"edges":[],"y":0} ]`},
		{"syntax error after indentation", ok + "\t  " + `{"nodes":1,"edges":[],,"y":0}`},
		{"wrong type", `{"nodes":"two","edges":[],"y":0}`},
		{"edge out of range", ok + ok + `{"nodes":2,"edges":[[0,2]],"y":0}`},
		{"self loop", `{"nodes":2,"edges":[[1,1]],"y":0}`},
		{"duplicate edge", `{"nodes":2,"edges":[[0,1],[1,0]],"y":0}`},
		{"labels wrong length", `{"nodes":2,"edges":[],"x":[0],"y":0}`},
		{"negative label", `{"nodes":1,"edges":[],"x":[-1],"y":0}`},
		{"no class", `{"nodes":1,"edges":[]}`},
		{"class and target", `{"nodes":1,"edges":[],"y":0,"target":[1]}`},
		{"mixed kinds", ok + `{"nodes":1,"edges":[],"target":[1]}`},
		{"ragged attrs", `{"nodes":2,"edges":[],"attrs":[[1],[1,2]],"y":0}`},
		{"negative nodes", `{"nodes":-1,"edges":[],"y":0}`},
		{"no nodes", `{"edges":[[0,1]],"y":0}`},
		{"zero nodes with an edge", `{"nodes":0,"edges":[[0,1]],"y":0}`},
		{"one-ended edge", `{"nodes":2,"edges":[[0]],"y":0}`},
		{"three-ended edge", `{"nodes":3,"edges":[[0,1,2]],"y":0}`},
		{"attribute beyond float32", `{"nodes":1,"edges":[],"attrs":[[1e39]],"y":0}`},
		{"node_feat wrong rows", `{"nodes":2,"edges":[],"node_feat":[[1,2]],"y":0}`},
		{"node_feat ragged", `{"nodes":2,"edges":[],"node_feat":[[1,2],[1]],"y":0}`},
		{"node_feat negative", `{"nodes":1,"edges":[],"node_feat":[[-1]],"y":0}`},
		{"node_feat missing later", `{"nodes":1,"edges":[],"node_feat":[[1]],"y":0}` + "\n" + `{"nodes":1,"edges":[],"y":0}`},
		{"node_feat missing earlier", `{"nodes":1,"edges":[],"y":0}` + "\n" + `{"nodes":1,"edges":[],"node_feat":[[1]],"y":0}`},
		{"edge_feat wrong rows", `{"nodes":2,"edges":[[0,1]],"edge_feat":[],"y":0}`},
		{"edge_feat width changes", `{"nodes":2,"edges":[[0,1]],"edge_feat":[[1,2]],"y":0}` + "\n" + `{"nodes":2,"edges":[[0,1]],"edge_feat":[[1]],"y":0}`},
		{"string in a target", `{"nodes":1,"edges":[],"target":[1.5]}` + "\n" + `{"nodes":1,"edges":[],"target":["2.5"]}`},
		{"zero nodes", ok + `{"nodes":0,"edges":[],"y":0}`},
		{"label at the category limit", `{"nodes":1,"edges":[],"x":[1048576],"y":0}`},
		{"class at the category limit", `{"nodes":1,"edges":[],"y":1048576}`},
		{"node_feat at the category limit", `{"nodes":1,"edges":[],"node_feat":[[1048576]],"y":0}`},
		{"target beyond float32", `{"nodes":1,"edges":[],"target":[1e39]}`},
		{"negative target beyond float32", `{"nodes":1,"edges":[],"target":[0,-3.5e38]}`},
		{"unknown split", `{"nodes":1,"edges":[],"y":0,"split":"dev"}`},
		{"split not a string", `{"nodes":1,"edges":[],"y":0,"split":1}`},
		{"split missing later", `{"nodes":1,"edges":[],"y":0,"split":"train"}` + "\n" + `{"nodes":1,"edges":[],"y":0}`},
		{"split missing earlier", `{"nodes":1,"edges":[],"y":0}` + "\n" + `{"nodes":1,"edges":[],"y":0,"split":"test"}`},
		{"no valid part", `{"nodes":1,"edges":[],"y":0,"split":"train"}` + "\n" + `{"nodes":1,"edges":[],"y":0,"split":"test"}`},
		{"UTF-16 little-endian", "\xff\xfe{\x00\"\x00"},
		{"UTF-16 big-endian", "\xfe\xff\x00{\x00\""},
		{"UTF-16 without a byte-order mark", "{\x00\"\x00n\x00"},
		{"gzip magic, no gzip", "\x1f\x8b not gzip"},
		{"gzip cut short", string(gzipped(ok)[:30])},
	}
	var out strings.Builder
	for _, tc := range cases {
		_, err := Read(strings.NewReader(tc.in), "in.jsonl")
		if err == nil {
			t.Errorf("%s: read without error", tc.name)
			continue
		}
		out.WriteString(tc.name + ": " + err.Error() + "\n")
	}
	golden.CheckString(t, "testdata/read_errors.golden", out.String())
}

// gzipped returns s compressed with gzip.
func gzipped(s string) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, _ = zw.Write([]byte(s))
	_ = zw.Close()
	return buf.Bytes()
}

// TestEncodings: a gzip file is read whatever its name, a UTF-8
// byte-order mark is skipped (its line keeps number 1, and a column
// counts it), and both give the graphs of the plain file.
func TestEncodings(t *testing.T) {
	plain := `{"nodes":2,"edges":[[0,1]],"x":[0,1],"y":0}` + "\n" + `{"nodes":1,"edges":[],"x":[1],"y":1}` + "\n" + `{"nodes":1,"edges":[],"x":[0],"y":1}` + "\n" + `{"nodes":3,"edges":[[0,1]],"x":[0,1,0],"y":0}` + "\n"
	want, err := Read(strings.NewReader(plain), "g.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	for name, in := range map[string][]byte{
		"gzip":          gzipped(plain),
		"BOM":           append([]byte{0xef, 0xbb, 0xbf}, plain...),
		"gzip with BOM": gzipped("\ufeff" + plain),
	} {
		got, err := Read(bytes.NewReader(in), "g.jsonl")
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: read other graphs than the plain file's", name)
		}
	}
	_, err = Read(bytes.NewReader(append([]byte{0xef, 0xbb, 0xbf}, `{"nodes":1,"edges":[],,"y":0}`...)), "g.jsonl")
	if err == nil || !strings.HasPrefix(err.Error(), "g.jsonl:1:") {
		t.Errorf("error after a BOM: %v, want one at line 1", err)
	}
}

// TestSplits: a file whose lines carry "split" has that one split, kept
// in file order; Write writes it back, and a dataset of folds is written
// without.
func TestSplits(t *testing.T) {
	in := `{"nodes":1,"edges":[],"target":[1,null],"split":"test"}
{"nodes":2,"edges":[[0,1]],"target":[0,1],"split":"train"}
{"nodes":1,"edges":[],"target":[null,0],"split":"valid"}
{"nodes":1,"edges":[],"target":[1,1],"split":"train"}
`
	ds, lines, err := ReadLines(strings.NewReader(in), "s.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	want := []data.Split{{Train: []int{1, 3}, Val: []int{2}, Test: []int{0}}}
	if !reflect.DeepEqual(ds.Splits, want) || !reflect.DeepEqual(lines, []int{1, 2, 3, 4}) {
		t.Fatalf("splits %+v lines %v, want %+v", ds.Splits, lines, want)
	}
	var buf bytes.Buffer
	if err := Write(&buf, ds); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), `"split":"valid"`) {
		t.Fatalf("written without splits:\n%s", buf.String())
	}
	again, err := Read(&buf, "s.jsonl")
	if err != nil || !reflect.DeepEqual(again.Splits, want) {
		t.Fatalf("round trip: %v, splits %+v", err, again)
	}
	ds.Splits = append(ds.Splits, ds.Splits[0])
	buf.Reset()
	if err := Write(&buf, ds); err != nil || strings.Contains(buf.String(), "split") {
		t.Fatalf("two splits written as lines (%v):\n%s", err, buf.String())
	}
}

func FuzzRead(f *testing.F) {
	f.Add([]byte(`{"nodes":3,"edges":[[0,1],[1,2]],"x":[0,2,1],"y":1}`))
	f.Add([]byte(`{"nodes":2,"edges":[[1,0]],"attrs":[[0.5,1],[2,3]],"target":[1.5,-2]}`))
	f.Add([]byte("{\"nodes\":1,\"edges\":[],\"y\":0}\n\n{\"nodes\":0,\"edges\":[],\"y\":2}\n"))
	f.Add([]byte(`{"nodes":2,"edges":[[0,1]],"node_feat":[[5,0],[7,1]],"edge_feat":[[0,2]],"target":[null,1]}`))
	f.Add([]byte(`{"nodes":1,"edges":[],"y":0,"split":"train"}` + "\n" + `{"nodes":1,"edges":[],"y":0,"split":"valid"}` + "\n" + `{"nodes":1,"edges":[],"y":0,"split":"test"}`))
	f.Add(append([]byte{0xef, 0xbb, 0xbf}, `{"nodes":1,"edges":[],"y":0}`...))
	f.Add(gzipped(`{"nodes":1,"edges":[],"target":[1e38]}` + "\n"))
	f.Add([]byte("\xff\xfe{\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		ds, err := Read(bytes.NewReader(b), "fuzz")
		if err != nil {
			// A line and column named lie in the input (decompressed).
			var le *LineError
			if errors.As(err, &le) {
				text := b
				if zr, zerr := gzip.NewReader(bytes.NewReader(b)); zerr == nil {
					if text, zerr = io.ReadAll(zr); zerr != nil {
						return // a gzip error: its place is the stream's
					}
				}
				lines := bytes.Split(text, []byte("\n"))
				if le.Line < 1 || le.Line > len(lines) || le.Col < 0 || le.Col > len(lines[le.Line-1]) {
					t.Fatalf("%v: no such place in the input", err)
				}
			}
			return
		}
		if err := ds.Validate(); err != nil {
			t.Fatalf("read an invalid dataset: %v", err)
		}
		var buf bytes.Buffer
		if err := Write(&buf, ds); err != nil {
			t.Fatalf("cannot write what was read: %v", err)
		}
		again, err := Read(&buf, "fuzz")
		if err != nil {
			t.Fatalf("cannot re-read what was written: %v", err)
		}
		if len(again.Graphs) != len(ds.Graphs) {
			t.Fatal("round trip changed the graph count")
		}
	})
}

func TestReadUnlabelled(t *testing.T) {
	tests := []struct {
		name, in string
		wantErr  string // substring; "" means success
	}{
		{"no labels", "{\"nodes\": 2, \"edges\": [[0,1]], \"x\": [0,1]}\n{\"nodes\": 1, \"edges\": [], \"x\": [2]}\n", ""},
		{"labels kept", "{\"nodes\": 2, \"edges\": [[0,1]], \"x\": [0,1], \"y\": 1}\n", ""},
		{"mixed", "{\"nodes\": 2, \"edges\": [[0,1]], \"x\": [0,1], \"y\": 1}\n{\"nodes\": 1, \"edges\": [], \"x\": [2]}\n", ":2: graph has \"none\" but earlier graphs have \"y\""},
		{"bad edge still caught", "{\"nodes\": 2, \"edges\": [[0,2]], \"x\": [0,1]}\n", "g.jsonl:1: edge 0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ds, _, err := ReadUnlabelled(strings.NewReader(tc.in), "g.jsonl")
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(ds.Graphs) == 0 || ds.NumLabels != 3 && tc.name == "no labels" {
				t.Fatalf("got %d graphs, %d labels", len(ds.Graphs), ds.NumLabels)
			}
		})
	}
	if _, err := Read(strings.NewReader("{\"nodes\": 1, \"edges\": [], \"x\": [0]}\n"), "g.jsonl"); err == nil || !strings.Contains(err.Error(), "missing \"y\" or \"target\"") {
		t.Errorf("Read of an unlabelled graph: %v, want a missing-label error", err)
	}
}

// TestReadRejects: a line without "edges" is not an edgeless graph, and a
// labelled dataset whose classes are not all used by at least 2 graphs is
// refused, naming the file and the line.
func TestReadRejects(t *testing.T) {
	two := "{\"nodes\": 2, \"edges\": [[0,1]], \"y\": 0}\n{\"nodes\": 2, \"edges\": [[0,1]], \"y\": 0}\n"
	for _, tc := range []struct{ name, in, want string }{
		{"no edges key", "{\"nodes\": 2, \"edges\": [[0,1]], \"y\": 0}\n{\"nodes\": 2, \"y\": 0}\n", `g.jsonl:2: no "edges"`},
		{"edges null", "{\"nodes\": 2, \"edges\": null, \"y\": 0}\n", `g.jsonl:1: no "edges"`},
		{"singleton class", two + "{\"nodes\": 1, \"edges\": [], \"y\": 1}\n", "g.jsonl:3: class 1 has only this graph"},
		{"unused class", two + "{\"nodes\": 1, \"edges\": [], \"y\": 2}\n{\"nodes\": 1, \"edges\": [], \"y\": 2}\n", "g.jsonl: class 1 has no graph"},
	} {
		if _, err := Read(strings.NewReader(tc.in), "g.jsonl"); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", tc.name, err, tc.want)
		}
	}
	if _, _, err := ReadUnlabelled(strings.NewReader("{\"nodes\": 2}\n"), "g.jsonl"); err == nil || !strings.Contains(err.Error(), `g.jsonl:1: no "edges"`) {
		t.Errorf("unlabelled without edges: %v", err)
	}
	if _, err := Read(strings.NewReader(two+"{\"nodes\": 1, \"edges\": [], \"y\": 1}\n{\"nodes\": 3, \"edges\": [], \"y\": 1}\n"), "g.jsonl"); err != nil {
		t.Errorf("two classes of two graphs: %v", err)
	}
}
