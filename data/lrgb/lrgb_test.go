package lrgb_test

import (
	"bufio"
	"compress/gzip"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spn-project/spn/data/fetch"
	"github.com/spn-project/spn/data/lrgb"
	"github.com/spn-project/spn/internal/testkit/lrgbtest"
	"github.com/spn-project/spn/internal/testkit/mirrortest"
)

// TestFetch: the two files come from the mirror into the data folder,
// locked with their SHA-256s; a copy whose bytes differ from upstream's
// is refused naming the file, unless AcceptMismatch.
func TestFetch(t *testing.T) {
	mirror := mirrortest.Dir(t)
	dataDir := t.TempDir()
	dir, err := lrgb.Fetch(context.Background(), &fetch.Fetcher{DataDir: dataDir, Mirror: mirror})
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dataDir, "lrgb"); dir != want {
		t.Errorf("folder %s, want %s", dir, want)
	}
	lock, err := os.ReadFile(filepath.Join(dataDir, fetch.LockFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`"lrgb/peptide_multi_class_dataset.csv.gz"`, "e314f7dfb1ac46ef83fe5f5aa4fe502ad4527da633b64e6b997cb0c452511de3",
		`"lrgb/splits_random_stratified_peptide.pickle"`, "4573079852cce8867ad2d734c5dd22d77538bbe9f628223a8d4b3b531f6fffd0",
	} {
		if !strings.Contains(string(lock), want) {
			t.Errorf("lock file lacks %s:\n%s", want, lock)
		}
	}

	// A mirror whose split file has one byte changed.
	bad := t.TempDir()
	if err := os.MkdirAll(filepath.Join(bad, "lrgb"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"peptide_multi_class_dataset.csv.gz", "splits_random_stratified_peptide.pickle"} {
		b, err := os.ReadFile(filepath.Join(mirror, "lrgb", name))
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(name, ".pickle") {
			b[len(b)/2] ^= 1
		}
		if err := os.WriteFile(filepath.Join(bad, "lrgb", name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, err = lrgb.Fetch(context.Background(), &fetch.Fetcher{DataDir: t.TempDir(), Mirror: bad})
	if err == nil || !strings.Contains(err.Error(), "splits_random_stratified_peptide.pickle: sha256") || !strings.Contains(err.Error(), "not LRGB's") {
		t.Errorf("changed split file: got %v, want an error naming it", err)
	}
	if _, err := lrgb.Fetch(context.Background(), &fetch.Fetcher{DataDir: t.TempDir(), Mirror: bad, AcceptMismatch: true}); err != nil {
		t.Errorf("changed split file with AcceptMismatch: %v", err)
	}
}

// line is what TestConversion reads of a converted line.
type line struct {
	Nodes    int       `json:"nodes"`
	Edges    [][]int   `json:"edges"`
	NodeFeat [][]int   `json:"node_feat"`
	EdgeFeat [][]int   `json:"edge_feat"`
	Target   []float64 `json:"target"`
	Split    string    `json:"split"`
}

// TestConversion converts the mirror's upstream files (CI runs it: it
// fails under CI=true without Python, RDKit and NumPy) and checks what
// LRGB publishes of Peptides-func: 15,535 graphs, the official split
// 10,873/2,331/2,331, 150.94 nodes and 153.65 edges a graph (LRGB's
// Table 1); and of every line, 9 atom and 3 bond features inside OGB's
// vocabularies, one feature row per bond, undirected edges listed once
// between distinct atoms of the graph, and 10 labels 0 or 1.
func TestConversion(t *testing.T) {
	f, err := os.Open(lrgbtest.Converted(t))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	if !zr.ModTime.IsZero() || zr.Name != "" {
		t.Errorf("gzip header: time %v, name %q; want neither (same input, same bytes)", zr.ModTime, zr.Name)
	}
	atomDims := []int{119, 5, 12, 12, 10, 6, 6, 2, 2} // OGB's get_atom_feature_dims()
	bondDims := []int{5, 6, 2}                        // get_bond_feature_dims()
	inVocab := func(row []int, dims []int) bool {
		if len(row) != len(dims) {
			return false
		}
		for j, v := range row {
			if v < 0 || v >= dims[j] {
				return false
			}
		}
		return true
	}
	splits := map[string]int{}
	var graphs, nodes, edges int
	positives := make([]int, 10)
	sc := bufio.NewScanner(zr)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		graphs++
		var l line
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("line %d: %v", graphs, err)
		}
		splits[l.Split]++
		nodes += l.Nodes
		edges += len(l.Edges)
		if len(l.NodeFeat) != l.Nodes || len(l.EdgeFeat) != len(l.Edges) || len(l.Target) != 10 {
			t.Fatalf("line %d: %d nodes, %d node feature rows, %d edges, %d edge feature rows, %d targets", graphs, l.Nodes, len(l.NodeFeat), len(l.Edges), len(l.EdgeFeat), len(l.Target))
		}
		for _, r := range l.NodeFeat {
			if !inVocab(r, atomDims) {
				t.Fatalf("line %d: atom features %v outside OGB's vocabularies %v", graphs, r, atomDims)
			}
		}
		seen := map[[2]int]bool{}
		for i, e := range l.Edges {
			if len(e) != 2 || e[0] == e[1] || min(e[0], e[1]) < 0 || max(e[0], e[1]) >= l.Nodes || seen[[2]int{min(e[0], e[1]), max(e[0], e[1])}] {
				t.Fatalf("line %d: edge %d %v: want a pair of distinct atoms 0..%d, listed once", graphs, i, e, l.Nodes-1)
			}
			seen[[2]int{min(e[0], e[1]), max(e[0], e[1])}] = true
			if !inVocab(l.EdgeFeat[i], bondDims) {
				t.Fatalf("line %d: bond features %v outside OGB's vocabularies %v", graphs, l.EdgeFeat[i], bondDims)
			}
		}
		for j, v := range l.Target {
			switch v {
			case 1:
				positives[j]++
			case 0:
			default:
				t.Fatalf("line %d: target %d is %v, want 0 or 1", graphs, j, v)
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if graphs != 15535 {
		t.Errorf("%d graphs, want 15535", graphs)
	}
	if want := map[string]int{"train": 10873, "valid": 2331, "test": 2331}; len(splits) != 3 || splits["train"] != want["train"] || splits["valid"] != want["valid"] || splits["test"] != want["test"] {
		t.Errorf("split sizes %v, want %v", splits, want)
	}
	if mean := float64(nodes) / float64(graphs); mean < 150.935 || mean >= 150.945 {
		t.Errorf("%.4f nodes a graph, LRGB gives 150.94", mean)
	}
	if mean := float64(edges) / float64(graphs); mean < 153.645 || mean >= 153.655 {
		t.Errorf("%.4f edges a graph, LRGB gives 153.65", mean)
	}
	t.Logf("%d graphs, %d nodes, %d edges, positives per task %v", graphs, nodes, edges, positives)
}

// TestConvertErrors: the script refuses a file whose MD5 is not the one
// LRGB pins (naming it), and bad usage with exit status 2.
func TestConvertErrors(t *testing.T) {
	python, script := lrgbtest.Python(t), lrgbtest.Script(t)
	dir := lrgbtest.FetchMirror(t, t.TempDir())
	bad := t.TempDir()
	for _, name := range []string{"peptide_multi_class_dataset.csv.gz", "splits_random_stratified_peptide.pickle"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(name, ".gz") {
			b = append(b, 0)
		}
		if err := os.WriteFile(filepath.Join(bad, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(t.TempDir(), "x.jsonl")
	run := func(args ...string) (int, string) {
		cmd := exec.Command(python, append([]string{script}, args...)...)
		msg, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return code, string(msg)
	}
	code, msg := run(bad, out)
	csvPath := filepath.Join(bad, "peptide_multi_class_dataset.csv.gz")
	if code != 1 || !strings.Contains(msg, csvPath+": MD5 ") || !strings.Contains(msg, "701eb743e899f4d793f0e13c8fa5a1b4") {
		t.Errorf("changed CSV: exit %d, %q; want 1 and the file's MD5 mismatch", code, msg)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("a failed conversion left %s", out)
	}
	code, msg = run(filepath.Join(bad, "missing"), out)
	if code != 1 || !strings.Contains(msg, filepath.Join(bad, "missing", "peptide_multi_class_dataset.csv.gz")) {
		t.Errorf("missing folder: exit %d, %q; want 1 naming the file", code, msg)
	}
	if code, msg = run(dir, filepath.Join(bad, "x.csv")); code != 2 || !strings.Contains(msg, "want a .jsonl or .jsonl.gz file") {
		t.Errorf("OUT .csv: exit %d, %q; want 2", code, msg)
	}
	if code, _ = run(dir); code != 2 {
		t.Errorf("one argument: exit %d, want 2", code)
	}
}

// TestFeaturisation checks the script's atom and bond features on the
// examples in OGB's own source (ogb/utils/features.py: the chiral carbon
// of Cl[C@H](/C=C/C)Br is [5, 2, 4, 5, 1, 0, 2, 0, 0], its stereo double
// bond [1, 2, 0]), an atom outside OGB's lists ("misc"), and that a row
// RDKit cannot parse or with bad labels is an error naming its CSV line.
func TestFeaturisation(t *testing.T) {
	python, script := lrgbtest.Python(t), lrgbtest.Script(t)
	csvPath := filepath.Join(t.TempDir(), "rows.csv.gz")
	prog := `
import gzip, sys
sys.path.insert(0, sys.argv[1])
import lrgb_peptides as l
from rdkit import Chem, RDLogger
RDLogger.DisableLog("rdApp.*")
m = Chem.MolFromSmiles("Cl[C@H](/C=C/C)Br")
print(l.atom_features(m.GetAtomWithIdx(1)), l.bond_features(m.GetBondWithIdx(2)))
print(l.smiles_graph(Chem, "[Na+].[Cl-]")["edges"], l.smiles_graph(Chem, "[Xe]")["node_feat"][0][0], l.smiles_graph(Chem, "C[N+](C)(C)C")["node_feat"][1][3])
p = sys.argv[2]
lab = '"[0, 0, 0, 0, 1, 0, 0, 0, 0, 1]"'
with gzip.open(p, "wt") as f:
    f.write(",smiles,peptide_seq,labels,identifier\n0,CCO,A," + lab + ",1\n1,C1CC,A," + lab + ",2\n")
rows = l.read_rows(p)
try:
    list(l.records(Chem, p, rows, ["train", "test"]))
except l.DataError as e:
    print(e)
with gzip.open(p, "wt") as f:
    f.write(",smiles,peptide_seq,labels,identifier\n0,CCO,A," + lab + ",1\n1,CC,A,\"[0, 2]\",2\n")
try:
    l.read_rows(p)
except l.DataError as e:
    print(e)
`
	out, err := exec.Command(python, "-c", prog, filepath.Dir(script), csvPath).CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	want := strings.Join([]string{
		"[5, 2, 4, 5, 1, 0, 2, 0, 0] [1, 2, 0]",
		"[] 53 6", // Xe is atomic number 54 (index 53); N+ has formal charge +1 (index 6)
		csvPath + ":3: RDKit cannot parse the SMILES 'C1CC'",
		csvPath + ":3: labels '[0, 2]': want 10 values 0 or 1",
	}, "\n") + "\n"
	if string(out) != want {
		t.Errorf("got\n%s\nwant\n%s", out, want)
	}
}
