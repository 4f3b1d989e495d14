package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/spn-project/spn/data/graphfile"
	"github.com/spn-project/spn/data/lrgb"
	"github.com/spn-project/spn/internal/testkit/lrgbtest"
	"github.com/spn-project/spn/internal/testkit/mirrortest"
)

// smokeExit is a spec's "// smoke: exit N" line.
var smokeExit = regexp.MustCompile(`(?m)^// smoke: exit (\d+)$`)

// TestSmokeSpecs runs every valid spec of cmd/spn/testdata and pipelines/
// for real, in smoke mode (specs that fix their mode in theirs), with the
// real stage kinds: what users copy must run, not only vet. It takes
// minutes of CPU (Table 3's smoke run alone ≈ 4 CPU-minutes), so it runs
// only with SPN_SMOKE_SPECS=1 (and the data mirror):
//
//	SPN_SMOKE_SPECS=1 SPN_DATA_MIRROR=../shared/data go test ./cmd/spn -run SmokeSpecs -timeout 60m
//
// A spec that fails by design (a failure test's) says with which exit
// status in a comment line "// smoke: exit N".
//
// A spec that reads the imported peptides-func (name: "peptides-func")
// gets it as a user does: its raw files fetched from the mirror,
// converted by scripts/data/lrgb_peptides.py and imported into the test's
// data folder (skipped without Python, RDKit and NumPy; failing then
// under CI=true, see lrgbtest.Python).
func TestSmokeSpecs(t *testing.T) {
	if os.Getenv("SPN_SMOKE_SPECS") != "1" {
		t.Skip("set SPN_SMOKE_SPECS=1 to run every spec for real")
	}
	mirror := mirrortest.Dir(t)
	var files []string
	for _, pat := range []string{"testdata/*.cue", "../../pipelines/*.cue", "../../pipelines/*/*.cue"} {
		m, err := filepath.Glob(pat)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	dir := t.TempDir()
	dataDir := filepath.Join(dir, "data")
	for _, f := range files {
		if filepath.Base(f) == "bad.cue" {
			continue // the CLI tests' invalid spec
		}
		t.Run(strings.TrimSuffix(filepath.Base(f), ".cue"), func(t *testing.T) {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Contains(src, []byte(`name: "`+lrgb.Name+`"`)) {
				importPeptidesFunc(t, dataDir)
			}
			args := []string{"run", f, "--cache", filepath.Join(dir, "cache"), "--data-dir", dataDir,
				"--mirror", mirror, "--out", filepath.Join(dir, "out", filepath.Base(f)), "--log-level", "warn"}
			if !strings.Contains(string(src), "\nmode:") {
				args = append(args, "--mode", "smoke")
			}
			want := exitOK
			if m := smokeExit.FindSubmatch(src); m != nil {
				want, _ = strconv.Atoi(string(m[1]))
			}
			var out, errb bytes.Buffer
			a := &app{stdout: &out, stderr: &errb, getenv: func(string) string { return "" }}
			if code := a.main(args); code != want {
				t.Fatalf("spn %s: exit %d, want %d\n%s", strings.Join(args, " "), code, want, errb.String())
			}
			if want == exitOK && out.Len() == 0 {
				t.Errorf("%s printed no table", f)
			}
			t.Logf("%s:\n%s", f, out.String())
		})
	}
}

// importPeptidesFunc makes the dataset peptides-func of dataDir as the
// commands of docs/lrgb.md do: spn data fetch peptides-func (from the
// mirror), the conversion script (lrgbtest.Converted), spn data import. A
// second call finds it imported.
func importPeptidesFunc(t *testing.T, dataDir string) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(dataDir, graphfile.ImportedDir, lrgb.Name+".bin")); err == nil {
		return
	}
	if code, _, errs := dataRun(dataDir, mirrortest.Dir(t), "fetch", lrgb.Name); code != exitOK {
		t.Fatalf("spn data fetch %s: exit %d: %s", lrgb.Name, code, errs)
	}
	// The script's output on the same two files (checked by data/lrgb's
	// TestConversion), converted once for every test that needs it.
	out := lrgbtest.Converted(t)
	if code, _, errs := dataRun(dataDir, "", "import", out, "--name", lrgb.Name); code != exitOK {
		t.Fatalf("spn data import %s --name %s: exit %d: %s", out, lrgb.Name, code, errs)
	}
}
