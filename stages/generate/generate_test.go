package generate

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/data/fetch"
	"github.com/spn-project/spn/internal/testkit/mirrortest"
	"github.com/spn-project/spn/schema"
	"github.com/spn-project/spn/stages"
)

func job(t *testing.T, d schema.Dataset, env stages.Env) *stages.Job {
	t.Helper()
	raw, err := json.Marshal(stages.GenerateParams{Dataset: d})
	if err != nil {
		t.Fatal(err)
	}
	return &stages.Job{Name: "g", Params: raw, Dir: t.TempDir(), Env: env}
}

func TestProxDeterministic(t *testing.T) {
	d := schema.Dataset{Kind: "prox", H: 3, Graphs: 40, Seed: 5, KMax: 10}
	var files [2][]byte
	for i, threads := range []int{1, 2} {
		j := job(t, d, stages.Env{Threads: threads})
		if err := (Kind{}).Run(context.Background(), j); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(j.Dir, stages.FileDataset))
		if err != nil {
			t.Fatal(err)
		}
		files[i] = b
	}
	if !bytes.Equal(files[0], files[1]) {
		t.Fatal("dataset.bin differs between runs")
	}
	ds, err := data.ReadDataset(bytes.NewReader(files[0]))
	if err != nil {
		t.Fatal(err)
	}
	if ds.Name != "prox-h3" || len(ds.Graphs) != 40 || len(ds.Splits) != 10 {
		t.Fatalf("got %s with %d graphs, %d splits", ds.Name, len(ds.Graphs), len(ds.Splits))
	}
}

func TestTUThroughMirror(t *testing.T) {
	env := stages.Env{DataDir: t.TempDir(), Mirror: mirrortest.Dir(t)}
	j := job(t, schema.Dataset{Kind: "tu", Name: "PROTEINS", KMax: 10}, env)
	if err := (Kind{}).Run(context.Background(), j); err != nil {
		t.Fatal(err)
	}
	ds, err := data.ReadDatasetFile(filepath.Join(j.Dir, stages.FileDataset))
	if err != nil {
		t.Fatal(err)
	}
	if len(ds.Graphs) != 1113 || len(ds.Splits) != 10 || ds.NumLabels != 3 {
		t.Fatalf("PROTEINS: %d graphs, %d splits, %d labels", len(ds.Graphs), len(ds.Splits), ds.NumLabels)
	}
	if _, err := os.Stat(filepath.Join(env.DataDir, "spn-data.lock.json")); err != nil {
		t.Fatalf("no lock file: %v", err)
	}
}

// TestOGBThroughMirror reads bace with OGB's full features and with the
// simple set (the first two atom and bond features).
func TestOGBThroughMirror(t *testing.T) {
	env := stages.Env{DataDir: t.TempDir(), Mirror: mirrortest.Dir(t)}
	for _, tc := range []struct {
		features     string
		atoms, bonds int
	}{{"", 9, 3}, {"simple", 2, 2}} {
		j := job(t, schema.Dataset{Kind: "ogb", Name: "bace", KMax: 10, Features: tc.features}, env)
		if err := (Kind{}).Run(context.Background(), j); err != nil {
			t.Fatal(err)
		}
		ds, err := data.ReadDatasetFile(filepath.Join(j.Dir, stages.FileDataset))
		if err != nil {
			t.Fatal(err)
		}
		if len(ds.Graphs) != 1513 || len(ds.Splits) != 1 || ds.Task != data.TaskBinary || len(ds.NodeCatVocab) != tc.atoms || len(ds.EdgeFeatVocab) != tc.bonds {
			t.Fatalf("bace, features %q: %d graphs, %d splits, task %q, vocabularies %v %v", tc.features, len(ds.Graphs), len(ds.Splits), ds.Task, ds.NodeCatVocab, ds.EdgeFeatVocab)
		}
		if g := ds.Graphs[0]; len(g.NodeCat) != g.N*tc.atoms || len(g.EdgeFeat) != len(g.Adj.Idx)*tc.bonds {
			t.Errorf("bace, features %q: graph 0 has %d atom and %d bond feature values", tc.features, len(g.NodeCat), len(g.EdgeFeat))
		}
	}
}

func TestErrors(t *testing.T) {
	for _, d := range []schema.Dataset{
		{Kind: "ogb"},
		{Kind: "ogb", Name: "bace"}, // the mirror is empty
		{Kind: "ogb", Name: "pcba"},
		{Kind: "prox", H: 0},
		{Kind: "tu", Name: "MUTAG"},
	} {
		j := job(t, d, stages.Env{DataDir: t.TempDir(), Mirror: t.TempDir()})
		if err := (Kind{}).Run(context.Background(), j); err == nil {
			t.Errorf("dataset %+v: no error", d)
		}
	}
	j := &stages.Job{Name: "g", Params: json.RawMessage(`{"dataset":{"kind":"prox"},"extra":1}`), Dir: t.TempDir()}
	if err := (Kind{}).Run(context.Background(), j); err == nil {
		t.Error("unknown parameter accepted")
	}
}

// TestSources: a TU dataset's generate stage records the files it read,
// with their SHA-256, the verification of their content figures and the
// spn version; accepting changed files is recorded too.
func TestSources(t *testing.T) {
	mirror := mirrortest.Dir(t)
	d := schema.Dataset{Kind: "tu", Name: "ENZYMES", KMax: 3}
	j := job(t, d, stages.Env{DataDir: t.TempDir(), Mirror: mirror, SPNVersion: "v9.9"})
	if err := (Kind{}).Run(context.Background(), j); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(j.Dir, stages.FileSources))
	if err != nil {
		t.Fatal(err)
	}
	var src stages.DataSources
	if err := json.Unmarshal(b, &src); err != nil {
		t.Fatal(err)
	}
	if src.SPNVersion != "v9.9" || src.AcceptMismatch || len(src.Files) != 2 {
		t.Fatalf("sources: %s", b)
	}
	for _, f := range src.Files {
		sum, err := fetch.FileSHA256(filepath.Join(mirror, filepath.FromSlash(f.Path)))
		if err != nil {
			t.Fatal(err)
		}
		if f.SHA256 != sum || f.Figures != "verified" || !f.Upstream {
			t.Errorf("%s: %+v, want sha256 %s, verified, upstream", f.Path, f, sum)
		}
	}
	// A changed split file (one graph moved from training to validation
	// in fold 0) fails the stage, naming the figure, unless accepted.
	mir := t.TempDir()
	for _, rel := range []string{"tu/ENZYMES.zip", "splits/errica/ENZYMES_splits.json"} {
		b, err := os.ReadFile(filepath.Join(mirror, filepath.FromSlash(rel)))
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(rel, ".json") {
			var folds []map[string]any
			if err := json.Unmarshal(b, &folds); err != nil {
				t.Fatal(err)
			}
			ms := folds[0]["model_selection"].([]any)[0].(map[string]any)
			tr := ms["train"].([]any)
			ms["validation"] = append(ms["validation"].([]any), tr[0])
			ms["train"] = tr[1:]
			b, _ = json.Marshal(folds)
		}
		p := filepath.Join(mir, filepath.FromSlash(rel))
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, b, 0o644)
	}
	dataDir := t.TempDir()
	j = job(t, d, stages.Env{DataDir: dataDir, Mirror: mir})
	if err := (Kind{}).Run(context.Background(), j); err == nil || !strings.Contains(err.Error(), `content figure "split 0 train graphs"`) {
		t.Fatalf("changed split file: %v", err)
	}
	j = job(t, d, stages.Env{DataDir: dataDir, Mirror: mir, AcceptDataMismatch: true})
	if err := (Kind{}).Run(context.Background(), j); err != nil {
		t.Fatal(err)
	}
	b, _ = os.ReadFile(filepath.Join(j.Dir, stages.FileSources))
	src = stages.DataSources{}
	json.Unmarshal(b, &src)
	if !src.AcceptMismatch || len(src.Files) != 2 || src.Files[0].Figures != "verified" || !strings.HasPrefix(src.Files[1].Figures, "accepted mismatch: ") || src.Files[1].Upstream {
		t.Fatalf("accepted mismatch not recorded: %s", b)
	}
}
