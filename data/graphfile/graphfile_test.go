package graphfile

import (
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/spn-project/spn/data"
)

func write(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "g.jsonl")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestLimitSplits: limit keeps the first n graphs of each split part, in
// file order, and re-indexes the split and the lines.
func TestLimitSplits(t *testing.T) {
	parts := []string{"train", "test", "train", "valid", "train", "test", "valid", "test"}
	var b strings.Builder
	for i, p := range parts {
		b.WriteString(`{"nodes":1,"edges":[],"target":[` + string(rune('0'+i%2)) + `],"split":"` + p + `"}` + "\n")
	}
	src, err := ReadPath(write(t, b.String()), "g.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	ds, err := src.Prepare(Options{Task: Multilabel, Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	// kept file graphs 0 1 2 3 5 6 (lines 1 2 3 4 6 7): train 0 2, valid 3 6, test 1 5,
	// re-indexed: train 0 2, valid 3 5, test 1 4.
	want := []data.Split{{Train: []int{0, 2}, Val: []int{3, 5}, Test: []int{1, 4}}}
	if !reflect.DeepEqual(ds.Splits, want) || !reflect.DeepEqual(src.Lines, []int{1, 2, 3, 4, 6, 7}) || ds.Task != data.TaskBinary {
		t.Fatalf("splits %+v lines %v task %q, want %+v", ds.Splits, src.Lines, ds.Task, want)
	}
}

// TestRegressionMissingTargets: task regression reads null targets as
// missing (NaN) beside numbers, and binary-looking ones too; Contents
// reports them; a target that is not a number is an error at its line.
func TestRegressionMissingTargets(t *testing.T) {
	in := `{"nodes":1,"edges":[],"target":[null,2.5],"split":"train"}
{"nodes":2,"edges":[[0,1]],"target":[-0.5,1],"split":"valid"}
{"nodes":1,"edges":[],"target":[null,null],"split":"test"}
`
	for _, c := range []struct {
		name, in string
		want     [][]float64 // NaN: missing
	}{
		{"numbers and null", in, [][]float64{{math.NaN(), 2.5}, {-0.5, 1}, {math.NaN(), math.NaN()}}},
		{"0, 1 and null", strings.ReplaceAll(strings.ReplaceAll(in, "2.5", "1"), "-0.5", "0"), [][]float64{{math.NaN(), 1}, {0, 1}, {math.NaN(), math.NaN()}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			src, err := ReadPath(write(t, c.in), "g.jsonl")
			if err != nil {
				t.Fatal(err)
			}
			ds, err := src.Prepare(Options{Task: Regression})
			if err != nil {
				t.Fatal(err)
			}
			if ds.Task != data.TaskRegression || !ContentsOf(ds).Missing {
				t.Fatalf("task %q, contents %+v: want regression with missing targets", ds.Task, ContentsOf(ds))
			}
			for i, g := range ds.Graphs {
				for j, w := range c.want[i] {
					if y := g.Target[j]; math.IsNaN(w) != math.IsNaN(y) || !math.IsNaN(y) && y != w {
						t.Errorf("graph %d target %d = %v, want %v", i, j, y, w)
					}
				}
			}
		})
	}
	_, err := ReadPath(write(t, `{"nodes":1,"edges":[],"target":[1]}`+"\n"+`{"nodes":1,"edges":[],"target":["x"]}`+"\n"), "g.jsonl")
	if err == nil || !strings.HasPrefix(err.Error(), "g.jsonl:2:") {
		t.Errorf("a string target: %v, want an error at g.jsonl:2", err)
	}
}

// TestFolds: a file without a split is dealt into folds from the seed,
// stratified by class: every fold tests on a disjoint part with both
// classes in proportion, the same seed gives the same folds, another seed
// other folds.
func TestFolds(t *testing.T) {
	var b strings.Builder
	for i := range 40 {
		y := "0"
		if i%4 == 0 {
			y = "1" // 10 of class 1, 30 of class 0
		}
		b.WriteString(`{"nodes":1,"edges":[],"y":` + y + "}\n")
	}
	p := write(t, b.String())
	folds := func(seed int64) []data.Split {
		src, err := ReadPath(p, "g.jsonl")
		if err != nil {
			t.Fatal(err)
		}
		ds, err := src.Prepare(Options{Task: Classification, Folds: 5, Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		seen := map[int]bool{}
		for i, s := range ds.Splits {
			pos := 0
			for _, g := range s.Test {
				if seen[g] {
					t.Fatalf("graph %d tested in two folds", g)
				}
				seen[g] = true
				pos += ds.Graphs[g].Y
			}
			if len(s.Test) != 8 || pos != 2 || len(s.Val) != 8 || len(s.Train) != 24 {
				t.Errorf("fold %d: test %d graphs (%d of class 1), val %d, train %d; want 8 (2), 8, 24", i, len(s.Test), pos, len(s.Val), len(s.Train))
			}
		}
		return ds.Splits
	}
	a := folds(1)
	if !reflect.DeepEqual(a, folds(1)) {
		t.Error("the same seed gives other folds")
	}
	if reflect.DeepEqual(a, folds(2)) {
		t.Error("another seed gives the same folds")
	}
}

// TestReadImportedUnknown names the import command.
func TestReadImportedUnknown(t *testing.T) {
	_, err := ReadImported(t.TempDir(), "mine")
	if err == nil || !strings.Contains(err.Error(), "spn data import FILE.jsonl --name mine") {
		t.Errorf("got %v", err)
	}
}
