package selectstage

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/spn-project/spn/stages"
	"github.com/spn-project/spn/stages/selection"
)

// FuzzReadTrainResult checks that any content of result.json yields a
// result or an error, never a panic, and that a decoded result either
// selects or fails cleanly.
func FuzzReadTrainResult(f *testing.F) {
	f.Add([]byte(`{"metric": "accuracy", "val_score": 0.5, "val_loss": 0.7, "test_score": 0.4, "test_loss": 0.8}`))
	f.Add([]byte(`{"metric": "mae", "val_score": null}`))
	f.Add([]byte(`{"point": {"values": [{"path": "model.k", "value": 3}]}, "metric": "rocauc", "val_score": 1e308}`))
	f.Add([]byte("{\n\"val_score\" 0.5}"))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, stages.FileResult), b, 0o644); err != nil {
			t.Fatal(err)
		}
		r, err := selection.ReadTrainResult(dir)
		if err != nil {
			return
		}
		res, err := Select(stages.SelectParams{Points: 1, Runs: 1, SelectOn: selection.SelectOnValMetric}, []selection.TrainRun{{Source: "fuzz", Result: *r}})
		if err == nil && res.Winner != 0 {
			t.Errorf("winner %d of a single point", res.Winner)
		}
	})
}
