package expressivity

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestLoad: the paper's pairs come with their claims, a PAIRS.jsonl file
// or stdin is read under its name, and a missing or bad file is an
// *InputError.
func TestLoad(t *testing.T) {
	dir := t.TempDir()
	good := `{"name": "p", "a": {"nodes": 2, "edges": [[0,1]]}, "b": {"nodes": 2, "edges": []}}` + "\n"
	bad := `{"name": "broken", "a": {"nodes": 2, "edges": [[0,5]]}, "b": {"nodes": 2, "edges": []}}` + "\n"
	goodFile, badFile := filepath.Join(dir, "good.jsonl"), filepath.Join(dir, "bad.jsonl")
	for f, src := range map[string]string{goodFile: good, badFile: bad} {
		if err := os.WriteFile(f, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name       string
		source     string
		paper      bool
		ks         []int
		stdin      string
		wantSource string
		wantPairs  int
		wantPaper  bool
		inputErr   bool
	}{
		{name: "paper", paper: true, wantSource: "paper", wantPairs: 3, wantPaper: true},
		{name: "file", source: goodFile, ks: []int{2}, wantSource: goodFile, wantPairs: 1},
		{name: "stdin", source: "-", stdin: good + good, wantSource: "stdin", wantPairs: 2},
		{name: "missing file", source: filepath.Join(dir, "none.jsonl"), inputErr: true},
		{name: "bad file", source: badFile, inputErr: true},
	} {
		in, err := Load(context.Background(), Sources{Stdin: strings.NewReader(tc.stdin)}, tc.source, tc.paper, tc.ks)
		var ie *InputError
		if tc.inputErr {
			if !errors.As(err, &ie) || ie.Error() != ie.Err.Error() {
				t.Errorf("%s: %v, want an *InputError with its cause's message", tc.name, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if in.Source != tc.wantSource || len(in.Pairs) != tc.wantPairs || (in.Paper != nil) != tc.wantPaper ||
			(tc.wantPaper && len(in.Paper) != len(in.Pairs)) || in.Dataset || !slices.Equal(in.Ks, tc.ks) {
			t.Errorf("%s: source %q, %d pairs, paper %v, dataset %v, ks %v", tc.name, in.Source, len(in.Pairs), in.Paper != nil, in.Dataset, in.Ks)
		}
	}
}
