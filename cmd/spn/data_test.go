package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spn-project/spn/data/catalog"
	"github.com/spn-project/spn/data/stats"
	"github.com/spn-project/spn/internal/testkit/mirrortest"

	"github.com/spn-project/spn/internal/testkit/golden"
)

// dataRun runs `spn data ARGS` with SPN_DATA set to dataDir and
// SPN_DATA_MIRROR to mirror.
func dataRun(dataDir, mirror string, args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	env := map[string]string{envDataDir: dataDir, envMirror: mirror}
	a := &app{stdout: &out, stderr: &errb, getenv: func(k string) string { return env[k] }}
	code = a.main(append([]string{"data"}, args...))
	return code, out.String(), errb.String()
}

func TestDataStatsGolden(t *testing.T) {
	mirror := mirrortest.Dir(t)
	code, out, errs := dataRun(t.TempDir(), mirror, "stats", "ENZYMES", "PROTEINS")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	golden.Check(t, "testdata/data_stats.golden", []byte(out))
	code, out, errs = dataRun(t.TempDir(), mirror, "stats", "--json", "NCI1")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	golden.Check(t, "testdata/data_stats_json.golden", []byte(out))
}

// TestDataStatsProx reports the share of h-Proximity negatives that
// violate the rule: all of them with strict twins, fewer with the
// official rule's at h = 3.
func TestDataStatsProx(t *testing.T) {
	var all strings.Builder
	for _, neg := range []string{"strict", "code"} {
		code, out, errs := dataRun(t.TempDir(), "", "stats", "prox", "--graphs", "200", "--negatives", neg)
		if code != exitOK {
			t.Fatalf("%s: exit %d: %s", neg, code, errs)
		}
		all.WriteString(out)
	}
	golden.Check(t, "testdata/data_stats_prox.golden", []byte(all.String()))
}

// tinyJSONL is a dataset of four small graphs, two of them of more than
// one component.
const tinyJSONL = `{"nodes":4,"edges":[[0,1],[2,1]],"x":[0,1,1,2],"y":1}
{"nodes":2,"edges":[[0,1]],"x":[2,2],"y":0}
{"nodes":3,"edges":[[0,2]],"x":[0,0,1],"y":1}
{"nodes":1,"edges":[],"x":[1],"y":0}
`

func TestDataImportShowExport(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(t.TempDir(), "tiny.jsonl")
	if err := os.WriteFile(in, []byte(tinyJSONL), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := dataRun(dir, "", "import", in, "--name", "tiny")
	if code != exitOK || !strings.Contains(out, "imported 4 graphs") {
		t.Fatalf("import: exit %d: %s %s", code, out, errs)
	}
	code, out, errs = dataRun(dir, "", "show", "tiny", "--graph", "0")
	if code != exitOK {
		t.Fatalf("show: exit %d: %s", code, errs)
	}
	golden.Check(t, "testdata/data_show.golden", []byte(out))
	code, out, _ = dataRun(dir, "", "show", "tiny", "--graph", "0", "--json")
	var sg stats.Shown
	if code != exitOK || json.Unmarshal([]byte(out), &sg) != nil {
		t.Fatalf("show --json: exit %d: %s", code, out)
	}
	if sg.Distances[0][3] != -1 || sg.Distances[0][2] != 2 || *sg.Y != 1 {
		t.Fatalf("show --json distances %v", sg.Distances)
	}
	code, out, errs = dataRun(dir, "", "export", "tiny", "--format", "jsonl")
	if code != exitOK {
		t.Fatalf("export: exit %d: %s", code, errs)
	}
	want := `{"nodes":4,"edges":[[0,1],[1,2]],"x":[0,1,1,2],"y":1}
{"nodes":2,"edges":[[0,1]],"x":[2,2],"y":0}
{"nodes":3,"edges":[[0,2]],"x":[0,0,1],"y":1}
{"nodes":1,"edges":[],"x":[1],"y":0}
`
	if out != want {
		t.Fatalf("export:\n%s\nwant:\n%s", out, want)
	}
	code, out, errs = dataRun(dir, "", "stats", "tiny", "--json")
	if code != exitOK || !strings.Contains(out, `"graphs": 4`) {
		t.Fatalf("stats of imported: exit %d: %s %s", code, out, errs)
	}
}

func TestDataExportProx(t *testing.T) {
	code, out, errs := dataRun(t.TempDir(), "", "export", "prox", "--prox-h", "3", "--graphs", "20", "--seed", "1")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 20 || !strings.HasSuffix(lines[0], `"y":1}`) || !strings.HasSuffix(lines[1], `"y":0}`) {
		t.Fatalf("got %d lines, first %q", len(lines), lines[0][max(0, len(lines[0])-20):])
	}
	_, again, _ := dataRun(t.TempDir(), "", "export", "prox", "--prox-h", "3", "--graphs", "20", "--seed", "1")
	if again != out {
		t.Fatal("same seed exported different graphs")
	}
}

// export --out replaces an existing file whole, through a temporary file
// that does not stay behind; a destination that cannot be written (here a
// path below a regular file, unwritable even for root) is an error naming
// it, exit 1, that leaves nothing. A missing parent folder is created.
func TestDataExportOut(t *testing.T) {
	dir := t.TempDir()
	dest := filepath.Join(dir, "prox.jsonl")
	if err := os.WriteFile(dest, []byte(strings.Repeat("old\n", 10000)), 0o644); err != nil {
		t.Fatal(err)
	}
	_, want, _ := dataRun(t.TempDir(), "", "export", "prox", "--prox-h", "3", "--graphs", "20", "--seed", "1")
	if code, _, errs := dataRun(t.TempDir(), "", "export", "prox", "--prox-h", "3", "--graphs", "20", "--seed", "1", "--out", dest); code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if got, err := os.ReadFile(dest); err != nil || string(got) != want {
		t.Fatalf("--out wrote %d bytes (%v), want the %d of standard output", len(got), err, len(want))
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("%s holds %d entries, want only prox.jsonl", dir, len(ents))
	}
	nested := filepath.Join(dir, "new", "x.jsonl")
	if code, _, errs := dataRun(t.TempDir(), "", "export", "prox", "--prox-h", "3", "--graphs", "20", "--seed", "1", "--out", nested); code != exitOK {
		t.Fatalf("--out in a missing folder: exit %d: %s", code, errs)
	}
	if got, err := os.ReadFile(nested); err != nil || string(got) != want {
		t.Fatalf("--out in a missing folder wrote %d bytes (%v)", len(got), err)
	}
	bad := filepath.Join(dest, "x.jsonl")
	code, _, errs := dataRun(t.TempDir(), "", "export", "prox", "--prox-h", "3", "--graphs", "20", "--out", bad)
	if code != exitFail || !strings.Contains(errs, bad) {
		t.Errorf("unwritable --out: exit %d: %s", code, errs)
	}
	if got, err := os.ReadFile(dest); err != nil || string(got) != want {
		t.Errorf("a failed --out changed %s (%d bytes, %v)", dest, len(got), err)
	}
}

// TestDataOGB: OGB sets by their OGB names; the export is the JSONL that
// spn predict reads (categorical atom and bond features, null for a
// missing label).
func TestDataOGB(t *testing.T) {
	mirror := mirrortest.Dir(t)
	dir := t.TempDir()
	code, out, errs := dataRun(dir, mirror, "export", "ogbg-moltox21", "--format", "jsonl")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 7831 || !strings.Contains(lines[0], `"node_feat":[[`) || !strings.Contains(lines[0], `"edge_feat":[[`) || !strings.Contains(lines[0], `null`) {
		t.Fatalf("%d lines, first %.200s", len(lines), lines[0])
	}
	code, _, errs = dataRun(dir, mirror, "fetch", "ogbg-molbace")
	if code != exitOK {
		t.Fatalf("fetch: exit %d: %s", code, errs)
	}
	if code, _, _ := dataRun(dir, mirror, "fetch", "ogbg-molpcba"); code != exitUsage {
		t.Errorf("fetch of an unknown OGB set: exit %d, want %d", code, exitUsage)
	}
}

func TestDataErrorsGolden(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(t.TempDir(), "bad.jsonl")
	os.WriteFile(bad, []byte("{\"nodes\":2,\"edges\":[[0,1]],\"y\":0}\n{\"nodes\":2,\"edges\":[[0,5]],\"y\":0}\n"), 0o644)
	// A line whose JSON breaks at line 3, column 25 (after the indentation).
	badJSON := filepath.Join(filepath.Dir(bad), "bad_json.jsonl")
	os.WriteFile(badJSON, []byte("{\"nodes\":1,\"edges\":[],\"y\":0}\n\n  {\"nodes\":1,\"edges\":[] \"y\":0}\n"), 0o644)
	good := filepath.Join(filepath.Dir(bad), "good.jsonl")
	os.WriteFile(good, []byte("{\"nodes\":2,\"edges\":[[0,1]],\"y\":0}\n{\"nodes\":1,\"edges\":[],\"y\":0}\n"), 0o644)
	utf16 := filepath.Join(filepath.Dir(bad), "utf16.jsonl")
	os.WriteFile(utf16, []byte("\xff\xfe{\x00\"\x00"), 0o644)
	cases := []struct {
		name string
		code int
		args []string
	}{
		{"no subcommand", exitUsage, nil},
		{"unknown subcommand", exitUsage, []string{"frobnicate"}},
		{"unknown dataset", exitUsage, []string{"stats", "MUTAG"}},
		{"fetch unknown", exitUsage, []string{"fetch", "MUTAG"}},
		{"show without graph", exitUsage, []string{"show", "prox", "--graphs", "20"}},
		{"show out of range", exitUsage, []string{"show", "prox", "--graphs", "20", "--graph", "20"}},
		{"export bad format", exitUsage, []string{"export", "prox", "--format", "csv"}},
		{"import without name", exitUsage, []string{"import", bad}},
		{"import bad line", exitUsage, []string{"import", bad, "--name", "bad"}},
		{"import malformed line", exitUsage, []string{"import", badJSON, "--name", "bad"}},
		{"import missing file", exitUsage, []string{"import", "nope.jsonl", "--name", "x"}},
		{"import as QM9-valid", exitUsage, []string{"import", bad, "--name", "QM9-valid"}},
		{"import as QM9", exitUsage, []string{"import", bad, "--name", "QM9"}},
		{"import as qm9-train", exitUsage, []string{"import", bad, "--name", "qm9-train"}},
		{"import as ogbg-molbace", exitUsage, []string{"import", bad, "--name", "ogbg-molbace"}},
		{"import as ENZYMES", exitUsage, []string{"import", bad, "--name", "ENZYMES"}},
		{"import as CEXP", exitUsage, []string{"import", bad, "--name", "CEXP"}},
		{"import as prox", exitUsage, []string{"import", bad, "--name", "prox"}},
		{"import other graphs as peptides-func", exitUsage, []string{"import", good, "--name", "peptides-func"}},
		{"import UTF-16", exitUsage, []string{"import", utf16, "--name", "u"}},
		{"bad prox config", exitUsage, []string{"stats", "prox", "--graphs", "7"}},
		{"bad prox negatives", exitUsage, []string{"stats", "prox", "--negatives", "loose"}},
		{"fetch from an empty mirror", exitFail, []string{"fetch", "ENZYMES", "--mirror", filepath.Join(dir, "empty")}},
	}
	var all strings.Builder
	for _, tc := range cases {
		code, _, errs := dataRun(dir, "", tc.args...)
		if code != tc.code {
			t.Errorf("%s: exit %d, want %d (%s)", tc.name, code, tc.code, errs)
		}
		first := strings.SplitN(errs, "\n", 2)[0]
		first = strings.ReplaceAll(first, filepath.Dir(bad), "TMP")
		first = strings.ReplaceAll(first, dir, "DATA")
		all.WriteString(tc.name + ": " + first + "\n")
	}
	golden.Check(t, "testdata/data_errors.golden", []byte(all.String()))
}

func TestDataHops(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(t.TempDir(), "hops.bin")
	code, stdout, errs := dataRun(dir, "", "hops", "prox", "--graphs", "20", "--kmax", "3", "--out", out)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.Contains(stdout, "prox-h3: 20 graphs, hop sets N_1..N_3") || !strings.Contains(stdout, "wrote "+out) {
		t.Fatalf("output:\n%s", stdout)
	}
	if code, _, _ := dataRun(dir, "", "hops", "prox", "--kmax", "0"); code != exitUsage {
		t.Fatalf("--kmax 0: exit %d, want %d", code, exitUsage)
	}
	// N_∞: a node cut off from three others (6 ordered pairs), one from
	// two (4); two graphs of one component.
	in := filepath.Join(t.TempDir(), "split.jsonl")
	if err := os.WriteFile(in, []byte(tinyJSONL), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := dataRun(dir, "", "import", in, "--name", "split"); code != exitOK {
		t.Fatalf("import: exit %d: %s", code, errs)
	}
	code, stdout, errs = dataRun(dir, "", "hops", "split", "--kmax", "2", "--unreachable")
	if code != exitOK || !strings.Contains(stdout, "split: 4 graphs, hop sets N_1..N_2 and N_∞") ||
		!strings.Contains(stdout, "  N_∞: 10 (u,v) pairs, in 2 graphs of more than one component\n  total: 20 pairs\n") {
		t.Fatalf("--unreachable: exit %d: %s\n%s", code, errs, stdout)
	}
}

// TestDataFetchVerifies: spn data fetch of every dataset the mirror holds
// checks each file against spn's built-in content figures, and the mirror
// passes; a changed file fails naming the file and the figure, unless
// --accept-data-mismatch is given.
func TestDataFetchVerifies(t *testing.T) {
	mirror := mirrortest.Dir(t)
	var names []string
	for _, n := range catalog.Readable() {
		if n != "QM9" && n != "QM9-train" { // the mirror lacks train.jsonl.gz
			names = append(names, n)
		}
	}
	code, out, errs := dataRun(t.TempDir(), mirror, append([]string{"fetch"}, names...)...)
	if code != exitOK {
		t.Fatalf("fetch of every known dataset: exit %d: %s", code, errs)
	}
	if got := strings.Count(out, "\n"); got != len(names)+5 { // the TU sets have a split file each
		t.Errorf("%d files listed for %d datasets:\n%s", got, len(names), out)
	}
	if n := strings.Count(errs, "content figures verified"); n != len(names)+5 {
		t.Errorf("%d files verified, want %d:\n%s", n, len(names)+5, errs)
	}
	// A copy of the mirror whose EXP file has one graph label changed.
	mir := t.TempDir()
	src, err := os.ReadFile(filepath.Join(mirror, "expressivity", "EXP", "GRAPHSAT.txt"))
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(mir, "expressivity", "EXP"), 0o755)
	os.WriteFile(filepath.Join(mir, "expressivity", "EXP", "GRAPHSAT.txt"), bytes.Replace(src, []byte("\n59 1\n"), []byte("\n59 0\n"), 1), 0o644)
	dir := t.TempDir()
	code, _, errs = dataRun(dir, mir, "fetch", "EXP")
	want := filepath.Join(dir, "expressivity", "EXP", "GRAPHSAT.txt") + `: content figure "graphs of class 0" is 601, expected 600`
	if code != exitFail || !strings.Contains(errs, want) {
		t.Fatalf("changed label: exit %d, want %d and %q: %s", code, exitFail, want, errs)
	}
	code, _, errs = dataRun(dir, mir, "fetch", "EXP", "--accept-data-mismatch")
	if code != exitOK || !strings.Contains(errs, "accepted") {
		t.Fatalf("--accept-data-mismatch: exit %d: %s", code, errs)
	}
}

// -h and -help print a data subcommand's usage and exit 0 (the h of
// h-Proximity is --prox-h).
func TestDataHelp(t *testing.T) {
	for _, sub := range []string{"fetch", "stats", "export", "show", "import", "hops"} {
		for _, h := range []string{"-h", "-help", "--help"} {
			code, out, errs := dataRun(t.TempDir(), "", sub, h)
			if code != exitOK || out != "" || !strings.HasPrefix(errs, "Usage: spn data "+sub+" ") || !strings.Contains(errs, "-data-dir dir") {
				t.Errorf("data %s %s: exit %d, stdout %q, stderr %q", sub, h, code, out, errs)
			}
		}
	}
	code, _, errs := dataRun(t.TempDir(), "", "export", "prox", "--prox-h", "2", "--graphs", "1000", "-h")
	if code != exitOK || !strings.Contains(errs, "-prox-h h") {
		t.Errorf("export -h: exit %d: %q", code, errs)
	}
	code, out, _ := dataRun(t.TempDir(), "", "stats", "prox", "--prox-h", "2", "--graphs", "30", "--json")
	if code != exitOK || !strings.Contains(out, `"name": "prox-h2"`) {
		t.Errorf("stats --prox-h 2: exit %d: %s", code, out)
	}
}
