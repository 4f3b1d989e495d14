package catalog

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/data/graphfile"
	"github.com/spn-project/spn/data/known"
	"github.com/spn-project/spn/data/lrgb"
)

// TestCheckImportName: valid names pass, malformed ones and built-in
// names in any case are refused, a name whose content spn knows passes.
func TestCheckImportName(t *testing.T) {
	for _, tc := range []struct {
		name string
		want string // "" when valid, else part of the error
	}{
		{"mine", ""},
		{"my_set-2.v1", ""},
		{lrgb.Name, ""},
		{"", "want letters"},
		{"-x", "want letters"},
		{"a/b", "want letters"},
		{"proteins", `"PROTEINS" is a built-in dataset name`},
		{"Prox", `"prox" is a built-in dataset name`},
		{"qm9-train", `"QM9-train" is a built-in dataset name`},
	} {
		err := CheckImportName(tc.name)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%q: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "name ")):
			t.Errorf("%q: %v, want an error with %q", tc.name, err, tc.want)
		}
	}
}

// TestImport: a valid file is stored under its name in the data dir; a
// missing or invalid file is an *ImportError; a file that is not the
// dataset a known name stands for is refused with the mismatch, or
// imported with a warning when mismatches are accepted.
func TestImport(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.jsonl")
	bad := filepath.Join(dir, "bad.jsonl")
	if err := os.WriteFile(good, []byte(strings.Repeat(`{"nodes": 2, "edges": [[0, 1]], "y": 0}`+"\n"+`{"nodes": 3, "edges": [[0, 1], [1, 2]], "y": 1}`+"\n", 2)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte(`{"nodes": 2, "edges": [[0, 5]], "y": 0}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, file, as string
		accept         bool
		inputErr       bool
		mismatch       bool // refused as not the known dataset
		warned         bool
	}{
		{name: "valid", file: good, as: "mine"},
		{name: "missing file", file: filepath.Join(dir, "none.jsonl"), as: "mine", inputErr: true},
		{name: "invalid file", file: bad, as: "mine", inputErr: true},
		{name: "known name, other content", file: good, as: lrgb.Name, mismatch: true},
		{name: "known name, accepted", file: good, as: lrgb.Name, accept: true, warned: true},
	} {
		dataDir := filepath.Join(t.TempDir(), "data")
		var warned error
		ds, dest, err := Import(tc.file, tc.as, ImportOptions{DataDir: dataDir, AcceptMismatch: tc.accept, Warn: func(err error) { warned = err }})
		var ie *ImportError
		var me *known.MismatchError
		switch {
		case tc.inputErr:
			if !errors.As(err, &ie) {
				t.Errorf("%s: %v, want an *ImportError", tc.name, err)
			}
			continue
		case tc.mismatch:
			if !errors.As(err, &me) || errors.As(err, &ie) {
				t.Errorf("%s: %v, want a *known.MismatchError", tc.name, err)
			}
			continue
		case err != nil:
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if (warned != nil) != tc.warned {
			t.Errorf("%s: warning %v, want one: %v", tc.name, warned, tc.warned)
		}
		if dest != graphfile.ImportedPath(dataDir, tc.as) || ds.Name != tc.as || len(ds.Graphs) != 4 {
			t.Errorf("%s: %s as %q with %d graphs", tc.name, dest, ds.Name, len(ds.Graphs))
		}
		back, err := data.ReadDatasetFile(dest)
		if err != nil || back.Name != tc.as || len(back.Graphs) != 4 {
			t.Errorf("%s: stored dataset %v, %v", tc.name, back, err)
		}
	}
}
