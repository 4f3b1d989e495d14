package cost

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/spn-project/spn/schema"
	"github.com/spn-project/spn/stages"
	"github.com/spn-project/spn/stages/cache"
	"github.com/spn-project/spn/stages/plan"
)

// DefaultCalibration is the calibration file spn plan --cost reads when
// none is given: calibration.json beside the spec file specFile.
func DefaultCalibration(specFile string) string {
	return filepath.Join(filepath.Dir(specFile), "calibration.json")
}

// ReadFor reads the calibration file calFile ("": DefaultCalibration of
// specFile) for the stages of a spec that run on device, and returns it
// with the file's name; the errors say how to measure one.
func ReadFor(specFile, calFile, device string) (*Calibration, string, error) {
	f := calFile
	if f == "" {
		f = DefaultCalibration(specFile)
	}
	cal, err := ReadCalibration(f)
	if err != nil {
		return nil, f, fmt.Errorf("%w (spn calibrate %s --out %s measures one)", err, specFile, f)
	}
	if err := cal.CheckDevice(device); err != nil {
		return nil, f, fmt.Errorf("%s: %w (spn calibrate %s --device %s --out FILE measures one)", f, err, specFile, device)
	}
	return cal, f, nil
}

// combo is one measured configuration: dataset × model kind × k × batch
// size × N_∞.
type combo struct {
	label, model string
	k, batch     int
	unreachable  bool
}

// CalibrationSpec returns the spec spn calibrate runs for spec: one
// single-run holdout experiment per distinct dataset × model kind × k ×
// batch size × N_∞ (model.unreachable) of spec, its first grid point,
// trained for epochs epochs, h-Prox datasets cut to proxGraphs graphs.
func CalibrationSpec(spec *schema.Spec, epochs, proxGraphs int) *schema.Spec {
	cspec := &schema.Spec{Name: spec.Name + "-calibration", Device: spec.Device, Mode: spec.Mode,
		File: spec.File, Tables: []schema.Table{}, Executor: spec.Executor}
	seen := map[combo]bool{}
	for _, e := range spec.Experiments {
		for _, pt := range e.Points {
			cb := combo{plan.DatasetLabel(e.Dataset), pt.Model.Kind, pt.Model.K, pt.Training.BatchSize, pt.Model.Unreachable}
			if seen[cb] {
				continue
			}
			seen[cb] = true
			ds := e.Dataset
			if ds.Kind == "prox" && ds.Graphs > proxGraphs {
				ds.Graphs = proxGraphs
			}
			pt.Training.Epochs = epochs
			pt.Values = nil
			pr := e.Protocol
			pr.Kind, pr.Splits, pr.Runs = "holdout", 1, 1
			cspec.Experiments = append(cspec.Experiments, schema.Experiment{
				Name: fmt.Sprintf("c%03d", len(seen)), Dataset: ds, Protocol: pr,
				Seeds: e.Seeds, Points: []schema.Point{pt},
			})
		}
	}
	return cspec
}

// Measured fills cal (its header set by the caller) with the timings of
// the run stages of p, a CalibrationSpec's plan, read from c: the
// generate and precompute seconds per dataset and each train stage's
// median epoch seconds (the first epoch, which compiles graphs, left out).
func Measured(cal *Calibration, p *plan.Plan, c *cache.Cache) error {
	if cal.StageSeconds == nil {
		cal.StageSeconds = map[string]map[string]float64{}
	}
	for _, n := range p.Nodes {
		ds, _ := DatasetOf(n)
		label := plan.DatasetLabel(ds)
		switch n.Kind {
		case stages.KindGenerate, stages.KindPrecompute:
			rec, err := c.ReadRecord(n.Kind, n.Key)
			if err != nil {
				return err
			}
			if cal.StageSeconds[n.Kind] == nil {
				cal.StageSeconds[n.Kind] = map[string]float64{}
			}
			cal.StageSeconds[n.Kind][label] = rec.Seconds
		case stages.KindTrain:
			tp := n.Params.(stages.TrainParams)
			b, err := os.ReadFile(filepath.Join(c.StageDir(n.Kind, n.Key), stages.FileTiming))
			var tm stages.TrainTiming
			if err == nil {
				err = json.Unmarshal(b, &tm)
			}
			if err != nil || len(tm.EpochSeconds) == 0 {
				return fmt.Errorf("%s: no epoch timings (%v)", n.Name, err)
			}
			secs := slices.Clone(tm.EpochSeconds)
			if len(secs) > 1 {
				secs = secs[1:] // the first epoch compiles graphs
			}
			slices.Sort(secs)
			e := Entry{Dataset: label, Model: tp.Point.Model.Kind, K: tp.Point.Model.K,
				Layers: tp.Point.Model.Layers, Hidden: tp.Point.Model.Hidden, BatchSize: tp.Point.Training.BatchSize, Unreachable: tp.Point.Model.Unreachable,
				SecondsPerEpoch: secs[len(secs)/2]}
			if ds.Kind == "prox" {
				e.Graphs = ds.Graphs
			}
			cal.Entries = append(cal.Entries, e)
		}
	}
	return nil
}
