package cost

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/spn-project/spn/schema"
)

// CalibrationSpec measures each dataset × kind × k × batch × N_∞ once, as
// a one-run holdout, with prox datasets cut and the epochs set.
func TestCalibrationSpec(t *testing.T) {
	pt := func(kind string, k, batch int) schema.Point {
		return schema.Point{Model: schema.Model{Kind: kind, K: k}, Training: schema.Training{BatchSize: batch, Epochs: 100}}
	}
	spec := &schema.Spec{Name: "s", Device: "cpu", Experiments: []schema.Experiment{
		{Name: "a", Dataset: schema.Dataset{Kind: "prox", Graphs: 9000}, Protocol: schema.Protocol{Kind: "errica", Splits: 10, Runs: 3},
			Points: []schema.Point{pt("spn", 1, 32), pt("spn", 1, 32), pt("spn", 2, 32), pt("gin", 0, 32)}},
		{Name: "b", Dataset: schema.Dataset{Kind: "prox", Graphs: 9000}, Points: []schema.Point{pt("spn", 1, 32), pt("spn", 1, 64)}},
	}}
	c := CalibrationSpec(spec, 3, 1000)
	if c.Name != "s-calibration" || c.Device != "cpu" || len(c.Experiments) != 4 {
		t.Fatalf("calibration spec %q on %s with %d experiments, want s-calibration on cpu with 4", c.Name, c.Device, len(c.Experiments))
	}
	for i, e := range c.Experiments {
		if e.Dataset.Graphs != 1000 || e.Protocol.Kind != "holdout" || e.Protocol.Splits != 1 || e.Protocol.Runs != 1 ||
			len(e.Points) != 1 || e.Points[0].Training.Epochs != 3 || !strings.HasPrefix(e.Name, "c00") {
			t.Errorf("experiment %d: %+v", i, e)
		}
	}
	if got := c.Experiments[3].Points[0].Training.BatchSize; got != 64 {
		t.Errorf("last experiment's batch %d, want 64", got)
	}
	if spec.Experiments[0].Dataset.Graphs != 9000 || spec.Experiments[0].Points[0].Training.Epochs != 100 {
		t.Error("CalibrationSpec changed the spec")
	}
}

// ReadFor names the default file beside the spec and says how to measure
// one.
func TestReadFor(t *testing.T) {
	spec := filepath.Join(t.TempDir(), "x.cue")
	_, f, err := ReadFor(spec, "", "cpu")
	if f != DefaultCalibration(spec) || err == nil || !strings.Contains(err.Error(), "spn calibrate "+spec+" --out "+f+" measures one") {
		t.Errorf("ReadFor: %q, %v", f, err)
	}
}
