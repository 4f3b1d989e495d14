// Package cost estimates what a plan costs in CPU-hours before it runs,
// from per-epoch training times measured on the user's own hardware (a
// calibration file written by `spn calibrate`).
//
// The model: a train stage costs epochs × the seconds per epoch measured
// for its dataset, model kind, k, batch size and N_∞ (an entry of another
// batch size, or with N_∞ where the stage has none or the reverse, only
// when none of its own was measured: steps, and so per-step costs,
// depend on the batch size; N_∞ adds entries to aggregate), scaled linearly in layers × hidden
// (and, for generated h-Prox datasets, in the number of graphs) from the
// calibrated configuration. The epochs are the configured maximum, so the
// estimate is an upper bound when early stopping ends runs sooner. A final
// Errica run, whose configuration is only chosen by its select stage,
// costs the mean of the fold's grid points. generate and precompute stages
// cost what they took in the calibration (0 when not measured); select,
// evaluate and tabulate stages cost nothing worth counting.
package cost

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/spn-project/spn/internal/jsonpos"
	"github.com/spn-project/spn/schema"
	"github.com/spn-project/spn/stages"
	"github.com/spn-project/spn/stages/plan"
)

// CalibrationVersion is the format version of calibration files.
const CalibrationVersion = 1

// Calibration is what `spn calibrate` measured.
type Calibration struct {
	Version int `json:"version"`
	// Host, GOARCH, CPUs and Threads describe where and how it was
	// measured (Threads kernel threads per stage).
	Host    string    `json:"host"`
	GOARCH  string    `json:"goarch"`
	CPUs    int       `json:"cpus"`
	Threads int       `json:"threads"`
	Date    time.Time `json:"date"`
	// Device is the device the trainings ran on, as spn run resolves it
	// ("cpu" or "cuda:N"; absent means "cpu"): epoch times of one device
	// say nothing of another's.
	Device string `json:"device,omitempty"`
	// Entries are the measured training configurations.
	Entries []Entry `json:"entries"`
	// StageSeconds are the measured seconds of generate and precompute
	// stages, by kind and dataset label.
	StageSeconds map[string]map[string]float64 `json:"stage_seconds,omitempty"`
}

// Entry is one measured training configuration.
type Entry struct {
	// Dataset is plan.DatasetLabel of the dataset, e.g. "tu(DD)".
	Dataset string `json:"dataset"`
	Model   string `json:"model"`
	K       int    `json:"k"`
	Layers  int    `json:"layers"`
	Hidden  int    `json:"hidden"`
	// Graphs is the h-Prox dataset size measured (0 for fixed datasets).
	Graphs int `json:"graphs,omitempty"`
	// BatchSize is the training batch size measured (0: not recorded,
	// a calibration written before spn recorded it).
	BatchSize int `json:"batch_size,omitempty"`
	// Unreachable is whether the measured model read N_∞
	// (model.unreachable).
	Unreachable bool `json:"unreachable,omitempty"`
	// SecondsPerEpoch is the median epoch time after the first epoch.
	SecondsPerEpoch float64 `json:"seconds_per_epoch"`
}

// ReadCalibration reads and checks a calibration file.
func ReadCalibration(path string) (*Calibration, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading calibration: %w", err)
	}
	return ParseCalibration(path, b)
}

// ParseCalibration decodes and checks calibration content; name is used
// in errors.
func ParseCalibration(name string, b []byte) (*Calibration, error) {
	var c Calibration
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("calibration %w", jsonpos.Wrap(name, b, err))
	}
	if c.Version != CalibrationVersion {
		return nil, fmt.Errorf("calibration %s: format version %d, this spn reads %d", name, c.Version, CalibrationVersion)
	}
	for i, e := range c.Entries {
		if e.Dataset == "" || e.Model == "" || e.Layers < 0 || e.Hidden < 1 || e.K < 0 || e.Graphs < 0 || e.BatchSize < 0 ||
			!(e.SecondsPerEpoch >= 0) || math.IsInf(e.SecondsPerEpoch, 0) {
			return nil, fmt.Errorf("calibration %s: entries[%d]: invalid entry %+v", name, i, e)
		}
	}
	for _, kind := range slices.Sorted(maps.Keys(c.StageSeconds)) { // the first invalid value, the same every time
		m := c.StageSeconds[kind]
		for _, ds := range slices.Sorted(maps.Keys(m)) {
			if s := m[ds]; !(s >= 0) || math.IsInf(s, 0) {
				return nil, fmt.Errorf("calibration %s: stage_seconds.%s.%s: invalid value %v", name, kind, ds, s)
			}
		}
	}
	return &c, nil
}

// OnDevice returns the device the calibration was measured on.
func (c *Calibration) OnDevice() string {
	if c.Device == "" {
		return "cpu"
	}
	return c.Device
}

// OnGPU reports whether the calibration's train stages ran on a GPU.
func (c *Calibration) OnGPU() bool { return strings.HasPrefix(c.OnDevice(), "cuda") }

// CheckDevice fails unless the calibration was measured on device, the
// device the plan's stages run on.
func (c *Calibration) CheckDevice(device string) error {
	if device == "" {
		device = "cpu"
	}
	if c.OnDevice() != device {
		return fmt.Errorf("calibration measured on %s, but the stages run on %s", c.OnDevice(), device)
	}
	return nil
}

// Write stores the calibration as indented JSON.
func (c *Calibration) Write(path string) error {
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding calibration: %w", err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("writing calibration: %w", err)
	}
	return nil
}

// Merge adds old's entries and stage seconds that c does not measure
// itself (c's own win), so one file can serve several specs.
func (c *Calibration) Merge(old *Calibration) {
	type id struct {
		ds, model string
		k, batch  int
		unr       bool
	}
	have := map[id]bool{}
	for _, e := range c.Entries {
		have[id{e.Dataset, e.Model, e.K, e.BatchSize, e.Unreachable}] = true
		have[id{e.Dataset, e.Model, e.K, 0, e.Unreachable}] = true // an older entry without a batch size is replaced too
	}
	for _, e := range old.Entries {
		if !have[id{e.Dataset, e.Model, e.K, e.BatchSize, e.Unreachable}] {
			c.Entries = append(c.Entries, e)
		}
	}
	sort.SliceStable(c.Entries, func(i, j int) bool {
		a, b := c.Entries[i], c.Entries[j]
		if a.Dataset != b.Dataset {
			return a.Dataset < b.Dataset
		}
		if a.Model != b.Model {
			return a.Model < b.Model
		}
		if a.K != b.K {
			return a.K < b.K
		}
		if a.BatchSize != b.BatchSize {
			return a.BatchSize < b.BatchSize
		}
		return !a.Unreachable && b.Unreachable
	})
	for kind, m := range old.StageSeconds {
		if c.StageSeconds == nil {
			c.StageSeconds = map[string]map[string]float64{}
		}
		if c.StageSeconds[kind] == nil {
			c.StageSeconds[kind] = map[string]float64{}
		}
		for ds, s := range m {
			if _, ok := c.StageSeconds[kind][ds]; !ok {
				c.StageSeconds[kind][ds] = s
			}
		}
	}
}

// lookup finds the entry of dataset/model/k/batch/N_∞, else the same
// dataset and model, preferring in this order: the batch size (an entry
// without one counts as of every batch size), N_∞ or not as asked, the
// nearest k, the nearest batch size (by ratio).
func (c *Calibration) lookup(ds, model string, k, batch int, unreachable bool) (Entry, bool) {
	// key orders candidates, smaller first.
	type key struct {
		batchOff, unrOff int
		dk               int
		ratio            float64
	}
	rank := func(e Entry) key {
		r := key{dk: abs(e.K - k)}
		if e.BatchSize != 0 && e.BatchSize != batch && batch > 0 {
			r.batchOff, r.ratio = 1, math.Abs(math.Log(float64(e.BatchSize)/float64(batch)))
		}
		if e.Unreachable != unreachable {
			r.unrOff = 1
		}
		return r
	}
	less := func(a, b key) bool {
		switch {
		case a.batchOff != b.batchOff:
			return a.batchOff < b.batchOff
		case a.unrOff != b.unrOff:
			return a.unrOff < b.unrOff
		case a.dk != b.dk:
			return a.dk < b.dk
		}
		return a.ratio < b.ratio
	}
	best, found := Entry{}, false
	for _, e := range c.Entries {
		if e.Dataset != ds || e.Model != model {
			continue
		}
		if !found || less(rank(e), rank(best)) {
			best, found = e, true
		}
	}
	return best, found
}

// size is what epoch times scale with, layers × hidden; a model without
// message-passing layers (the baseline, layers 0) counts as one layer.
func size(layers, hidden int) int { return max(layers, 1) * hidden }

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// KindCost is the estimate of one stage kind.
type KindCost struct {
	Kind string
	// Stages and ToRun count the kind's stages, all and not cached.
	Stages, ToRun int
	// Hours and ToRunHours are CPU-hours (seconds × calibration threads);
	// train stages of a calibration on a GPU count GPU-hours (seconds).
	Hours, ToRunHours float64
}

// Estimate is a plan's cost.
type Estimate struct {
	Kinds []KindCost // in plan order of first appearance, then "total"
	// Missing lists the dataset/model/k combinations without calibration
	// (their train stages count 0).
	Missing []string
	// Approximate lists the train configurations estimated from an entry
	// of another batch size or N_∞ setting (none of theirs measured), each
	// with what it was estimated from.
	Approximate []string
}

// gaps are what a calibration lacks for a plan, by configuration label.
type gaps struct {
	missing, approximate map[string]bool
}

// DatasetOf returns the dataset of a stage from its generate input (or
// itself), if any.
func DatasetOf(n *plan.Node) (schema.Dataset, bool) {
	if gp, ok := n.Params.(stages.GenerateParams); ok {
		return gp.Dataset, true
	}
	for _, d := range n.Deps {
		if ds, ok := DatasetOf(d); ok {
			return ds, true
		}
	}
	return schema.Dataset{}, false
}

// Seconds returns the estimated seconds of the stages of p it has a
// measurement for, by stage key, on the calibration's device and threads
// (Estimate's model), and, sorted, the names of the others: train stages
// whose dataset, model kind and k were not calibrated (and final runs of
// a fold with one), generate and precompute stages whose dataset was
// not. Select, evaluate and tabulate stages cost 0 and are always
// measured.
func (c *Calibration) Seconds(p *plan.Plan) (map[string]float64, []string) {
	secs, _, unmeasured := c.seconds(p)
	out := make(map[string]float64, len(secs))
	var missing []string
	for n, s := range secs {
		if unmeasured[n] {
			missing = append(missing, n.Name)
			continue
		}
		out[n.Key] = s
	}
	sort.Strings(missing)
	return out, missing
}

// seconds is Seconds by node, with the labels of the uncalibrated train
// configurations and of those estimated from another batch size, and the
// unmeasured stages.
func (c *Calibration) seconds(p *plan.Plan) (map[*plan.Node]float64, gaps, map[*plan.Node]bool) {
	seconds := make(map[*plan.Node]float64, len(p.Nodes))
	g := gaps{missing: map[string]bool{}, approximate: map[string]bool{}}
	unmeasured := map[*plan.Node]bool{}
	var pointCost func(n *plan.Node) float64
	pointCost = func(n *plan.Node) float64 {
		tp, ok := n.Params.(stages.TrainParams)
		if !ok {
			return 0
		}
		ds, _ := DatasetOf(n)
		if tp.Point == nil { // final run: the mean of its fold's grid points
			for _, d := range n.Deps {
				if d.Kind != stages.KindSelect || len(d.Deps) == 0 {
					continue
				}
				sum := 0.0
				for _, t := range d.Deps {
					sum += pointCost(t)
				}
				return sum / float64(len(d.Deps))
			}
			return 0
		}
		pt := tp.Point
		label := plan.DatasetLabel(ds)
		e, ok := c.lookup(label, pt.Model.Kind, pt.Model.K, pt.Training.BatchSize, pt.Model.Unreachable)
		if !ok {
			g.missing[fmt.Sprintf("%s %s k=%d", label, pt.Model.Kind, pt.Model.K)] = true
			unmeasured[n] = true
			return 0
		}
		var from []string
		if b := pt.Training.BatchSize; e.BatchSize != 0 && e.BatchSize != b {
			from = append(from, fmt.Sprintf("batch %d", e.BatchSize))
		}
		if e.Unreachable != pt.Model.Unreachable {
			from = append(from, map[bool]string{true: "with N_∞", false: "without N_∞"}[e.Unreachable])
		}
		if len(from) > 0 {
			unr := ""
			if pt.Model.Unreachable {
				unr = " N_∞"
			}
			g.approximate[fmt.Sprintf("%s %s k=%d batch %d%s (from %s)", label, pt.Model.Kind, pt.Model.K, pt.Training.BatchSize, unr, strings.Join(from, ", "))] = true
		}
		s := e.SecondsPerEpoch * float64(pt.Training.Epochs) *
			float64(size(pt.Model.Layers, pt.Model.Hidden)) / float64(size(e.Layers, e.Hidden))
		if e.Graphs > 0 && ds.Graphs > 0 {
			s *= float64(ds.Graphs) / float64(e.Graphs)
		}
		return s
	}
	for _, n := range p.Nodes {
		var s float64
		switch n.Kind {
		case stages.KindTrain:
			s = pointCost(n)
			if tp, _ := n.Params.(stages.TrainParams); tp.Point == nil {
				// A final run is measured when its fold's points are.
				for _, d := range n.Deps {
					if d.Kind == stages.KindSelect && slices.ContainsFunc(d.Deps, func(t *plan.Node) bool { return unmeasured[t] }) {
						unmeasured[n] = true
					}
				}
			}
		case stages.KindGenerate, stages.KindPrecompute:
			var ok bool
			if ds, isDS := DatasetOf(n); isDS {
				s, ok = c.StageSeconds[n.Kind][plan.DatasetLabel(ds)]
			}
			unmeasured[n] = !ok
		}
		seconds[n] = s
	}
	return seconds, g, unmeasured
}

// Estimate computes the cost of every stage of p (Status from Resolve
// decides what is still to run; a stage to run that copies an earlier
// stage's artifacts, Node.Reuses from ResolveReuse, costs nothing).
func (c *Calibration) Estimate(p *plan.Plan) (*Estimate, error) {
	if c == nil {
		return nil, errors.New("no calibration")
	}
	threads := float64(max(c.Threads, 1))
	seconds, g, _ := c.seconds(p)
	est := &Estimate{}
	idx := map[string]int{}
	total := KindCost{Kind: "total"}
	for _, n := range p.Nodes {
		s := seconds[n]
		i, ok := idx[n.Kind]
		if !ok {
			i = len(est.Kinds)
			idx[n.Kind] = i
			est.Kinds = append(est.Kinds, KindCost{Kind: n.Kind})
		}
		h := s * threads / 3600
		if n.Kind == stages.KindTrain && c.OnGPU() {
			h = s / 3600 // one GPU, whatever the host's threads
		}
		k := &est.Kinds[i]
		k.Stages++
		k.Hours += h
		total.Stages++
		total.Hours += h
		if n.Status != plan.Cached {
			k.ToRun++
			total.ToRun++
			if n.Reuses == "" { // a copy of an earlier stage's artifacts costs no training
				k.ToRunHours += h
				total.ToRunHours += h
			}
		}
	}
	est.Kinds = append(est.Kinds, total)
	for m := range g.missing {
		est.Missing = append(est.Missing, m)
	}
	for m := range g.approximate {
		est.Approximate = append(est.Approximate, m)
	}
	sort.Strings(est.Missing)
	sort.Strings(est.Approximate)
	return est, nil
}

// Counts is Estimate without a calibration: the stages of each kind of p,
// all and still to run (Status from Resolve), in plan order of first
// appearance, then "total"; the hours stay 0.
func Counts(p *plan.Plan) []KindCost {
	var kinds []KindCost
	idx := map[string]int{}
	total := KindCost{Kind: "total"}
	for _, n := range p.Nodes {
		i, ok := idx[n.Kind]
		if !ok {
			i = len(kinds)
			idx[n.Kind] = i
			kinds = append(kinds, KindCost{Kind: n.Kind})
		}
		kinds[i].Stages++
		total.Stages++
		if n.Status != plan.Cached {
			kinds[i].ToRun++
			total.ToRun++
		}
	}
	return append(kinds, total)
}
