// Package lrgbtest runs the Peptides-func conversion
// (scripts/data/lrgb_peptides.py) on the offline mirror's files for tests.
package lrgbtest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/spn-project/spn/data/fetch"
	"github.com/spn-project/spn/data/lrgb"
	"github.com/spn-project/spn/internal/testkit/mirrortest"
)

// PythonEnv names the Python interpreter the conversion runs on.
const PythonEnv = "SPN_PYTHON"

// Python returns a Python interpreter that imports RDKit and NumPy:
// $SPN_PYTHON, else python3 on the PATH, else /usr/bin/python3 (Debian's
// python3-rdkit installs there, and a pyenv python3 may come first on the
// PATH). Without one the test skips, or fails under CI=true (CI installs
// python3-rdkit and python3-numpy).
func Python(t testing.TB) string {
	t.Helper()
	cands := []string{"python3", "/usr/bin/python3"}
	if p := os.Getenv(PythonEnv); p != "" {
		cands = []string{p}
	}
	for _, p := range cands {
		if exec.Command(p, "-c", "import rdkit, numpy").Run() == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("no Python that imports rdkit and numpy among %v (CI installs python3-rdkit python3-numpy)", cands)
	}
	t.Skipf("no Python that imports rdkit and numpy among %v (apt-get install python3-rdkit python3-numpy, or set %s)", cands, PythonEnv)
	return ""
}

// Script returns the path of the conversion script in this checkout.
func Script(t testing.TB) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return filepath.Join(d, filepath.FromSlash(lrgb.Script))
		}
		if filepath.Dir(d) == d {
			t.Fatal("repository root (go.mod) not found")
		}
	}
}

// FetchMirror fetches the two raw files from the mirror into dataDir, as
// `spn data fetch peptides-func` does, and returns their folder.
func FetchMirror(t testing.TB, dataDir string) string {
	t.Helper()
	dir, err := lrgb.Fetch(context.Background(), &fetch.Fetcher{DataDir: dataDir, Mirror: mirrortest.Dir(t)})
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// Converted returns the converted Peptides-func of the mirror's files
// (.jsonl.gz). The conversion takes about 40 CPU-seconds, so its output is
// kept in the system's temporary folder under a name made of the SHA-256s
// of the script and of the two input files: tests of other packages reuse
// it, and a changed script or input converts afresh. It is written
// through a temporary name and renamed, so a reader never sees a partial
// file.
func Converted(t testing.TB) string {
	t.Helper()
	python, script := Python(t), Script(t)
	dir := FetchMirror(t, t.TempDir())
	h := sha256.New()
	for _, p := range []string{script, filepath.Join(dir, "peptide_multi_class_dataset.csv.gz"), filepath.Join(dir, "splits_random_stratified_peptide.pickle")} {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		_, err = io.Copy(h, f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	cache := filepath.Join(os.TempDir(), "spn-lrgbtest-"+hex.EncodeToString(h.Sum(nil))[:16])
	out := filepath.Join(cache, lrgb.Name+".jsonl.gz")
	if _, err := os.Stat(out); err == nil {
		return out
	}
	if err := os.MkdirAll(cache, 0o755); err != nil {
		t.Fatal(err)
	}
	tmp, err := os.MkdirTemp(cache, "convert")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	part := filepath.Join(tmp, lrgb.Name+".jsonl.gz")
	if msg, err := exec.Command(python, script, dir, part).CombinedOutput(); err != nil {
		t.Fatalf("%s %s %s %s: %v\n%s", python, script, dir, part, err, msg)
	}
	if err := os.Rename(part, out); err != nil {
		t.Fatal(err)
	}
	return out
}
