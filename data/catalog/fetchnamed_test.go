package catalog

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spn-project/spn/data/fetch"
	"github.com/spn-project/spn/data/lrgb"
)

// TestCheckFetchable: fetchable names pass; the first other name is
// named, with the list of fetchable ones.
func TestCheckFetchable(t *testing.T) {
	for _, tc := range []struct {
		names []string
		want  string // "" when all are fetchable
	}{
		{nil, ""},
		{[]string{"PROTEINS", "EXP", lrgb.Name, "ogbg-molhiv", "QM9-test"}, ""},
		{[]string{"PROTEINS", "prox", "nope"}, `cannot fetch "prox" (known: `},
		{[]string{"proteins"}, `cannot fetch "proteins" (known: `},
	} {
		err := CheckFetchable(tc.names)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%v: %v", tc.names, err)
		case tc.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.want) || !strings.Contains(err.Error(), "PROTEINS, ")):
			t.Errorf("%v: %v, want %q…", tc.names, err, tc.want)
		}
	}
}

// TestFetchErrors: a name that is not upstream's is unknown; with refresh
// a data dir that cannot be made fails before anything is fetched.
func TestFetchErrors(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	blocked := filepath.Join(dir, "file")
	if err := os.WriteFile(blocked, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, dataset, dataDir string
		refresh                bool
		unknown                bool
	}{
		{"unknown name", "nope", dir, false, true},
		{"refresh, data dir a file", "EXP", filepath.Join(blocked, "data"), true, false},
		{"refresh LRGB, data dir a file", lrgb.Name, filepath.Join(blocked, "data"), true, false},
	} {
		f := &fetch.Fetcher{DataDir: tc.dataDir}
		lrgbDir, err := Fetch(ctx, f, tc.dataset, tc.refresh)
		if err == nil || errors.Is(err, ErrUnknown) != tc.unknown || lrgbDir != "" || len(f.Sources()) != 0 {
			t.Errorf("%s: %q, %v, %d sources", tc.name, lrgbDir, err, len(f.Sources()))
		}
		if tc.refresh && !strings.Contains(err.Error(), "refreshing") {
			t.Errorf("%s: %v, want the refresh's error", tc.name, err)
		}
	}
}
