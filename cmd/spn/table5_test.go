package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spn-project/spn/internal/testkit/mirrortest"
)

// table5Spec is the paper's MoleculeNet (OGB) pipeline, relative to this
// package.
const table5Spec = "../../pipelines/paper/table5_moleculenet.cue"

// TestTable5Smoke runs pipelines/paper/table5_moleculenet.cue in smoke mode
// end to end through the real stage kinds on the mirrored OGB data (bace
// and clintox, E-SPN k = 1, 3, 5, 2 reruns of 2 epochs): both tables are
// written in every format with a value in every computed cell, the cited
// rows keep OGB's constants, `spn table` regenerates them byte-identically,
// and `spn predict` scores molecules given as JSONL with OGB's features.
func TestTable5Smoke(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the MoleculeNet smoke pipeline on the OGB data (minutes)")
	}
	mirror := mirrortest.Dir(t)
	dir := t.TempDir()
	cacheDir := filepath.Join(dir, "cache")
	dataDir := filepath.Join(dir, "data")
	out1, out2 := filepath.Join(dir, "out1"), filepath.Join(dir, "out2")
	env := []string{"--mode", "smoke", "--mirror", mirror, "--data-dir", dataDir, "--log-level", "error"}

	r, md := runPaperSmoke(t, table5Spec, cacheDir, out1, env, "results", "compare")
	// Columns ClinTox and BACE (the paper's order); every E-SPN row has a
	// mean ± std in both.
	checkCompleteRows(t, md, 2, "E-SPN (k = 1)", "E-SPN (k = 3)", "E-SPN (k = 5)")
	plain := strings.ReplaceAll(string(md), "**", "") // bold marks the best per column
	for _, want := range []string{"| ClinTox | BACE |", "| GIN † | 88.1 ± 2.5 | 73.0 ± 4.0 |", "| GCN † | 91.3 ± 1.7 | 79.2 ± 1.4 |"} {
		if !strings.Contains(plain, want) {
			t.Errorf("results.md lacks %q:\n%s", want, md)
		}
	}
	cmp, err := os.ReadFile(filepath.Join(out1, "compare.md"))
	if err != nil || !strings.Contains(string(cmp), "80.9") || !strings.Contains(string(cmp), "89.1") {
		t.Errorf("compare.md lacks the paper's values (%v):\n%s", err, cmp)
	}
	tex, err := os.ReadFile(filepath.Join(out1, "results.tex"))
	if err != nil || !strings.Contains(string(tex), `\label{tab:gc_molnet}`) {
		t.Errorf("results.tex (%v):\n%s", err, tex)
	}

	// table regenerates the same bytes and the same terminal output.
	checkTableRegenerates(t, table5Spec, cacheDir, out1, out2, env, r)

	// predict: two bace molecules exported as JSONL, labels dropped.
	var in bytes.Buffer
	for _, rec := range baceMolecules(t, dataDir, mirror, 2) {
		b, _ := json.Marshal(rec)
		in.Write(append(b, '\n'))
	}
	input := filepath.Join(dir, "mols.jsonl")
	if err := os.WriteFile(input, in.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	a := &app{stdout: &out, stderr: &errb, getenv: func(string) string { return "" }}
	args := append([]string{"predict", table5Spec, "--experiment", "bace_espn_k3", "--input", input, "--cache", cacheDir}, env...)
	if code := a.main(args); code != exitOK {
		t.Fatalf("predict: exit %d: %s", code, errb.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	want := regexp.MustCompile(`^\{"graph":\d,"task_probabilities":\[0\.\d+\]\}$`)
	if len(lines) != 2 || !want.MatchString(lines[0]) || !want.MatchString(lines[1]) {
		t.Errorf("predict output:\n%s", out.String())
	}
	// An atom feature outside OGB's vocabulary is an error naming the graph.
	bad := regexp.MustCompile(`"node_feat":\[\[\d+`).ReplaceAllString(in.String(), `"node_feat":[[119`)
	if err := os.WriteFile(input, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	errb.Reset()
	if code := a.main(args); code == exitOK || !strings.Contains(errb.String(), "graph 0") {
		t.Errorf("predict with atomic number index 119: exit %d: %s", code, errb.String())
	}
}

// TestPredictSimpleFeatures: a model trained on OGB's simple feature set
// (dataset.features "simple": the first two atom and bond features)
// predicts molecules given with all of OGB's features as it predicts the
// same molecules given with only those two.
func TestPredictSimpleFeatures(t *testing.T) {
	if testing.Short() {
		t.Skip("trains an E-SPN on bace (seconds)")
	}
	mirror := mirrortest.Dir(t)
	dir := t.TempDir()
	cacheDir, dataDir := filepath.Join(dir, "cache"), filepath.Join(dir, "data")
	spec := filepath.Join(dir, "simple.cue")
	src := `package spn

name: "simple"
experiments: bace: {
	dataset: {kind: "ogb", name: "bace", features: "simple", kmax: 2}
	model: {kind: "espn", k: 2, hidden: 8, layers: 1}
	training: {epochs: 1, batch_size: 128}
	protocol: {kind: "fixed", runs: 1, metric: "rocauc"}
}
`
	if err := os.WriteFile(spec, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	env := []string{"--mirror", mirror, "--data-dir", dataDir, "--log-level", "error"}
	if r := spn(realEngine(), cacheDir, append([]string{"run", spec, "--out", filepath.Join(dir, "out")}, env...)...); r.code != exitOK {
		t.Fatalf("run: exit %d:\n%s", r.code, r.stderr)
	}
	// The first three molecules, with all features and with the first two.
	var full, two bytes.Buffer
	for _, rec := range baceMolecules(t, dataDir, mirror, 3) {
		b, _ := json.Marshal(rec)
		full.Write(append(b, '\n'))
		for _, f := range []string{"node_feat", "edge_feat"} {
			rows, _ := rec[f].([]any)
			for i, r := range rows {
				rows[i] = r.([]any)[:2]
			}
		}
		b, _ = json.Marshal(rec)
		two.Write(append(b, '\n'))
	}
	predict := func(in []byte) string {
		t.Helper()
		f := filepath.Join(dir, "mols.jsonl")
		if err := os.WriteFile(f, in, 0o644); err != nil {
			t.Fatal(err)
		}
		var out, errb bytes.Buffer
		a := &app{stdout: &out, stderr: &errb, getenv: func(string) string { return "" }}
		if code := a.main(append([]string{"predict", spec, "--experiment", "bace", "--input", f, "--cache", cacheDir}, env...)); code != exitOK {
			t.Fatalf("predict: exit %d: %s", code, errb.String())
		}
		return out.String()
	}
	a, b := predict(full.Bytes()), predict(two.Bytes())
	if a != b || strings.Count(a, "\n") != 3 || !strings.Contains(a, "task_probabilities") {
		t.Errorf("predictions from all features:\n%s\nfrom the first two:\n%s", a, b)
	}
}

// baceMolecules returns the first n molecules of ogbg-molbace as spn data
// export writes them (JSONL records), without their labels: spn predict's
// input.
func baceMolecules(t *testing.T, dataDir, mirror string, n int) []map[string]any {
	t.Helper()
	code, export, errs := dataRun(dataDir, mirror, "export", "ogbg-molbace", "--format", "jsonl")
	if code != exitOK {
		t.Fatalf("export: exit %d: %s", code, errs)
	}
	var out []map[string]any
	for _, line := range strings.SplitN(export, "\n", n+1)[:n] {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatal(err)
		}
		delete(rec, "target")
		out = append(out, rec)
	}
	return out
}
