package evaluate

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/spn-project/spn/stages"
	"github.com/spn-project/spn/stages/selection"
)

// FuzzReadResult checks that any content of an evaluate result.json yields
// a result with finite split scores or an error, never a panic.
func FuzzReadResult(f *testing.F) {
	f.Add([]byte(`{"metric": "accuracy", "winner": 1, "split_scores": [0.5, 0.6], "run_scores": [0.5, 0.6], "val_scores": [0.7, 0.7]}`))
	f.Add([]byte(`{"split_scores": [null]}`))
	f.Add([]byte(`{"split_scores": [1e400]}`))
	f.Add([]byte(`{"split_scores": "x"}`))
	f.Add([]byte(`nul`))
	f.Fuzz(func(t *testing.T, b []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, stages.FileResult), b, 0o644); err != nil {
			t.Fatal(err)
		}
		r, err := selection.ReadEvalResult(dir)
		if err != nil {
			return
		}
		if len(r.SplitScores) == 0 {
			t.Error("accepted a result without split scores")
		}
	})
}
