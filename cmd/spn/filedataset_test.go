package main

import (
	"bytes"
	"compress/gzip"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/spn-project/spn/stages"
)

// tableCells reads a table's CSV (row,column,mean,std,n,...) as
// "row/column" → mean and n.
func tableCells(t *testing.T, path string) map[string][2]float64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][2]float64{}
	for _, r := range recs[1:] {
		mean, err1 := strconv.ParseFloat(r[2], 64)
		n, err2 := strconv.ParseFloat(r[4], 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("%s: row %v", path, r)
		}
		out[r[0]+"/"+r[1]] = [2]float64{mean, n}
	}
	return out
}

// TestOwnGraphsExample runs README's spec on a user's own JSONL file
// (examples/own-graphs) for real: SPN tells the graphs with a cycle from
// the trees on both holdout folds.
func TestOwnGraphsExample(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	code, stdout, stderr := runApp("run", "../../examples/own-graphs/spec.cue", "--cache", filepath.Join(dir, "cache"), "--out", out, "--log-level", "warn")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, "SPN (k = 3)") || !strings.Contains(stdout, "Cycle? (accuracy %)") {
		t.Errorf("no table printed:\n%s", stdout)
	}
	cell := tableCells(t, filepath.Join(out, "main.csv"))["SPN (k = 3)/a"]
	if cell[0] < 90 || cell[1] != 2 {
		t.Errorf("accuracy %v over %v folds, want at least 90 over 2", cell[0], cell[1])
	}
}

// fileGraphs writes n small graphs as JSONL lines, each made by line(i).
func fileGraphs(n int, line func(i int) string) string {
	var b strings.Builder
	for i := range n {
		b.WriteString(line(i) + "\n")
	}
	return b.String()
}

// path graph of n nodes: its edges as JSON.
func pathEdges(n int) string {
	var es []string
	for u := 0; u+1 < n; u++ {
		es = append(es, fmt.Sprintf("[%d,%d]", u, u+1))
	}
	return "[" + strings.Join(es, ",") + "]"
}

const fileTasksSpec = `package spn

name: "filetasks"
_train: {epochs: 2, batch_size: 8}
experiments: {
	// multilabel, the file's split, E-SPN on node_feat and edge_feat
	multi: {
		dataset: {kind: "file", path: "multi.jsonl", task: "multilabel", kmax: 2}
		model: {kind: "espn", k: 2, layers: 2, hidden: 8}
		training: _train
		protocol: {kind: "fixed", runs: 2, metric: "ap"}
	}
	multi_auc: {
		dataset: {kind: "file", path: "multi.jsonl", task: "multilabel", kmax: 2, limit: 6}
		model: {kind: "spn", k: 2, layers: 2, hidden: 8}
		training: _train
		protocol: {kind: "fixed", runs: 1, metric: "rocauc"}
	}
	// regression from gzip, real attributes, some targets null
	// (missing), no split: holdout folds
	reg: {
		dataset: {kind: "file", path: "reg.jsonl.gz", task: "regression", kmax: 2, folds: 4, seed: 3, limit: 30}
		model: {kind: "spn", k: 2, layers: 2, hidden: 8}
		training: _train
		protocol: {kind: "holdout", splits: 2, runs: 1, metric: "mae"}
	}
	reg_rmse: {
		dataset: {kind: "file", path: "reg.jsonl.gz", task: "regression", kmax: 2, folds: 4, seed: 3, limit: 30}
		model: {kind: "gin", layers: 2, hidden: 8}
		training: _train
		protocol: {kind: "holdout", splits: 1, runs: 1, metric: "rmse"}
	}
	// classification, node labels, no split: errica with a grid
	cls: {
		dataset: {kind: "file", path: "cls.jsonl", task: "classification", kmax: 2, folds: 3}
		model: {kind: "gin", layers: 2, hidden: 8}
		grid: "training.lr": [0.01, 0.001]
		training: _train
		protocol: {kind: "errica", splits: 3, runs: 1, metric: "accuracy"}
	}
}
tables: t: {
	formats: ["csv"]
	columns: [{key: "c", header: "score"}]
	rows: [
		{label: "multi", cells: c: experiment: "multi"},
		{label: "multi_auc", cells: c: experiment: "multi_auc"},
		{label: "reg", cells: c: experiment: "reg"},
		{label: "reg_rmse", cells: c: experiment: "reg_rmse"},
		{label: "cls", cells: c: experiment: "cls"},
	]
}
`

// writeFileTasks writes fileTasksSpec and its three files into dir.
func writeFileTasks(t *testing.T, dir string) string {
	t.Helper()
	parts := []string{"train", "valid", "test"}
	multi := fileGraphs(48, func(i int) string {
		n := 3 + i%4
		nf := make([]string, n)
		for u := range nf {
			nf[u] = fmt.Sprintf("[%d,%d]", (i+u)%5, u%2)
		}
		ef := make([]string, n-1)
		for e := range ef {
			ef[e] = fmt.Sprintf("[%d]", (i+e)%3)
		}
		t2 := fmt.Sprint((i / 2) % 2)
		if i%7 == 0 {
			t2 = "null"
		}
		return fmt.Sprintf(`{"nodes":%d,"edges":%s,"node_feat":[%s],"edge_feat":[%s],"target":[%d,%s],"split":%q}`,
			n, pathEdges(n), strings.Join(nf, ","), strings.Join(ef, ","), n%2, t2, parts[min(i%6, 2)])
	})
	reg := fileGraphs(40, func(i int) string {
		n := 2 + i%5
		attrs := make([]string, n)
		for u := range attrs {
			attrs[u] = fmt.Sprintf("[%g]", float64(u+i%3)/4)
		}
		// Missing targets: the second of every fourth graph, the first
		// of every ninth, both of graph 0.
		t1, t2 := fmt.Sprint(float64(n)/2), fmt.Sprint(i%3)
		if i%9 == 0 {
			t1 = "null"
		}
		if i%4 == 0 {
			t2 = "null"
		}
		return fmt.Sprintf(`{"nodes":%d,"edges":%s,"attrs":[%s],"target":[%s,%s]}`, n, pathEdges(n), strings.Join(attrs, ","), t1, t2)
	})
	cls := fileGraphs(36, func(i int) string {
		n := 2 + i%6
		x := make([]string, n)
		for u := range x {
			x[u] = strconv.Itoa((u + i) % 3)
		}
		return fmt.Sprintf(`{"nodes":%d,"edges":%s,"x":[%s],"y":%d}`, n, pathEdges(n), strings.Join(x, ","), i%2)
	})
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(reg))
	zw.Close()
	for name, b := range map[string][]byte{"multi.jsonl": []byte(multi), "reg.jsonl.gz": gz.Bytes(), "cls.jsonl": []byte(cls), "s.cue": []byte(fileTasksSpec)} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "s.cue")
}

// TestFileDatasetTasks runs file datasets of every task and split form
// for real: multilabel with the file's split (protocol fixed, ap and
// rocauc, E-SPN on the file's categorical features), regression from a
// gzip file without splits whose targets are partly null (missing; holdout
// folds, limit, mae and rmse), classification without splits (errica
// folds, a grid), and checks each table cell, and that every training's
// losses and scores are finite.
func TestFileDatasetTasks(t *testing.T) {
	dir := t.TempDir()
	spec := writeFileTasks(t, dir)
	out := filepath.Join(dir, "out")
	code, _, stderr := runApp("run", spec, "--cache", filepath.Join(dir, "cache"), "--out", out, "--log-level", "warn")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	cells := tableCells(t, filepath.Join(out, "t.csv"))
	for row, want := range map[string]struct {
		n        float64
		lo, high float64
	}{
		// Tables scale scores by 100; fixed has one split (n 1).
		"multi": {1, 0, 100}, "multi_auc": {1, 0, 100}, "reg": {2, 0, math.Inf(1)}, "reg_rmse": {1, 0, math.Inf(1)}, "cls": {3, 0, 100},
	} {
		c, ok := cells[row+"/c"]
		if !ok || c[1] != want.n || !(c[0] >= want.lo && c[0] < math.Inf(1) && c[0] <= want.high) {
			t.Errorf("%s: cell %v (found %v), want a finite score in [%v, %v] of %v scores", row, c, ok, want.lo, want.high, want.n)
		}
	}
	checkFiniteTrainings(t, filepath.Join(dir, "cache"), "mae", "rmse") // reg, reg_rmse
}

// checkFiniteTrainings reads every train stage's result.json below cache
// and checks that it did not diverge and that its losses and scores, per
// epoch and at the best, are finite; trainings on each metric named must
// be among them.
func checkFiniteTrainings(t *testing.T, cache string, metrics ...string) {
	t.Helper()
	trained := map[string]int{}
	err := filepath.WalkDir(cache, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "result.json" {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		var r stages.TrainResult
		if json.Unmarshal(b, &r) != nil || len(r.Epochs) == 0 {
			return nil // another stage's result
		}
		trained[r.Metric]++
		if r.Diverged != "" {
			t.Errorf("%s: diverged: %s", p, r.Diverged)
		}
		vals := []float64{r.ValLoss, r.ValScore, r.TestLoss, r.TestScore}
		for _, e := range r.Epochs {
			vals = append(vals, e.TrainLoss, e.TrainScore, e.ValLoss, e.ValScore, e.TestLoss, e.TestScore)
		}
		for i, v := range vals {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				t.Errorf("%s (metric %s): value %d of %v is not finite", p, r.Metric, i, vals)
				break
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range metrics {
		if trained[m] == 0 {
			t.Errorf("no training on metric %s below %s (trainings per metric: %v)", m, cache, trained)
		}
	}
}

// TestFileChangedRerun: editing a file dataset's file reruns the stages
// that read it (spn plan says "input file changed") and leaves those of
// another file cached; vet reports a file gone with the spec's position.
func TestFileChangedRerun(t *testing.T) {
	dir := t.TempDir()
	spec := writeFileTasks(t, dir)
	cacheDir := filepath.Join(dir, "cache")
	if code, _, stderr := runApp("run", spec, "--cache", cacheDir, "--out", filepath.Join(dir, "out"), "--log-level", "warn"); code != exitOK {
		t.Fatalf("run: exit %d: %s", code, stderr)
	}
	cls := filepath.Join(dir, "cls.jsonl")
	b, _ := os.ReadFile(cls)
	b = bytes.Replace(b, []byte(`"y":0}`), []byte(`"y":1}`), 1)
	b = bytes.Replace(b, []byte(`"y":1}`), []byte(`"y":0}`), 2) // the first 1 is the one just made
	if err := os.WriteFile(cls, b, 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runApp("plan", spec, "--cache", cacheDir)
	if code != exitOK {
		t.Fatalf("plan: exit %d: %s", code, stderr)
	}
	for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
		switch {
		case strings.Fields(line)[2] == "generate" && strings.Contains(line, "cls.jsonl"):
			if !strings.HasPrefix(line, "to run") || !strings.HasSuffix(line, "(input file changed)") {
				t.Errorf("the edited file's generate stage: %q, want to run, input file changed", line)
			}
		case strings.Contains(line, "cls") || strings.Contains(line, "tabulate"):
			if !strings.HasPrefix(line, "to run") {
				t.Errorf("a stage reading the edited file is not to run: %q", line)
			}
		case strings.Contains(line, " stages: "):
		default:
			if !strings.HasPrefix(line, "cached") {
				t.Errorf("a stage of the other files is not cached: %q", line)
			}
		}
	}
	if code, _, stderr := runApp("run", spec, "--cache", cacheDir, "--out", filepath.Join(dir, "out"), "--log-level", "warn"); code != exitOK {
		t.Fatalf("rerun: exit %d: %s", code, stderr)
	}
	if code, stdout, _ := runApp("plan", spec, "--cache", cacheDir); code != exitOK || !strings.Contains(stdout, " 0 to run") {
		t.Errorf("after the rerun: exit %d\n%s", code, stdout)
	}
	os.Remove(cls)
	code, _, stderr = runApp("vet", spec)
	if code != exitUsage || !strings.Contains(stderr, "s.cue:35:") || !strings.Contains(stderr, "experiments.cls.dataset.path: no file "+cls) {
		t.Errorf("vet of a spec whose file is gone: exit %d: %s", code, stderr)
	}
}

// TestImportedByName: a gzip file imported with spn data import is what a
// spec's dataset {kind: "file", name: NAME} reads (from --data-dir); an
// unknown name is reported at the spec's field.
func TestImportedByName(t *testing.T) {
	dir := t.TempDir()
	writeFileTasks(t, dir)
	dataDir := filepath.Join(dir, "data")
	code, stdout, stderr := dataRun(dataDir, "", "import", filepath.Join(dir, "reg.jsonl.gz"), "--name", "mine")
	if code != exitOK || !strings.Contains(stdout, "imported 40 graphs") {
		t.Fatalf("import: exit %d: %s%s", code, stdout, stderr)
	}
	spec := filepath.Join(dir, "byname.cue")
	src := strings.Replace(fileTasksSpec, `path: "reg.jsonl.gz"`, `name: "mine"`, 1)
	if err := os.WriteFile(spec, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	code, _, stderr = runApp("run", spec, "--cache", filepath.Join(dir, "cache"), "--data-dir", dataDir, "--out", out, "--log-level", "warn")
	if code != exitOK {
		t.Fatalf("run: exit %d: %s", code, stderr)
	}
	if c := tableCells(t, filepath.Join(out, "t.csv"))["reg/c"]; c[1] != 2 {
		t.Errorf("reg from the imported set: %v", c)
	}
	// plan needs the graphs: a name not imported is an error at its field.
	code, _, stderr = runApp("plan", spec, "--cache", filepath.Join(dir, "cache"), "--data-dir", filepath.Join(dir, "elsewhere"))
	if code != exitUsage || !strings.Contains(stderr, "byname.cue:22:") || !strings.Contains(stderr, `experiments.reg.dataset.name: no dataset is imported as "mine"`) {
		t.Errorf("plan with another data dir: exit %d: %s", code, stderr)
	}
	// vet checks the spec, not this machine's data: the file checks of a
	// name not imported here are skipped (CI vets pipelines/ without
	// Peptides-func imported).
	code, _, stderr = runApp("vet", spec, "--data-dir", filepath.Join(dir, "elsewhere"))
	if code != exitOK {
		t.Errorf("vet with another data dir: exit %d: %s", code, stderr)
	}
}
