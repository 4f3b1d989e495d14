package train

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/data/fetch"
	"github.com/spn-project/spn/data/sp"
	"github.com/spn-project/spn/internal/testkit/synth"
	"github.com/spn-project/spn/models"
	"github.com/spn-project/spn/models/fit"
	"github.com/spn-project/spn/models/kernels"
	"github.com/spn-project/spn/models/kinds"
	"github.com/spn-project/spn/schema"
	"github.com/spn-project/spn/stages"

	"github.com/spn-project/spn/internal/testkit/golden"
)

// inputs writes a small layered dataset and its hop sets (kmax 3) as the
// artifacts of a generate and a precompute stage.
func inputs(t *testing.T) []stages.Input {
	t.Helper()
	ds, hops, err := synth.Layered(2, 60, 2, [2]int{3, 5}, [2]int{2, 3}, 3)
	if err != nil {
		t.Fatal(err)
	}
	gen, pre := t.TempDir(), t.TempDir()
	if err := data.WriteDatasetFile(filepath.Join(gen, stages.FileDataset), ds); err != nil {
		t.Fatal(err)
	}
	if err := data.WriteHopsFile(filepath.Join(pre, stages.FileHops), hops); err != nil {
		t.Fatal(err)
	}
	return []stages.Input{{Kind: stages.KindGenerate, Dir: gen}, {Kind: stages.KindPrecompute, Dir: pre}}
}

func point(kind string, k int) *schema.Point {
	return &schema.Point{
		Model:    schema.Model{Kind: kind, K: k, Layers: 2, Hidden: 8, Dropout: 0.5, Pool: "sum"},
		Training: schema.Training{Optimizer: "adam", LR: 0.01, BatchSize: 8, Epochs: 4, Selection: "best_val_loss"},
	}
}

func job(t *testing.T, p stages.TrainParams, in []stages.Input) *stages.Job {
	t.Helper()
	raw, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	return &stages.Job{Name: "train test", Params: raw, Inputs: in, Dir: t.TempDir(), Seed: 42, Env: stages.Env{Threads: 2}}
}

func readResult(t *testing.T, dir string) stages.TrainResult {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, stages.FileResult))
	if err != nil {
		t.Fatal(err)
	}
	var r stages.TrainResult
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

func TestHoldoutDeterministic(t *testing.T) {
	in := inputs(t)
	p := stages.TrainParams{Role: stages.RoleHoldout, Point: point("spn", 3), Metric: "accuracy", Seed: 1, Run: 0}
	var got []string
	var models_ [][]byte
	var progress []int
	for range 2 {
		j := job(t, p, in)
		j.Progress = func(done, total int) { progress = append(progress, done*10+total) }
		if err := (Kind{}).Run(context.Background(), j); err != nil {
			t.Fatal(err)
		}
		r := readResult(t, j.Dir)
		if len(r.Epochs) != 4 || r.BestEpoch < 1 || r.Epochs[0].Alpha == nil || len(r.Epochs[0].Alpha[0]) != 3 || len(r.Epochs[0].Eps) != 2 {
			t.Fatalf("result lacks curves or α/ε: %+v", r)
		}
		if r.Epochs[r.BestEpoch-1].TestScore != r.TestScore {
			t.Fatal("reported test score is not that of the best epoch")
		}
		// result.json is byte-identical from run to run; the wall-clock
		// figures live in timing.json.
		raw, err := os.ReadFile(filepath.Join(j.Dir, stages.FileResult))
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(raw))
		var tm stages.TrainTiming
		if b, err := os.ReadFile(filepath.Join(j.Dir, stages.FileTiming)); err != nil {
			t.Fatal(err)
		} else if err := json.Unmarshal(b, &tm); err != nil || len(tm.EpochSeconds) != 4 || tm.GraphsPerSecond <= 0 {
			t.Fatalf("timing.json: %+v (%v), want 4 epoch times and a throughput", tm, err)
		}
		b, err := os.ReadFile(filepath.Join(j.Dir, stages.FileModel))
		if err != nil {
			t.Fatal(err)
		}
		models_ = append(models_, b)
	}
	if got[0] != got[1] || string(models_[0]) != string(models_[1]) {
		t.Fatal("two runs with the same job differ")
	}
	if len(progress) != 8 || progress[3] != 44 {
		t.Fatalf("progress calls %v, want 4 per run ending at 4/4", progress)
	}
	// The saved model loads and reproduces the best epoch's validation score.
	j := job(t, p, in)
	if err := (Kind{}).Run(context.Background(), j); err != nil {
		t.Fatal(err)
	}
	m, err := models.LoadCheckpoint(filepath.Join(j.Dir, stages.FileModel), kinds.All(), kernels.CPU{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	ds, hopsPath, err := loadInputs(j)
	if err != nil {
		t.Fatal(err)
	}
	hops, err := data.ReadHopsFile(hopsPath)
	if err != nil {
		t.Fatal(err)
	}
	loss, score, err := fit.Evaluate(m, ds, hops, ds.Splits[0].Val, "accuracy", 7)
	if err != nil {
		t.Fatal(err)
	}
	r := readResult(t, j.Dir)
	if score != r.ValScore || math.Abs(loss-r.ValLoss) > 1e-6 {
		t.Fatalf("reloaded model: val loss %v score %v, result says %v %v", loss, score, r.ValLoss, r.ValScore)
	}
}

func TestSelectRoleSkipsTest(t *testing.T) {
	in := inputs(t)
	j := job(t, stages.TrainParams{Role: stages.RoleSelect, Point: point("gin", 1), Metric: "accuracy"}, in)
	if err := (Kind{}).Run(context.Background(), j); err != nil {
		t.Fatal(err)
	}
	r := readResult(t, j.Dir)
	for _, e := range r.Epochs {
		if e.TestLoss != 0 || e.TestScore != 0 {
			t.Fatalf("select role evaluated the test set: %+v", e)
		}
	}
}

func TestFinalRoleUsesWinner(t *testing.T) {
	in := inputs(t)
	selDir := t.TempDir()
	sr := stages.SelectResult{Split: 0, Winner: 1, Point: *point("spn", 2)}
	b, _ := json.Marshal(sr)
	if err := os.WriteFile(filepath.Join(selDir, stages.FileResult), b, 0o644); err != nil {
		t.Fatal(err)
	}
	in = append(in, stages.Input{Kind: stages.KindSelect, Dir: selDir})
	raw, _ := json.Marshal(stages.TrainParams{Role: stages.RoleFinal, Metric: "accuracy"})
	// The executor runs a final stage bound (Kind.Bind): with the
	// winner's point, on the inputs the binding keeps.
	bound, keep, err := (Kind{}).Bind(raw, in)
	if err != nil {
		t.Fatal(err)
	}
	var kept []stages.Input
	for _, i := range keep {
		kept = append(kept, in[i])
	}
	j := job(t, bound.(stages.TrainParams), kept)
	if err := (Kind{}).Run(context.Background(), j); err != nil {
		t.Fatal(err)
	}
	r := readResult(t, j.Dir)
	if r.Point.Model.K != 2 || len(r.Epochs[0].Alpha[0]) != 2 {
		t.Fatalf("final run trained %+v, want the select winner (k=2)", r.Point.Model)
	}
}

// TestBind: a final stage is bound to the training of its select
// input's winner (the point and the selection's notes in the parameters,
// the select input dropped), with the bytes the planner would encode for
// those parameters; other stages and a bad select input are not.
func TestBind(t *testing.T) {
	in := inputs(t)
	selDir := t.TempDir()
	sr := stages.SelectResult{Split: 1, Winner: 1, Point: *point("spn", 2), Notes: []string{"split 1: grid point 0 diverged"}}
	b, _ := json.Marshal(sr)
	if err := os.WriteFile(filepath.Join(selDir, stages.FileResult), b, 0o644); err != nil {
		t.Fatal(err)
	}
	withSel := append(slices.Clone(in[:1]), stages.Input{Kind: stages.KindSelect, Dir: selDir}, in[1])
	final := stages.TrainParams{Role: stages.RoleFinal, Metric: "accuracy", Split: 1, Run: 2, Seed: 7, Device: "cuda"}
	raw, _ := json.Marshal(final)
	bound, keep, err := (Kind{}).Bind(raw, withSel)
	if err != nil {
		t.Fatal(err)
	}
	want := final
	want.Point, want.Notes = point("spn", 2), sr.Notes
	got, _ := json.Marshal(bound)
	wantRaw, _ := json.Marshal(want)
	if _, ok := bound.(stages.TrainParams); !ok || string(got) != string(wantRaw) || !slices.Equal(keep, []int{0, 2}) {
		t.Fatalf("Bind = %#v (%s), %v; want %s, [0 2]", bound, got, keep, wantRaw)
	}
	// Bound parameters train as a point of the spec.
	if got := (Kind{}).VersionOf(got); got != (Kind{}).Version() {
		t.Errorf("bound version %q, want %q", got, (Kind{}).Version())
	}
	hold, _ := json.Marshal(stages.TrainParams{Role: stages.RoleHoldout, Point: point("spn", 2), Metric: "accuracy"})
	if bound, keep, err := (Kind{}).Bind(hold, in); bound != nil || keep != nil || err != nil {
		t.Errorf("holdout stage bound: %v, %v, %v", bound, keep, err)
	}
	if _, _, err := (Kind{}).Bind(raw, in); err == nil || !strings.Contains(err.Error(), "need exactly one select input, have 0") {
		t.Errorf("final without select input: %v", err)
	}
	other, _ := json.Marshal(stages.TrainParams{Role: stages.RoleFinal, Metric: "accuracy", Split: 0})
	if _, _, err := (Kind{}).Bind(other, withSel); err == nil || !strings.Contains(err.Error(), "select result is for split 1, training split 0") {
		t.Errorf("final of another split: %v", err)
	}
}

// TestErrors compares the stage's error messages with testdata/errors.golden.
func TestErrors(t *testing.T) {
	in := inputs(t)
	bigK := point("spn", 5)
	unr := point("spn", 2)
	unr.Model.Unreachable = true
	tests := []struct {
		name string
		p    stages.TrainParams
		in   []stages.Input
	}{
		{"unknown role", stages.TrainParams{Role: "cv", Point: point("spn", 2), Metric: "accuracy"}, in},
		{"k above kmax", stages.TrainParams{Role: stages.RoleHoldout, Point: bigK, Metric: "accuracy"}, in},
		{"split out of range", stages.TrainParams{Role: stages.RoleHoldout, Point: point("spn", 2), Metric: "accuracy", Split: 3}, in},
		{"no point", stages.TrainParams{Role: stages.RoleHoldout, Metric: "accuracy"}, in},
		{"final unbound", stages.TrainParams{Role: stages.RoleFinal, Metric: "accuracy"}, in},
		{"missing inputs", stages.TrainParams{Role: stages.RoleHoldout, Point: point("spn", 2), Metric: "accuracy"}, in[:1]},
		{"unknown metric", stages.TrainParams{Role: stages.RoleHoldout, Point: point("spn", 2), Metric: "f1"}, in},
		{"cuda device", stages.TrainParams{Role: stages.RoleHoldout, Point: point("spn", 2), Metric: "accuracy", Device: "cuda"}, in},
		{"N_∞ not kept", stages.TrainParams{Role: stages.RoleHoldout, Point: unr, Metric: "accuracy"}, in},
	}
	var out strings.Builder
	for _, tc := range tests {
		err := (Kind{}).Run(context.Background(), job(t, tc.p, tc.in))
		if err == nil {
			t.Errorf("%s: no error", tc.name)
			continue
		}
		out.WriteString(tc.name + ": " + err.Error() + "\n")
	}
	golden.CheckString(t, "testdata/errors.golden", out.String())
}

// TestUnreachable trains an SPN that reads N_∞ (model.unreachable) on hop
// sets that keep it: its α has k+1 entries per layer, α_∞ last.
func TestUnreachable(t *testing.T) {
	in := inputs(t)
	ds, err := data.ReadDatasetFile(filepath.Join(in[0].Dir, stages.FileDataset))
	if err != nil {
		t.Fatal(err)
	}
	hops, err := sp.Compute(context.Background(), ds.Graphs, 3, true, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := data.WriteHopsFile(filepath.Join(in[1].Dir, stages.FileHops), hops); err != nil {
		t.Fatal(err)
	}
	p := point("spn", 2)
	p.Model.Unreachable = true
	j := job(t, stages.TrainParams{Role: stages.RoleHoldout, Point: p, Metric: "accuracy"}, in)
	if err := (Kind{}).Run(context.Background(), j); err != nil {
		t.Fatal(err)
	}
	r := readResult(t, j.Dir)
	if !r.Point.Model.Unreachable || len(r.Epochs) == 0 {
		t.Fatalf("result: point %+v, %d epochs", r.Point.Model, len(r.Epochs))
	}
	for l, a := range r.Epochs[0].Alpha {
		if len(a) != 3 {
			t.Errorf("layer %d: α %v, want k+1 = 3 weights", l+1, a)
		}
	}
}

// TestKindUsesItsRegistry checks that the kind builds models from the
// registry it is given.
func TestKindUsesItsRegistry(t *testing.T) {
	in := inputs(t)
	k := Kind{Models: models.NewRegistry(kinds.All()["gin"])}
	err := k.Run(context.Background(), job(t, stages.TrainParams{Role: stages.RoleHoldout, Point: point("spn", 2), Metric: "accuracy"}, in))
	if err == nil || !strings.Contains(err.Error(), `model kind "spn" is not built by this spn (have [gin])`) {
		t.Fatalf("err = %v, want the registry's unknown-kind error", err)
	}
	if err := k.Run(context.Background(), job(t, stages.TrainParams{Role: stages.RoleHoldout, Point: point("gin", 1), Metric: "accuracy"}, in)); err != nil {
		t.Fatal(err)
	}
}

// TestResultNamesData: a train result carries its generate input's record
// of the data files (SHA-256, verification) and the spn version; without
// such a record (a generated dataset of an older cache) it has none.
func TestResultNamesData(t *testing.T) {
	in := inputs(t)
	pt := point("spn", 2)
	pt.Training.Epochs = 1
	p := stages.TrainParams{Role: stages.RoleHoldout, Point: pt, Metric: "accuracy", Seed: 1}
	j := job(t, p, in)
	if err := (Kind{}).Run(context.Background(), j); err != nil {
		t.Fatal(err)
	}
	if r := readResult(t, j.Dir); r.Data != nil {
		t.Fatalf("data without a record: %+v", r.Data)
	}
	src := stages.DataSources{SPNVersion: "v1.2.3", AcceptMismatch: true, Files: []fetch.Source{
		{URL: "https://example.org/X.zip", Path: "tu/X.zip", SHA256: strings.Repeat("ab", 32), Size: 10, Figures: "accepted mismatch: ..."},
	}}
	b, _ := json.Marshal(src)
	if err := os.WriteFile(filepath.Join(in[0].Dir, stages.FileSources), b, 0o644); err != nil {
		t.Fatal(err)
	}
	j = job(t, p, in)
	if err := (Kind{}).Run(context.Background(), j); err != nil {
		t.Fatal(err)
	}
	r := readResult(t, j.Dir)
	if r.Data == nil || r.Data.SPNVersion != "v1.2.3" || !r.Data.AcceptMismatch || len(r.Data.Files) != 1 || r.Data.Files[0] != src.Files[0] {
		t.Fatalf("result data %+v, want %+v", r.Data, src)
	}
}
