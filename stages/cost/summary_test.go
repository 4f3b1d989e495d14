package cost

import (
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/spn-project/spn/schema"
	"github.com/spn-project/spn/stages"
	"github.com/spn-project/spn/stages/plan"
)

// TestSummary: without a calibration the kinds are counted, hours 0; a
// calibration beside the spec or given is read and estimates the hours;
// a given file that is missing, or one for another device, is an error.
func TestSummary(t *testing.T) {
	dir := t.TempDir()
	specFile := filepath.Join(dir, "x.cue")
	other := filepath.Join(dir, "other.json")
	ds := schema.Dataset{Kind: "prox", H: 3, Graphs: 1000}
	gen := &plan.Node{Kind: stages.KindGenerate, Params: stages.GenerateParams{Dataset: ds}, Status: plan.Cached}
	pre := &plan.Node{Kind: stages.KindPrecompute, Params: stages.PrecomputeParams{KMax: 5}, Deps: []*plan.Node{gen}, Status: plan.ToRun}
	p := &plan.Plan{Nodes: []*plan.Node{gen, pre}}
	cal := &Calibration{Version: 1, Threads: 1, Device: "cpu",
		StageSeconds: map[string]map[string]float64{"precompute": {"prox(h=3)": 3600}, "generate": {"prox(h=3)": 36}}}
	for _, tc := range []struct {
		name        string
		besideSpec  bool // a calibration.json beside the spec
		calFile     string
		device      string
		wantCal     bool
		wantErr     bool
		wantToRunHr float64 // of precompute
	}{
		{name: "none", device: "cpu"},
		{name: "beside the spec", besideSpec: true, device: "cpu", wantCal: true, wantToRunHr: 1},
		{name: "given", calFile: other, device: "cpu", wantCal: true, wantToRunHr: 1},
		{name: "given, missing", calFile: filepath.Join(dir, "none.json"), device: "cpu", wantErr: true},
		{name: "other device", besideSpec: true, device: "cuda:0", wantErr: true},
	} {
		os.Remove(DefaultCalibration(specFile))
		if err := cal.Write(other); err != nil {
			t.Fatal(err)
		}
		if tc.besideSpec {
			if err := cal.Write(DefaultCalibration(specFile)); err != nil {
				t.Fatal(err)
			}
		}
		kinds, got, est, err := Summary(p, specFile, tc.calFile, tc.device)
		if (err != nil) != tc.wantErr {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if err != nil {
			continue
		}
		if (got != nil) != tc.wantCal || (est != nil) != tc.wantCal {
			t.Errorf("%s: calibration %v, estimate %v", tc.name, got != nil, est != nil)
		}
		i := slices.IndexFunc(kinds, func(k KindCost) bool { return k.Kind == stages.KindPrecompute })
		if i < 0 || kinds[i].Stages != 1 || kinds[i].ToRun != 1 || kinds[i].ToRunHours != tc.wantToRunHr {
			t.Errorf("%s: kinds %+v", tc.name, kinds)
		}
	}
}

// TestNewCalibration: this machine, now, the threads and device given,
// no entries.
func TestNewCalibration(t *testing.T) {
	before := time.Now().UTC().Add(-time.Second)
	c := NewCalibration(3, "cuda:1")
	if c.Version != CalibrationVersion || c.GOARCH != runtime.GOARCH || c.CPUs != runtime.NumCPU() || c.Threads != 3 ||
		c.Device != "cuda:1" || c.Date.Before(before) || c.Date.After(time.Now().UTC()) || c.Entries != nil {
		t.Errorf("calibration %+v", c)
	}
}
