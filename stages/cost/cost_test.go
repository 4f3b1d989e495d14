package cost

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spn-project/spn/schema"
	"github.com/spn-project/spn/stages"
	"github.com/spn-project/spn/stages/plan"
)

func point(kind string, k, layers, hidden, epochs int) *schema.Point {
	return &schema.Point{Model: schema.Model{Kind: kind, K: k, Layers: layers, Hidden: hidden},
		Training: schema.Training{Epochs: epochs}}
}

// A two-point Errica fold: the estimate scales the calibrated epoch time
// by epochs, layers × hidden and graphs, charges a final run the mean of
// its fold's points and counts only uncached stages as to run. Hours are
// seconds × the calibration's threads, except a GPU calibration's train
// stages, which count one GPU each.
func TestEstimate(t *testing.T) {
	for _, device := range []string{"", "cpu", "cuda:0"} {
		t.Run("device "+device, func(t *testing.T) { estimate(t, device) })
	}
}

func estimate(t *testing.T, device string) {
	ds := schema.Dataset{Kind: "prox", H: 3, Graphs: 2000}
	gen := &plan.Node{Kind: stages.KindGenerate, Params: stages.GenerateParams{Dataset: ds}, Status: plan.Cached}
	pre := &plan.Node{Kind: stages.KindPrecompute, Params: stages.PrecomputeParams{KMax: 5}, Deps: []*plan.Node{gen}, Status: plan.ToRun}
	t1 := &plan.Node{Kind: stages.KindTrain, Deps: []*plan.Node{gen, pre}, Status: plan.ToRun,
		Params: stages.TrainParams{Role: stages.RoleSelect, Point: point("spn", 5, 4, 64, 100)}}
	t2 := &plan.Node{Kind: stages.KindTrain, Deps: []*plan.Node{gen, pre}, Status: plan.Cached,
		Params: stages.TrainParams{Role: stages.RoleSelect, Point: point("spn", 4, 2, 32, 100)}}
	sel := &plan.Node{Kind: stages.KindSelect, Deps: []*plan.Node{t1, t2}, Status: plan.ToRun}
	fin := &plan.Node{Kind: stages.KindTrain, Deps: []*plan.Node{gen, pre, sel}, Status: plan.ToRun,
		Params: stages.TrainParams{Role: stages.RoleFinal}}
	gat := &plan.Node{Kind: stages.KindTrain, Deps: []*plan.Node{gen, pre}, Status: plan.ToRun,
		Params: stages.TrainParams{Role: stages.RoleHoldout, Point: point("gat", 1, 2, 32, 10)}}
	p := &plan.Plan{Nodes: []*plan.Node{gen, pre, t1, t2, sel, fin, gat}}
	cal := &Calibration{Version: 1, Threads: 2, Device: device,
		Entries:      []Entry{{Dataset: "prox(h=3)", Model: "spn", K: 5, Layers: 4, Hidden: 64, Graphs: 1000, SecondsPerEpoch: 1.8}},
		StageSeconds: map[string]map[string]float64{"precompute": {"prox(h=3)": 36}, "generate": {"prox(h=3)": 72}}}
	est, err := cal.Estimate(p)
	if err != nil {
		t.Fatal(err)
	}
	// t1: 1.8 s × 100 epochs × 2 (graphs) = 360 s; t2 (nearest k = 5):
	// 360 × (2·32)/(4·64) = 90 s; final = mean = 225 s. CPU-hours = s × 2
	// threads / 3600; on a GPU the train stages' hours are s / 3600.
	h := func(s float64) float64 { return s * 2 / 3600 }
	ht := h
	if device == "cuda:0" {
		ht = func(s float64) float64 { return s / 3600 }
	}
	want := map[string][2]float64{ // kind → {all, to run}
		"generate":   {h(72), 0},
		"precompute": {h(36), h(36)},
		"train":      {ht(360 + 90 + 225), ht(360 + 225)},
		"select":     {0, 0},
		"total":      {h(72+36) + ht(675), h(36) + ht(585)},
	}
	for _, k := range est.Kinds {
		w := want[k.Kind]
		if math.Abs(k.Hours-w[0]) > 1e-9 || math.Abs(k.ToRunHours-w[1]) > 1e-9 {
			t.Errorf("%s: %.6f / %.6f hours, want %.6f / %.6f", k.Kind, k.Hours, k.ToRunHours, w[0], w[1])
		}
	}
	if len(est.Missing) != 1 || est.Missing[0] != "prox(h=3) gat k=1" {
		t.Errorf("missing %v", est.Missing)
	}
	// A final stage whose run copies an earlier stage's artifacts
	// (ResolveReuse) is still to run but costs no training.
	fin.Reuses = "0123456789ab"
	est, err = cal.Estimate(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range est.Kinds {
		if k.Kind == "train" && (k.ToRun != 3 || math.Abs(k.ToRunHours-ht(360)) > 1e-9) {
			t.Errorf("train with the final stage reused: %d to run, %.6f hours, want 3 and %.6f", k.ToRun, k.ToRunHours, ht(360))
		}
	}
}

// TestBaselineEntry: spn calibrate records the baseline (no
// message-passing layers) with layers 0; the file reads back and the
// baseline's cost scales by epochs and hidden only.
func TestBaselineEntry(t *testing.T) {
	path := filepath.Join(t.TempDir(), "calibration.json")
	cal := &Calibration{Version: CalibrationVersion, Threads: 1,
		Entries: []Entry{{Dataset: "tu(DD)", Model: "baseline", Layers: 0, Hidden: 32, SecondsPerEpoch: 0.5}}}
	if err := cal.Write(path); err != nil {
		t.Fatal(err)
	}
	back, err := ReadCalibration(path)
	if err != nil {
		t.Fatal(err)
	}
	ds := schema.Dataset{Kind: "tu", Name: "DD"}
	gen := &plan.Node{Kind: stages.KindGenerate, Params: stages.GenerateParams{Dataset: ds}, Status: plan.Cached}
	tr := &plan.Node{Kind: stages.KindTrain, Deps: []*plan.Node{gen}, Status: plan.ToRun,
		Params: stages.TrainParams{Role: stages.RoleHoldout, Point: point("baseline", 0, 0, 64, 100)}}
	est, err := back.Estimate(&plan.Plan{Nodes: []*plan.Node{gen, tr}})
	if err != nil {
		t.Fatal(err)
	}
	want := 0.5 * 100 * 2 / 3600 // 100 epochs, hidden 64 against 32, 1 thread
	found := false
	for _, k := range est.Kinds {
		if k.Kind == "train" {
			found = true
			if math.Abs(k.Hours-want) > 1e-12 {
				t.Errorf("baseline: %.6f CPU-hours, want %.6f", k.Hours, want)
			}
		}
	}
	if !found {
		t.Errorf("no train cost in %+v", est.Kinds)
	}
	if len(est.Missing) != 0 {
		t.Errorf("missing %v", est.Missing)
	}
}

// TestParseCalibrationPlace: a calibration file that is not JSON is
// named with the line and column of the fault.
func TestParseCalibrationPlace(t *testing.T) {
	const want = `calibration cal.json:2:12: invalid character '}' looking for beginning of value`
	if _, err := ParseCalibration("cal.json", []byte("{\"version\": 1,\n\"entries\": }")); err == nil || err.Error() != want {
		t.Errorf("%v, want %q", err, want)
	}
}

// TestParseCalibrationFirstInvalid: with several invalid stage seconds,
// the error names the first by kind and dataset, every time.
func TestParseCalibrationFirstInvalid(t *testing.T) {
	b := []byte(`{"version": 1, "stage_seconds": {"precompute": {"tu(NCI1)": -1, "tu(DD)": -2}, "generate": {"prox(h=3)": -4, "tu(ENZYMES)": -3}}}`)
	const want = "calibration cal.json: stage_seconds.generate.prox(h=3): invalid value -4"
	for range 20 {
		if _, err := ParseCalibration("cal.json", b); err == nil || err.Error() != want {
			t.Fatalf("error %v, want %s", err, want)
		}
	}
}

func FuzzParseCalibration(f *testing.F) {
	f.Add([]byte(`{"version":1,"threads":1,"entries":[{"dataset":"tu(DD)","model":"spn","k":5,"layers":4,"hidden":64,"seconds_per_epoch":8.4}]}`))
	f.Add([]byte(`{"version":1,"entries":[{"dataset":"x","model":"spn","layers":0,"hidden":1,"seconds_per_epoch":-1}]}`))
	f.Add([]byte(`{"version":2}`))
	f.Add([]byte(`{"version":1,"stage_seconds":{"generate":{"tu(DD)":-3}}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := ParseCalibration("fuzz", b)
		if err != nil {
			return
		}
		for _, e := range c.Entries {
			if e.Layers < 0 || e.Hidden < 1 || e.SecondsPerEpoch < 0 || math.IsNaN(e.SecondsPerEpoch) {
				t.Fatalf("accepted invalid entry %+v", e)
			}
		}
	})
}

// TestSeconds: Seconds gives Estimate's seconds by stage key and names
// the stages the calibration did not measure (an uncalibrated model, a
// final run whose fold has one, a precompute of an unmeasured dataset).
func TestSeconds(t *testing.T) {
	ds := schema.Dataset{Kind: "prox", H: 3, Graphs: 2000}
	node := func(key, kind string, params any, deps ...*plan.Node) *plan.Node {
		return &plan.Node{Key: key, Name: key, Kind: kind, Params: params, Deps: deps}
	}
	gen := node("gen", stages.KindGenerate, stages.GenerateParams{Dataset: ds})
	pre := node("pre", stages.KindPrecompute, stages.PrecomputeParams{KMax: 5}, gen)
	t1 := node("t1", stages.KindTrain, stages.TrainParams{Role: stages.RoleSelect, Point: point("spn", 5, 4, 64, 100)}, gen, pre)
	gat := node("gat", stages.KindTrain, stages.TrainParams{Role: stages.RoleSelect, Point: point("gat", 1, 2, 32, 10)}, gen, pre)
	sel := node("sel", stages.KindSelect, nil, t1, gat)
	fin := node("fin", stages.KindTrain, stages.TrainParams{Role: stages.RoleFinal}, gen, pre, sel)
	p := &plan.Plan{Nodes: []*plan.Node{gen, pre, t1, gat, sel, fin}}
	cal := &Calibration{Version: 1, Threads: 2,
		Entries:      []Entry{{Dataset: "prox(h=3)", Model: "spn", K: 5, Layers: 4, Hidden: 64, Graphs: 1000, SecondsPerEpoch: 1.8}},
		StageSeconds: map[string]map[string]float64{"generate": {"prox(h=3)": 72}}}
	secs, missing := cal.Seconds(p)
	// t1: 1.8 s × 100 epochs × 2 (graphs); pre, gat and the final run
	// (whose fold holds gat) have none.
	want := map[string]float64{"gen": 72, "t1": 360, "sel": 0}
	for k, w := range want {
		if math.Abs(secs[k]-w) > 1e-9 {
			t.Errorf("%s: %g s, want %g", k, secs[k], w)
		}
	}
	if len(secs) != len(want) {
		t.Errorf("%d stages, want %d", len(secs), len(want))
	}
	if got := strings.Join(missing, ","); got != "fin,gat,pre" {
		t.Errorf("missing %q, want fin,gat,pre", got)
	}
}

// TestLookupBatch: an entry of the stage's batch size wins over a nearer
// k, then one of its N_∞ setting; among entries of other batch sizes the
// nearest k, then the nearest batch size; an entry without a batch size
// (older files) matches every one. Estimates from another batch size or
// N_∞ setting are listed.
func TestLookupBatch(t *testing.T) {
	cal := &Calibration{Version: 1, Threads: 1, Entries: []Entry{
		{Dataset: "tu(DD)", Model: "spn", K: 5, Layers: 1, Hidden: 1, BatchSize: 32, SecondsPerEpoch: 10},
		{Dataset: "tu(DD)", Model: "spn", K: 5, Layers: 1, Hidden: 1, BatchSize: 128, SecondsPerEpoch: 4},
		{Dataset: "tu(DD)", Model: "spn", K: 3, Layers: 1, Hidden: 1, BatchSize: 32, SecondsPerEpoch: 8},
		{Dataset: "tu(DD)", Model: "spn", K: 1, Layers: 1, Hidden: 1, BatchSize: 512, SecondsPerEpoch: 1},
		{Dataset: "tu(DD)", Model: "gin", K: 1, Layers: 1, Hidden: 1, SecondsPerEpoch: 2},
		{Dataset: "tu(DD)", Model: "spn", K: 3, Layers: 1, Hidden: 1, BatchSize: 32, Unreachable: true, SecondsPerEpoch: 9},
	}}
	for _, c := range []struct {
		model    string
		k, batch int
		unr      bool
		want     float64
		from     string // what it was estimated from; "": its own configuration
	}{
		{"spn", 5, 128, false, 4, ""},
		{"spn", 5, 32, false, 10, ""},
		{"spn", 4, 128, false, 4, ""},           // the batch size over the nearer k = 3
		{"spn", 3, 64, false, 8, "batch 32"},    // k first among other batch sizes
		{"spn", 2, 256, false, 1, "batch 512"},  // k = 1 and 3 equally near: batch 512 is nearer 256 than 32
		{"gin", 1, 64, false, 2, ""},            // no batch size recorded
		{"spn", 3, 32, true, 9, ""},             // N_∞ measured
		{"spn", 5, 32, true, 9, ""},             // N_∞ over the nearer k
		{"spn", 5, 128, true, 4, "without N_∞"}, // the batch size over N_∞
		{"gin", 1, 64, true, 2, "without N_∞"},  // no entry with N_∞
		{"spn", 3, 64, true, 9, "batch 32"},     // batch sizes off alike: N_∞ decides
	} {
		p := &plan.Plan{Nodes: []*plan.Node{{Key: "t", Name: "t", Kind: stages.KindTrain,
			Params: stages.TrainParams{Role: stages.RoleHoldout, Point: &schema.Point{
				Model:    schema.Model{Kind: c.model, K: c.k, Layers: 1, Hidden: 1, Unreachable: c.unr},
				Training: schema.Training{Epochs: 1, BatchSize: c.batch}}},
			Deps: []*plan.Node{{Kind: stages.KindGenerate, Params: stages.GenerateParams{Dataset: schema.Dataset{Kind: "tu", Name: "DD"}}}}}}}
		secs, missing := cal.Seconds(p)
		if secs["t"] != c.want || len(missing) != 0 {
			t.Errorf("%s k=%d batch %d N_∞ %v: %g s (missing %v), want %g", c.model, c.k, c.batch, c.unr, secs["t"], missing, c.want)
		}
		est, err := cal.Estimate(p)
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		if c.from != "" {
			unr := ""
			if c.unr {
				unr = " N_∞"
			}
			want = []string{fmt.Sprintf("tu(DD) %s k=%d batch %d%s (from %s)", c.model, c.k, c.batch, unr, c.from)}
		}
		if !slices.Equal(est.Approximate, want) {
			t.Errorf("%s k=%d batch %d N_∞ %v: approximate %q, want %q", c.model, c.k, c.batch, c.unr, est.Approximate, want)
		}
	}
}

// TestMerge: the new calibration's entries win; an older one of another
// batch size stays, an older one without a batch size goes when the same
// dataset, model and k was measured again; stage seconds likewise; the
// entries come out sorted.
func TestMerge(t *testing.T) {
	e := func(model string, k, batch int, s float64) Entry {
		return Entry{Dataset: "tu(DD)", Model: model, K: k, Layers: 1, Hidden: 1, BatchSize: batch, SecondsPerEpoch: s}
	}
	c := &Calibration{Entries: []Entry{e("spn", 5, 32, 1), e("spn", 3, 128, 2)},
		StageSeconds: map[string]map[string]float64{"generate": {"tu(DD)": 5}}}
	inf := e("spn", 5, 32, 9)
	inf.Unreachable = true // N_∞ measured before: another configuration, kept
	old := &Calibration{Entries: []Entry{e("spn", 5, 32, 9), e("spn", 5, 128, 9), e("spn", 3, 0, 9), e("gin", 1, 0, 9), inf},
		StageSeconds: map[string]map[string]float64{"generate": {"tu(DD)": 9, "tu(NCI1)": 9}, "precompute": {"tu(DD)": 9}}}
	c.Merge(old)
	want := []Entry{e("gin", 1, 0, 9), e("spn", 3, 128, 2), e("spn", 5, 32, 1), inf, e("spn", 5, 128, 9)}
	if !slices.Equal(c.Entries, want) {
		t.Errorf("entries\n%+v\nwant\n%+v", c.Entries, want)
	}
	if got := fmt.Sprint(c.StageSeconds); got != "map[generate:map[tu(DD):5 tu(NCI1):9] precompute:map[tu(DD):9]]" {
		t.Errorf("stage seconds %s", got)
	}
}
