package qm9

import (
	"bytes"
	"compress/gzip"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spn-project/spn/data/fetch"
	"github.com/spn-project/spn/internal/testkit/mirrortest"
)

// TestFetchSources: GNN-FiLM's split needs the train file, which the
// mirror lacks: the error names the file and its URL. valid-as-train
// splits the valid file and tests on the test file.
func TestFetchSources(t *testing.T) {
	f := &fetch.Fetcher{DataDir: t.TempDir(), Mirror: mirrortest.Dir(t)}
	_, err := Fetch(context.Background(), f, Options{Source: SourceFiLM, Limit: 10})
	if err == nil || !strings.Contains(err.Error(), "train.jsonl.gz ("+URL("train")+")") || !strings.Contains(err.Error(), `"valid-as-train"`) {
		t.Fatalf("film without the train file: %v", err)
	}
	ds, err := Fetch(context.Background(), f, Options{Source: SourceValidAsTrain, TrainSize: 60, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	sp := ds.Splits
	if len(sp) != 1 || len(sp[0].Train) != 60 || len(sp[0].Val) != 40 || len(sp[0].Test) != 100 || len(ds.Graphs) != 200 {
		t.Fatalf("splits %d: %d/%d/%d of %d graphs", len(sp), len(sp[0].Train), len(sp[0].Val), len(sp[0].Test), len(ds.Graphs))
	}
	if sp[0].Train[0] != 0 || sp[0].Val[0] != 60 || sp[0].Test[0] != 100 {
		t.Fatalf("split order: %d %d %d", sp[0].Train[0], sp[0].Val[0], sp[0].Test[0])
	}
	if err := ds.Validate(); err != nil {
		t.Fatal(err)
	}
	// The first molecules of valid.jsonl.gz are the ones read alone.
	v, err := LoadN(filepath.Join(mirrortest.Dir(t), "qm9", "valid.jsonl.gz"), "valid", 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Graphs) != 3 || v.Graphs[2].N != ds.Graphs[2].N || v.Graphs[2].Target[7] != ds.Graphs[2].Target[7] {
		t.Fatal("valid-as-train does not start with the valid file's first molecules")
	}
	if _, err := Fetch(context.Background(), f, Options{Source: SourceValidAsTrain, TrainSize: 100, Limit: 100}); err == nil || !strings.Contains(err.Error(), "train_size 100") {
		t.Fatalf("train_size = limit: %v", err)
	}
	if _, err := Fetch(context.Background(), f, Options{Source: "random"}); err == nil || !strings.Contains(err.Error(), `source "random" is unknown`) {
		t.Fatalf("unknown source: %v", err)
	}
}

// TestCorruptFiles: a truncated gzip stream and a corrupted line fail
// with the file and the line.
func TestCorruptFiles(t *testing.T) {
	src, err := os.ReadFile(filepath.Join(mirrortest.Dir(t), "qm9", "valid.jsonl.gz"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	trunc := filepath.Join(dir, "valid.jsonl.gz")
	if err := os.WriteFile(trunc, src[:len(src)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Load(trunc, "valid")
	if err == nil || !regexp.MustCompile(regexp.QuoteMeta(trunc)+`:[0-9]+: `).MatchString(err.Error()) {
		t.Fatalf("truncated file: %v", err)
	}
	bad := filepath.Join(dir, "bad.jsonl.gz")
	fh, err := os.Create(bad)
	if err != nil {
		t.Fatal(err)
	}
	zw := gzip.NewWriter(fh)
	zw.Write([]byte(mol + "\n" + mol + "\n" + strings.Replace(mol, `"graph"`, `"graf"`, 1) + "\n"))
	zw.Close()
	fh.Close()
	if _, err := Load(bad, "bad"); err == nil || !strings.Contains(err.Error(), bad+":3: bad JSON") {
		t.Fatalf("corrupt line: %v", err)
	}
	// A file that is not the pinned one is refused by Fetch.
	mir := t.TempDir()
	os.MkdirAll(filepath.Join(mir, "qm9"), 0o755)
	// A well-formed file that is not GNN-FiLM's: refused by its content
	// figures.
	var other bytes.Buffer
	zw = gzip.NewWriter(&other)
	zw.Write([]byte(mol + "\n" + mol + "\n"))
	zw.Close()
	os.WriteFile(filepath.Join(mir, "qm9", "valid.jsonl.gz"), other.Bytes(), 0o644)
	f := &fetch.Fetcher{DataDir: t.TempDir(), Mirror: mir}
	if _, err := Fetch(context.Background(), f, Options{Source: SourceValidAsTrain, TrainSize: 1, Limit: 10}); err == nil || !strings.Contains(err.Error(), `valid.jsonl.gz: content figure "graphs" is 2, expected 10000`) {
		t.Fatalf("unpinned file: %v", err)
	}
	// A truncated file in the mirror is refused before anything is pinned
	// or written, naming the mirror's file.
	os.WriteFile(filepath.Join(mir, "qm9", "valid.jsonl.gz"), src[:len(src)/2], 0o644)
	f = &fetch.Fetcher{DataDir: t.TempDir(), Mirror: mir}
	if _, err := Fetch(context.Background(), f, Options{Source: SourceValidAsTrain, TrainSize: 5, Limit: 10}); err == nil || !strings.Contains(err.Error(), "the mirror's file "+filepath.Join(mir, "qm9", "valid.jsonl.gz")+" (for "+URL("valid")+") is malformed") {
		t.Fatalf("truncated file in the mirror: %v", err)
	}
}

func TestTargetIndex(t *testing.T) {
	if i, err := TargetIndex("U0"); err != nil || i != 7 {
		t.Fatalf("U0: %d %v", i, err)
	}
	if _, err := TargetIndex("u0"); err == nil || !strings.Contains(err.Error(), `unknown QM9 property "u0"`) {
		t.Fatalf("u0: %v", err)
	}
}
