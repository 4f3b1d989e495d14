package exec_test

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/spn-project/spn/stages/exec"
	"github.com/spn-project/spn/stages/plan"
)

// A plan file round-trips the nodes a stage needs, under a content name;
// a seed key is written only where it is not the key (a GPU stage's), and
// reads back as the key where absent.
func TestPlanFileRoundTrip(t *testing.T) {
	gen := &plan.Node{Key: "aa11", SeedKey: "aa11", Kind: "generate", Version: "1", Name: "generate x", JSON: []byte(`{"d":1}`)}
	tr := &plan.Node{Key: "bb22", SeedKey: "dd44", Kind: "train", Version: "3", VKey: "cc", Name: "train x", JSON: []byte(`{"p":2}`), Deps: []*plan.Node{gen}}
	dir := t.TempDir()
	f := exec.NewPlanFile("spec", []*plan.Node{gen, tr})
	path, err := f.Write(dir)
	if err != nil {
		t.Fatal(err)
	}
	again, err := f.Write(dir)
	if err != nil || again != path {
		t.Errorf("same content, other path: %s vs %s (%v)", again, path, err)
	}
	back, err := exec.ReadPlanFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n, err := back.Node("bb22")
	if err != nil {
		t.Fatal(err)
	}
	if n.Key != tr.Key || n.Kind != tr.Kind || n.Version != tr.Version || n.VKey != "cc" || n.Name != tr.Name ||
		string(n.JSON) != string(tr.JSON) || len(n.Deps) != 1 || n.Deps[0].Key != "aa11" || n.Deps[0].Kind != "generate" {
		t.Errorf("node back: %+v", n)
	}
	if n.SeedKey != "dd44" {
		t.Errorf("train node's seed key back: %q, want dd44", n.SeedKey)
	}
	if g, err := back.Node("aa11"); err != nil || g.SeedKey != "aa11" {
		t.Errorf("generate node's seed key back: %v, %v; want its key", g, err)
	}
	if f.Nodes[0].SeedKey != "" || f.Nodes[1].SeedKey != "dd44" {
		t.Errorf("seed keys written: %q and %q, want none and dd44", f.Nodes[0].SeedKey, f.Nodes[1].SeedKey)
	}
	if _, err := back.Node("zz"); err == nil {
		t.Error("unknown key found")
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 || filepath.Ext(ents[0].Name()) != ".json" {
		t.Errorf("plan dir holds %v", ents)
	}
}

func TestParsePlanFileErrors(t *testing.T) {
	for name, src := range map[string]string{
		"syntax":    `{`,
		"version":   `{"version":9,"nodes":[]}`,
		"no key":    `{"version":1,"nodes":[{"kind":"train"}]}`,
		"path key":  `{"version":1,"nodes":[{"key":"../x","kind":"train"}]}`,
		"duplicate": `{"version":1,"nodes":[{"key":"a","kind":"t"},{"key":"a","kind":"t"}]}`,
		"bad input": `{"version":1,"nodes":[{"key":"a","kind":"t","inputs":[{"kind":"g","key":"x/y"}]}]}`,
	} {
		if _, err := exec.ParsePlanFile("f", []byte(src)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := exec.ParsePlanFile("f", []byte(`{"version":1,"nodes":[]}`)); err != nil {
		t.Errorf("empty plan file rejected: %v", err)
	}
	const want = `plan file plan.json:3:14: json: cannot unmarshal string into Go struct field PlanFile.version of type int`
	if _, err := exec.ParsePlanFile("plan.json", []byte("{\n\"nodes\": [],\n\"version\": \"1\"}")); err == nil || err.Error() != want {
		t.Errorf("a version of the wrong type: %v, want %q", err, want)
	}
}

func FuzzParsePlanFile(f *testing.F) {
	f.Add([]byte(`{"version":1,"spec":"s","nodes":[{"key":"ab","kind":"train","kind_version":"3","name":"t","params":{},"inputs":[{"kind":"generate","key":"cd","name":"g"}]}]}`))
	f.Add([]byte(`{"version":1,"nodes":[{"key":"a","kind":"t"},{"key":"a","kind":"t"}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		pf, err := exec.ParsePlanFile("fuzz", b)
		if err != nil {
			return
		}
		seen := map[string]bool{}
		for _, n := range pf.Nodes {
			if seen[n.Key] || n.Key == "" || filepath.Base(n.Key) != n.Key {
				t.Fatalf("accepted bad key %q", n.Key)
			}
			seen[n.Key] = true
			nd, err := pf.Node(n.Key)
			if err != nil || !reflect.DeepEqual(nd.Key, n.Key) {
				t.Fatalf("Node(%q): %v", n.Key, err)
			}
		}
	})
}
