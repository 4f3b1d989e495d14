package main

import (
	"bytes"
	"github.com/spn-project/spn/stages/report"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spn-project/spn/stages"
)

// TestDamagedArtifacts trains a tiny experiment for real, then flips one
// byte in one artifact of every kind (dataset, hop sets, checkpoint,
// result records, timings, tables) and checks that spn run notices it,
// names the file, runs that stage again and prints and writes the very
// same tables; spn predict fails naming a damaged checkpoint; spn table
// re-renders a damaged table.
func TestDamagedArtifacts(t *testing.T) {
	if testing.Short() {
		t.Skip("trains for real")
	}
	dir := t.TempDir()
	spec := filepath.Join(dir, "p.cue")
	if err := os.WriteFile(spec, []byte(predictSpec), 0o644); err != nil {
		t.Fatal(err)
	}
	cacheDir := filepath.Join(dir, "cache")
	results := filepath.Join(dir, "results")
	input := filepath.Join(dir, "in.jsonl")
	if err := os.WriteFile(input, []byte(`{"nodes": 3, "edges": [[0, 1], [1, 2]], "x": [0, 1, 2]}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		a := &app{stdout: &out, stderr: &errb, getenv: func(string) string { return "" }}
		code := a.main(append(args, "--cache", cacheDir, "--log-level", "error"))
		return code, out.String(), errb.String()
	}
	code, want, stderr := cmd("run", spec, "--out", results)
	if code != exitOK {
		t.Fatalf("run: exit %d: %s", code, stderr)
	}
	wantFiles := readDir(t, results)
	code, wantPred, stderr := cmd("predict", spec, "--experiment", "spn", "--input", input)
	if code != exitOK {
		t.Fatalf("predict: exit %d: %s", code, stderr)
	}

	// One artifact of each (stage kind, file name).
	var victims []string
	seen := map[string]bool{}
	err := filepath.WalkDir(cacheDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(cacheDir, path)
		parts := strings.Split(filepath.ToSlash(rel), "/")
		if len(parts) != 4 || parts[0] == "index" || parts[0] == "tmp" {
			return nil
		}
		id := parts[0] + "/" + parts[3]
		if !seen[id] {
			seen[id] = true
			victims = append(victims, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]bool{}
	for id := range seen {
		kinds[strings.Split(id, "/")[1]] = true
	}
	for _, f := range []string{stages.FileDataset, stages.FileHops, stages.FileModel, stages.FileResult, stages.FileTiming, stages.FileRecord, "t.csv"} {
		if !kinds[f] {
			t.Errorf("the run wrote no %s", f)
		}
	}
	slices.Sort(victims)
	for _, v := range victims {
		rel, _ := filepath.Rel(cacheDir, v)
		t.Run(strings.ReplaceAll(rel, string(filepath.Separator), "_"), func(t *testing.T) {
			b, err := os.ReadFile(v)
			if err != nil {
				t.Fatal(err)
			}
			flipped := slices.Clone(b)
			flipped[len(flipped)/2] ^= 0x01
			if err := os.WriteFile(v, flipped, 0o644); err != nil {
				t.Fatal(err)
			}
			isRecord := filepath.Base(v) == stages.FileRecord
			if filepath.Base(v) == stages.FileModel {
				code, _, stderr := cmd("predict", spec, "--experiment", "spn", "--input", input)
				if code == exitOK || !strings.Contains(stderr, v) {
					t.Errorf("predict on a damaged checkpoint: exit %d, stderr does not name %s:\n%s", code, v, stderr)
				}
			}
			os.RemoveAll(results)
			code, got, stderr := cmd("run", spec, "--out", results)
			if code != exitOK {
				t.Fatalf("run after damaging %s: exit %d: %s", rel, code, stderr)
			}
			if got != want {
				t.Errorf("run after damaging %s printed\n%s\nwant\n%s", rel, got, want)
			}
			if gotFiles := readDir(t, results); !mapsEqual(gotFiles, wantFiles) {
				t.Errorf("run after damaging %s wrote other tables", rel)
			}
			// A flipped byte in a record may leave it valid JSON with
			// only provenance changed (a timestamp): that need not rerun.
			if !isRecord && !strings.Contains(stderr, v) {
				t.Errorf("run after damaging %s does not name the file:\n%s", rel, stderr)
			}
			// Timings are wall-clock figures; every other artifact is
			// deterministic.
			if after, _ := os.ReadFile(v); !isRecord && filepath.Base(v) != stages.FileTiming && !bytes.Equal(after, b) {
				t.Errorf("%s was not rewritten with its original bytes", rel)
			}
			code, pred, stderr := cmd("predict", spec, "--experiment", "spn", "--input", input)
			if code != exitOK || pred != wantPred {
				t.Errorf("predict after the re-run: exit %d: %s\n%s", code, pred, stderr)
			}
		})
	}

	// spn table re-renders a damaged table from the cached results.
	var table string
	for _, v := range victims {
		if filepath.Base(v) == "t.csv" {
			table = v
		}
	}
	b, _ := os.ReadFile(table)
	os.WriteFile(table, append(slices.Clone(b), '9'), 0o644)
	os.RemoveAll(results)
	code, got, stderr := cmd("table", spec, "--out", results)
	if code != exitOK || got != want || !strings.Contains(stderr, table) {
		t.Errorf("table after damaging %s: exit %d, stdout\n%s\nstderr\n%s", table, code, got, stderr)
	}
	if gotFiles := readDir(t, results); !mapsEqual(gotFiles, wantFiles) {
		t.Errorf("table after damaging %s wrote other tables", table)
	}
}

func readDir(t *testing.T, dir string) map[string]string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, e := range ents {
		if e.Name() == report.FileName {
			continue // the stages' timings differ between runs (sameFiles)
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		m[e.Name()] = string(b)
	}
	return m
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}
