package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/spn-project/spn/internal/testkit/mirrortest"
)

// TestDataFetchPeptidesFunc: spn data fetch peptides-func lists the two
// raw files in the data folder and tells the conversion and import
// commands that follow.
func TestDataFetchPeptidesFunc(t *testing.T) {
	dir := t.TempDir()
	code, out, errs := dataRun(dir, mirrortest.Dir(t), "fetch", "peptides-func")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	raw := filepath.Join(dir, "lrgb")
	if want := "peptides-func\t" + filepath.Join(raw, "peptide_multi_class_dataset.csv.gz") + "\npeptides-func\t" + filepath.Join(raw, "splits_random_stratified_peptide.pickle") + "\n"; out != want {
		t.Errorf("stdout %q, want %q", out, want)
	}
	conv := filepath.Join(raw, "peptides-func.jsonl.gz")
	for _, want := range []string{
		"python3 scripts/data/lrgb_peptides.py " + raw + " " + conv + "\n",
		"spn data import " + conv + " --name peptides-func --data-dir " + dir + "\n",
	} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errs)
		}
	}
}
