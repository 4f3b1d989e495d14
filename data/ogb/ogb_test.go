package ogb

import (
	"archive/zip"
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/data/fetch"
	"github.com/spn-project/spn/internal/testkit/mirrortest"

	"github.com/spn-project/spn/internal/testkit/golden"
)

// tiny is a two-molecule clintox-shaped dataset (2 binary tasks): a
// triangle-free 3-atom chain and a lone atom.
func tiny() map[string]string {
	return map[string]string{
		fileNumNode:  "3\n1\n",
		fileNumEdge:  "2\n0\n",
		fileNodeFeat: "5,0,2,5,2,0,2,0,0\n7,0,2,5,0,0,2,0,0\n5,0,1,5,3,0,2,0,0\n16,0,0,5,2,0,3,0,0\n",
		fileEdge:     "0,1\n2,1\n",
		fileEdgeFeat: "0,0,0\n1,2,1\n",
		fileLabel:    "1.0,\n,0\n",
		fileTrain:    "1\n",
		fileValid:    "0\n",
		fileTest:     "",
	}
}

// writeZip writes files below dir/ in a zip (gzip-compressed, as OGB's).
func writeZip(t *testing.T, dir string, files map[string]string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), dir+".zip")
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for rel, content := range files {
		w, err := zw.Create(dir + "/" + rel)
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(content, "!raw:") { // not gzip
			io.WriteString(w, strings.TrimPrefix(content, "!raw:"))
			continue
		}
		gz := gzip.NewWriter(w)
		io.WriteString(gz, content)
		if err := gz.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestLoadTiny(t *testing.T) {
	ds, err := Load(writeZip(t, "clintox", tiny()), "clintox")
	if err != nil {
		t.Fatal(err)
	}
	if ds.Task != data.TaskBinary || ds.NumTargets != 2 || len(ds.Graphs) != 2 {
		t.Fatalf("task %q, %d targets, %d graphs", ds.Task, ds.NumTargets, len(ds.Graphs))
	}
	g := ds.Graphs[0]
	// Bonds 0-1 (features 0,0,0) and 2-1 (1,2,1); CSR rows 0:[1] 1:[0 2] 2:[1].
	wantFeat := []int32{0, 0, 0, 0, 0, 0, 1, 2, 1, 1, 2, 1}
	if !reflect.DeepEqual(g.Adj.Idx, []int32{1, 0, 2, 1}) || !reflect.DeepEqual(g.EdgeFeat, wantFeat) {
		t.Errorf("adjacency %v features %v, want features %v", g.Adj.Idx, g.EdgeFeat, wantFeat)
	}
	if g.NodeCat[9] != 7 || len(g.NodeCat) != 27 {
		t.Errorf("node features %v", g.NodeCat)
	}
	if g.Target[0] != 1 || !math.IsNaN(g.Target[1]) || !math.IsNaN(ds.Graphs[1].Target[0]) || ds.Graphs[1].Target[1] != 0 {
		t.Errorf("targets %v %v: missing labels must stay NaN", g.Target, ds.Graphs[1].Target)
	}
	if lone := ds.Graphs[1]; lone.N != 1 || len(lone.EdgeFeat) != 0 || !reflect.DeepEqual(lone.NodeCat, []int32{16, 0, 0, 5, 2, 0, 3, 0, 0}) {
		t.Errorf("lone atom: %+v", lone)
	}
	want := data.Split{Train: []int{1}, Val: []int{0}, Test: []int{}}
	if !reflect.DeepEqual(ds.Splits, []data.Split{want}) {
		t.Errorf("splits %+v, want %+v", ds.Splits, want)
	}
	// The dataset survives the cache format unchanged.
	var buf bytes.Buffer
	if err := data.WriteDataset(&buf, ds); err != nil {
		t.Fatal(err)
	}
	back, err := data.ReadDataset(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.Graphs[0].EdgeFeat, wantFeat) || !math.IsNaN(back.Graphs[0].Target[1]) {
		t.Error("the dataset file lost the features or the missing label")
	}
}

// TestMalformedGolden: every kind of broken file fails with the file and
// line (where there is one), never a panic.
func TestMalformedGolden(t *testing.T) {
	with := func(rel, content string) map[string]string {
		m := tiny()
		m[rel] = content
		return m
	}
	without := func(rel string) map[string]string {
		m := tiny()
		delete(m, rel)
		return m
	}
	cases := []struct {
		name  string
		files map[string]string
	}{
		{"missing file", without(fileEdgeFeat)},
		{"not gzip", with(fileEdge, "!raw:0,1\n")},
		{"node rows fewer than num-node-list", with(fileNodeFeat, "5,0,2,5,2,0,2,0,0\n7,0,2,5,0,0,2,0,0\n5,0,1,5,3,0,2,0,0\n")},
		{"node rows more than num-node-list", with(fileNodeFeat, tiny()[fileNodeFeat]+"5,0,1,5,3,0,2,0,0\n")},
		{"num-edge-list shorter", with(fileNumEdge, "2\n")},
		{"num-edge-list longer", with(fileNumEdge, "2\n0\n1\n")},
		{"negative count", with(fileNumNode, "3\n-1\n")},
		{"atom feature out of range", with(fileNodeFeat, "5,0,2,5,2,0,2,0,0\n7,5,2,5,0,0,2,0,0\n5,0,1,5,3,0,2,0,0\n16,0,0,5,2,0,3,0,0\n")},
		{"atom feature bad number", with(fileNodeFeat, "5,0,2,5,2,0,2,0,0\n7,0,x,5,0,0,2,0,0\n5,0,1,5,3,0,2,0,0\n16,0,0,5,2,0,3,0,0\n")},
		{"atom row too short", with(fileNodeFeat, "5,0,2,5,2,0,2,0,0\n7,0,2,5,0,0,2,0\n")},
		{"edge node out of range", with(fileEdge, "0,1\n2,3\n")},
		{"edge self loop", with(fileEdge, "0,1\n1,1\n")},
		{"edge listed twice with other features", with(fileEdge, "0,1\n1,0\n")},
		{"edge rows more than num-edge-list", with(fileEdge, "0,1\n2,1\n0,2\n")},
		{"bond feature out of range", with(fileEdgeFeat, "0,0,0\n1,6,1\n")},
		{"label not binary", with(fileLabel, "2,\n,0\n")},
		{"label bad number", with(fileLabel, "1.0,abc\n,0\n")},
		{"label row missing", with(fileLabel, "1.0,\n")},
		{"label wrong width", with(fileLabel, "1.0\n,0\n")},
		{"split index out of range", with(fileValid, "0\n2\n")},
		{"split index negative", with(fileTest, "-1\n")},
		{"split index twice", with(fileTest, "1\n")},
		{"split bad number", with(fileTrain, "1.5\n")},
	}
	var out strings.Builder
	for _, tc := range cases {
		zp := writeZip(t, "clintox", tc.files)
		_, err := Load(zp, "clintox")
		if err == nil {
			t.Errorf("%s: loaded without error", tc.name)
			continue
		}
		out.WriteString(tc.name + ": " + strings.ReplaceAll(err.Error(), zp, "ZIP") + "\n")
	}
	reg := tiny()
	reg[fileLabel] = "1.5\n\n"
	zp := writeZip(t, "esol", reg)
	if _, err := Load(zp, "esol"); err == nil {
		t.Error("regression set with a missing label loaded")
	} else {
		out.WriteString("regression missing label: " + strings.ReplaceAll(err.Error(), zp, "ZIP") + "\n")
	}
	if _, err := Load(zp, "muv"); err == nil {
		t.Error("unknown set loaded")
	} else {
		out.WriteString("unknown name: " + err.Error() + "\n")
	}
	golden.CheckString(t, "testdata/errors.golden", out.String())
}

// TestMirrorSets pins what the mirror's sets hold: OGB's published graph
// counts and scaffold split sizes, and the missing labels of tox21.
func TestMirrorSets(t *testing.T) {
	mirror := mirrortest.Dir(t)
	cases := []struct {
		name              string
		graphs, tasks     int
		train, val, test  int
		missing           int
		firstAtom, target []float64
	}{
		{name: "bace", graphs: 1513, tasks: 1, train: 1210, val: 151, test: 152},
		{name: "bbbp", graphs: 2039, tasks: 1, train: 1631, val: 204, test: 204},
		{name: "clintox", graphs: 1477, tasks: 2, train: 1181, val: 148, test: 148},
		{name: "sider", graphs: 1427, tasks: 27, train: 1141, val: 143, test: 143},
		{name: "tox21", graphs: 7831, tasks: 12, train: 6264, val: 783, test: 784, missing: 16026},
		{name: "esol", graphs: 1128, tasks: 1, train: 902, val: 113, test: 113},
		{name: "freesolv", graphs: 642, tasks: 1, train: 513, val: 64, test: 65},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ds, err := Load(filepath.Join(mirror, "ogb", tc.name+".zip"), tc.name)
			if err != nil {
				t.Fatal(err)
			}
			s := ds.Splits[0]
			if len(ds.Graphs) != tc.graphs || ds.NumTargets != tc.tasks || len(s.Train) != tc.train || len(s.Val) != tc.val || len(s.Test) != tc.test {
				t.Errorf("%d graphs, %d tasks, split %d/%d/%d", len(ds.Graphs), ds.NumTargets, len(s.Train), len(s.Val), len(s.Test))
			}
			missing := 0
			for _, g := range ds.Graphs {
				for _, y := range g.Target {
					if math.IsNaN(y) {
						missing++
					}
				}
			}
			if missing != tc.missing {
				t.Errorf("%d missing labels, want %d", missing, tc.missing)
			}
		})
	}
	// First rows of bace, read by hand from the files.
	ds, err := Load(filepath.Join(mirror, "ogb", "bace.zip"), "bace")
	if err != nil {
		t.Fatal(err)
	}
	g := ds.Graphs[0]
	if g.N != 32 || g.NumEdges() != 35 || g.Target[0] != 1 || !reflect.DeepEqual(g.NodeCat[:9], []int32{7, 0, 2, 5, 0, 0, 2, 0, 1}) {
		t.Errorf("bace graph 0: %d nodes, %d bonds, target %v, atom 0 %v", g.N, g.NumEdges(), g.Target, g.NodeCat[:9])
	}
	es, err := Load(filepath.Join(mirror, "ogb", "esol.zip"), "esol")
	if err != nil {
		t.Fatal(err)
	}
	if es.Task != data.TaskRegression || es.Graphs[0].Target[0] != -0.77 || es.Graphs[1].Target[0] != -3.3 {
		t.Errorf("esol: task %q, targets %v %v", es.Task, es.Graphs[0].Target, es.Graphs[1].Target)
	}
}

func TestFetchThroughMirror(t *testing.T) {
	mirror := mirrortest.Dir(t)
	dir := t.TempDir()
	f := &fetch.Fetcher{DataDir: dir, Mirror: mirror}
	ds, err := Fetch(context.Background(), f, "bace")
	if err != nil {
		t.Fatal(err)
	}
	if len(ds.Graphs) != 1513 {
		t.Fatalf("%d graphs", len(ds.Graphs))
	}
	lock, err := os.ReadFile(filepath.Join(dir, fetch.LockFile))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(lock), `"ogb/bace.zip"`) || !strings.Contains(string(lock), URL("bace")) || !strings.Contains(string(lock), `"sha256"`) {
		t.Errorf("lock file does not pin bace.zip:\n%s", lock)
	}
	// A set the mirror lacks fails clearly, naming the mirror and the URL.
	empty := t.TempDir()
	_, err = Fetch(context.Background(), &fetch.Fetcher{DataDir: t.TempDir(), Mirror: empty}, "hiv")
	if err == nil || !strings.Contains(err.Error(), "not in the data mirror "+empty) || !strings.Contains(err.Error(), URL("hiv")) {
		t.Errorf("missing from mirror: got %v", err)
	}
	if _, err := Fetch(context.Background(), f, "pcba"); err == nil || !strings.Contains(err.Error(), "unknown OGB dataset") {
		t.Errorf("unknown name: got %v", err)
	}
}

// FuzzParse feeds arbitrary file contents to the parser of a 2-task binary
// set: it must fail with an error or return a valid dataset.
func FuzzParse(f *testing.F) {
	rels := []string{fileNumNode, fileNumEdge, fileNodeFeat, fileEdge, fileEdgeFeat, fileLabel, fileTrain, fileValid, fileTest}
	seed := tiny()
	f.Add(seed[rels[0]], seed[rels[1]], seed[rels[2]], seed[rels[3]], seed[rels[4]], seed[rels[5]], seed[rels[6]], seed[rels[7]], seed[rels[8]])
	f.Add("1\n", "0\n", "0,0,0,0,0,0,0,0,0\n", "", "", ",\n", "0\n", "", "")
	f.Add("2\n", "1\n", "0,0,0,0,0,0,0,0,0\n1,1,1,1,1,1,1,1,1\n", "0,1\n", "4,5,1\n", "0,1\n", "", "0\n", "")
	f.Fuzz(func(t *testing.T, a, b, c, d, e, g, h, i, j string) {
		files := map[string]string{}
		for k, v := range []string{a, b, c, d, e, g, h, i, j} {
			files[rels[k]] = v
		}
		open := func(rel string) (io.ReadCloser, error) {
			return io.NopCloser(strings.NewReader(files[rel])), nil
		}
		for _, s := range []set{{"fuzz", 2, data.TaskBinary}, {"fuzzreg", 1, data.TaskRegression}} {
			ds, err := parse(s, open)
			if err != nil {
				continue
			}
			if err := ds.Validate(); err != nil {
				t.Fatalf("parsed dataset is invalid: %v", err)
			}
		}
	})
}

// BenchmarkLoad reads hiv (41,127 molecules), the largest set of the
// mirror by graphs.
func BenchmarkLoad(b *testing.B) {
	zp := filepath.Join(mirrortest.Dir(b), "ogb", "hiv.zip")
	for b.Loop() {
		if _, err := Load(zp, "hiv"); err != nil {
			b.Fatal(err)
		}
	}
}
