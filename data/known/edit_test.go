package known_test

import (
	"archive/zip"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spn-project/spn/data/exp"
	"github.com/spn-project/spn/data/fetch"
	"github.com/spn-project/spn/data/ogb"
	"github.com/spn-project/spn/data/qm9"
	"github.com/spn-project/spn/data/tu"
	"github.com/spn-project/spn/internal/testkit/mirrortest"
)

// editLine replaces line no (1-based) of text.
func editLine(t *testing.T, text []byte, no int, line string) []byte {
	t.Helper()
	ls := strings.Split(string(text), "\n")
	if no > len(ls) {
		t.Fatalf("no line %d", no)
	}
	if ls[no-1] == line {
		t.Fatalf("line %d is already %q", no, line)
	}
	ls[no-1] = line
	return []byte(strings.Join(ls, "\n"))
}

// rezip rewrites a zip, passing the member whose name ends in suffix
// through edit (nil: copy every member, recompressed).
func rezip(t *testing.T, src []byte, suffix string, edit func([]byte) []byte) []byte {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(src), int64(len(src)))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	zw := zip.NewWriter(&out)
	found := edit == nil
	for _, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		if edit != nil && strings.HasSuffix(f.Name, suffix) {
			b, found = edit(b), true
		}
		w, err := zw.CreateHeader(&zip.FileHeader{Name: f.Name, Method: zip.Deflate})
		if err != nil {
			t.Fatal(err)
		}
		w.Write(b)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if !found {
		t.Fatalf("no member *%s", suffix)
	}
	return out.Bytes()
}

// gz passes the uncompressed content of a gzip stream through edit.
func gz(t *testing.T, edit func([]byte) []byte) func([]byte) []byte {
	return func(b []byte) []byte {
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		plain, err := io.ReadAll(zr)
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		zw := gzip.NewWriter(&out)
		zw.Write(edit(plain))
		zw.Close()
		return out.Bytes()
	}
}

// mirrorWith returns a copy of the mirror's files rels (tu/ENZYMES.zip,
// ...) in a new folder, with file edited passed through edit.
func mirrorWith(t *testing.T, rels []string, edited string, edit func([]byte) []byte) string {
	t.Helper()
	src := mirrortest.Dir(t)
	dst := t.TempDir()
	for _, rel := range rels {
		b, err := os.ReadFile(filepath.Join(src, filepath.FromSlash(rel)))
		if err != nil {
			t.Fatal(err)
		}
		if rel == edited {
			b = edit(b)
		}
		p := filepath.Join(dst, filepath.FromSlash(rel))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// swapSplit swaps the first train and validation index of fold 0 of an
// Errica split file: still a valid split file, another split.
func swapSplit(t *testing.T, b []byte) []byte {
	var folds []map[string]any
	if err := json.Unmarshal(b, &folds); err != nil {
		t.Fatal(err)
	}
	ms := folds[0]["model_selection"].([]any)[0].(map[string]any)
	tr, va := ms["train"].([]any), ms["validation"].([]any)
	tr[0], va[0] = va[0], tr[0]
	out, err := json.Marshal(folds)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestEditsFail edits one label, one node and one edge of a set of every
// format (and the split of a split file) in a copy of the mirror: each
// fetch fails naming the file and the figure that changed, with its
// expected and actual values; the unedited files pass.
func TestEditsFail(t *testing.T) {
	tuFiles := []string{"tu/ENZYMES.zip", "splits/errica/ENZYMES_splits.json"}
	fetchTU := func(f *fetch.Fetcher) error { _, err := tu.Fetch(context.Background(), f, "ENZYMES"); return err }
	qmFiles := []string{"qm9/valid.jsonl.gz"}
	fetchQM := func(f *fetch.Fetcher) error {
		_, err := qm9.FetchPart(context.Background(), f, "valid", 10)
		return err
	}
	ogbFiles := []string{"ogb/bace.zip"}
	fetchOGB := func(f *fetch.Fetcher) error { _, err := ogb.Fetch(context.Background(), f, "bace"); return err }
	expFiles := []string{"expressivity/EXP/GRAPHSAT.txt"}
	fetchEXP := func(f *fetch.Fetcher) error { _, err := exp.Fetch(context.Background(), f, "EXP"); return err }

	member := func(suffix string, no int, line string) func([]byte) []byte {
		return func(b []byte) []byte {
			return rezip(t, b, suffix, func(m []byte) []byte { return editLine(t, m, no, line) })
		}
	}
	ogbMember := func(suffix string, no int, line string) func([]byte) []byte {
		return func(b []byte) []byte {
			return rezip(t, b, suffix, gz(t, func(m []byte) []byte { return editLine(t, m, no, line) }))
		}
	}
	qmLine := func(old, new string) func([]byte) []byte {
		return gz(t, func(m []byte) []byte {
			if !bytes.Contains(m, []byte(old)) {
				t.Fatalf("no %q in the QM9 file", old)
			}
			return bytes.Replace(m, []byte(old), []byte(new), 1)
		})
	}
	cases := []struct {
		name   string
		files  []string
		edited string
		edit   func([]byte) []byte
		fetch  func(*fetch.Fetcher) error
		figure string
	}{
		{"TU graph label -7", tuFiles, "tu/ENZYMES.zip", member("_graph_labels.txt", 1, "-7"), fetchTU, `"classes" is 7, expected 6`},
		{"TU graph label", tuFiles, "tu/ENZYMES.zip", member("_graph_labels.txt", 1, "2"), fetchTU, `"graphs of class 1" is 101, expected 100`},
		{"TU node label", tuFiles, "tu/ENZYMES.zip", member("_node_labels.txt", 1, "3"), fetchTU, `"nodes with label 0"`},
		{"TU node attribute", tuFiles, "tu/ENZYMES.zip", member("_node_attributes.txt", 1, " 12.000000, 15.887014, 37.780000, -0.510000,  1.701000, 93.900000,  4.000000,  5.000000,  2.000000,  4.000000,  4.000000,  3.000000,  3.000000,  4.000000,  4.000000,  3.000000,  6.000000,  2.000000"), fetchTU, `"sum of node attribute 0"`},
		{"TU edge", tuFiles, "tu/ENZYMES.zip", member("_A.txt", 1, "2, 5"), fetchTU, `"edges"`},
		{"split swap", tuFiles, "splits/errica/ENZYMES_splits.json", func(b []byte) []byte { return swapSplit(t, b) }, fetchTU, `"split 0 validation index sum"`},
		{"QM9 target", qmFiles, "qm9/valid.jsonl.gz", qmLine(`"targets": [[-0.37200695]`, `"targets": [[-0.37200696]`), fetchQM, `"sum of target 0"`},
		{"QM9 node", qmFiles, "qm9/valid.jsonl.gz", qmLine(`"node_features": [[0, 0, 0, 0, 1, 9,`, `"node_features": [[0, 0, 0, 0, 1, 8,`), fetchQM, `"sum of node attribute 5"`},
		{"QM9 edge", qmFiles, "qm9/valid.jsonl.gz", qmLine(`"graph": [[0, 1, 1]`, `"graph": [[0, 2, 1]`), fetchQM, `"edges of type 0"`},
		{"OGB label", ogbFiles, "ogb/bace.zip", ogbMember("raw/graph-label.csv.gz", 1, "0"), fetchOGB, `"positive labels"`},
		{"OGB node", ogbFiles, "ogb/bace.zip", ogbMember("raw/node-feat.csv.gz", 1, "6,0,2,5,0,0,2,0,1"), fetchOGB, `"sum of node feature 0"`},
		{"OGB edge", ogbFiles, "ogb/bace.zip", ogbMember("raw/edge.csv.gz", 1, "0,2"), fetchOGB, `"edge checksum"`},
		{"EXP label", expFiles, "expressivity/EXP/GRAPHSAT.txt", func(b []byte) []byte { return editLine(t, b, 2, "59 0") }, fetchEXP, `"graphs of class 0"`},
		{"EXP node", expFiles, "expressivity/EXP/GRAPHSAT.txt", func(b []byte) []byte { return editLine(t, b, 3, "1 3 17 18 19") }, fetchEXP, `"nodes with label 0"`},
		{"EXP edge", expFiles, "expressivity/EXP/GRAPHSAT.txt", func(b []byte) []byte { return editLine(t, b, 4, "1 1 16") }, fetchEXP, `"edges"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			mir := mirrorWith(t, c.files, c.edited, c.edit)
			dataDir := t.TempDir()
			err := c.fetch(&fetch.Fetcher{DataDir: dataDir, Mirror: mir})
			path := filepath.Join(dataDir, filepath.FromSlash(c.edited))
			if err == nil || !strings.Contains(err.Error(), path+": content figure "+c.figure) || !strings.Contains(err.Error(), "--accept-data-mismatch") {
				t.Fatalf("want an error naming %s and figure %s, got %v", path, c.figure, err)
			}
			// The override lets it pass and is recorded.
			f := &fetch.Fetcher{DataDir: dataDir, Mirror: mir, AcceptMismatch: true}
			if err := c.fetch(f); err != nil {
				t.Fatalf("accepted: %v", err)
			}
			rec := false
			for _, s := range f.Sources() {
				if s.Path == c.edited {
					rec = strings.HasPrefix(s.Figures, "accepted mismatch: ") && strings.Contains(s.Figures, c.figure)
				}
			}
			if !rec {
				t.Fatalf("override not recorded: %+v", f.Sources())
			}
		})
	}
	// The unedited files pass, as verified and (where pinned) upstream's.
	for _, c := range []struct {
		files []string
		fetch func(*fetch.Fetcher) error
	}{{tuFiles, fetchTU}, {qmFiles, fetchQM}, {ogbFiles, fetchOGB}, {expFiles, fetchEXP}} {
		f := &fetch.Fetcher{DataDir: t.TempDir(), Mirror: mirrortest.Dir(t)}
		if err := c.fetch(f); err != nil {
			t.Fatal(err)
		}
		for _, s := range f.Sources() {
			if s.Figures != "verified" {
				t.Errorf("%s: figures %q", s.Path, s.Figures)
			}
		}
	}
}

// TestRepackedPasses: a re-packed but identical zip is not upstream's
// bytes, but its content figures match: it passes, recorded as not
// upstream's file.
func TestRepackedPasses(t *testing.T) {
	mir := mirrorWith(t, []string{"tu/ENZYMES.zip", "splits/errica/ENZYMES_splits.json"}, "tu/ENZYMES.zip", func(b []byte) []byte { return rezip(t, b, "", nil) })
	f := &fetch.Fetcher{DataDir: t.TempDir(), Mirror: mir}
	if _, err := tu.Fetch(context.Background(), f, "ENZYMES"); err != nil {
		t.Fatal(err)
	}
	for _, s := range f.Sources() {
		wantUp := s.Path != "tu/ENZYMES.zip"
		if s.Figures != "verified" || s.Upstream != wantUp {
			t.Errorf("%+v: want verified, upstream %v", s, wantUp)
		}
	}
}
