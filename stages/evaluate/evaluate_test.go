package evaluate

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spn-project/spn/schema"
	"github.com/spn-project/spn/stages"
	"github.com/spn-project/spn/stages/selection"
)

// score is one run's validation and test score.
type score struct{ val, test float64 }

// holdoutRuns builds Points×Splits×Runs runs from s[point][split][run].
func holdoutRuns(metric string, s [][][]score) []selection.TrainRun {
	var out []selection.TrainRun
	for p, splits := range s {
		for sp, rs := range splits {
			for r, sc := range rs {
				out = append(out, selection.TrainRun{
					Source: fmt.Sprintf("p%d/s%d/r%d", p, sp, r),
					Result: stages.TrainResult{
						Point:    schema.Point{Model: schema.Model{Kind: "spn", K: p + 1}},
						Metric:   metric,
						ValScore: sc.val, ValLoss: 1 - sc.val,
						TestScore: sc.test, TestLoss: 1 - sc.test,
					},
				})
			}
		}
	}
	return out
}

func approx(t *testing.T, what string, got, want []float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s = %v, want %v", what, got, want)
	}
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1e-12 {
			t.Fatalf("%s = %v, want %v", what, got, want)
		}
	}
}

func TestHoldout(t *testing.T) {
	// Point 0: mean val 0.6; point 1: mean val 0.7 (wins); point 2: 0.65.
	s := [][][]score{
		{{{0.6, 0.1}, {0.6, 0.1}}, {{0.6, 0.1}, {0.6, 0.1}}},
		{{{0.8, 0.70}, {0.6, 0.80}}, {{0.7, 0.60}, {0.7, 0.90}}},
		{{{0.9, 0.2}, {0.9, 0.2}}, {{0.4, 0.2}, {0.4, 0.2}}},
	}
	p := stages.EvaluateParams{Points: 3, Protocol: schema.Protocol{Kind: ProtocolHoldout, Splits: 2, Runs: 2, SelectOn: "val_metric", Metric: "accuracy"}}
	got, err := Evaluate(p, holdoutRuns("accuracy", s))
	if err != nil {
		t.Fatal(err)
	}
	if got.Winner != 1 || got.Point == nil || got.Point.Model.K != 2 || got.Metric != "accuracy" {
		t.Fatalf("winner %d point %+v metric %q, want 1 (k=2) accuracy", got.Winner, got.Point, got.Metric)
	}
	approx(t, "split scores", got.SplitScores, []float64{0.75, 0.75})
	approx(t, "run scores", got.RunScores, []float64{0.7, 0.8, 0.6, 0.9})
	approx(t, "val scores", got.ValScores, []float64{0.7, 0.7})
}

func TestHoldoutSelection(t *testing.T) {
	tie := [][][]score{
		{{{0.5, 0.1}}, {{0.7, 0.1}}}, // mean val 0.6
		{{{0.7, 0.2}}, {{0.5, 0.2}}}, // mean val 0.6: tie, point 0 stays
		{{{0.2, 0.3}}, {{0.2, 0.3}}},
	}
	tests := []struct {
		name     string
		metric   string
		selectOn string
		s        [][][]score
		winner   int
		test     []float64
	}{
		{"tie: earliest point", "accuracy", "val_metric", tie, 0, []float64{0.1, 0.1}},
		{"mae: lower val wins", "mae", "val_metric", tie, 2, []float64{0.3, 0.3}},
		{"val_loss: lower loss wins", "accuracy", "val_loss", tie, 0, []float64{0.1, 0.1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := stages.EvaluateParams{Points: 3, Protocol: schema.Protocol{Kind: ProtocolHoldout, Splits: 2, Runs: 1, SelectOn: tc.selectOn, Metric: tc.metric}}
			got, err := Evaluate(p, holdoutRuns(tc.metric, tc.s))
			if err != nil {
				t.Fatal(err)
			}
			if got.Winner != tc.winner {
				t.Fatalf("winner %d, want %d", got.Winner, tc.winner)
			}
			approx(t, "split scores", got.SplitScores, tc.test)
		})
	}
}

func TestErrica(t *testing.T) {
	// Fold f ran with its own winner (k = f+1), 2 final runs each.
	s := [][][]score{{{{0.5, 0.70}, {0.5, 0.80}}, {{0.6, 0.60}, {0.4, 0.65}}, {{0.9, 0.90}, {0.9, 0.90}}}}
	runs := holdoutRuns("accuracy", s)
	for i := range runs {
		runs[i].Result.Point.Model.K = i/2 + 1
	}
	p := stages.EvaluateParams{Points: 4, Protocol: schema.Protocol{Kind: ProtocolErrica, Splits: 3, Runs: 2, SelectOn: "val_metric", Metric: "accuracy"}}
	got, err := Evaluate(p, runs)
	if err != nil {
		t.Fatal(err)
	}
	if got.Winner != -1 || got.Point != nil {
		t.Errorf("winner %d point %v, want -1 and nil", got.Winner, got.Point)
	}
	approx(t, "fold scores", got.SplitScores, []float64{0.75, 0.625, 0.9})
	approx(t, "run scores", got.RunScores, []float64{0.7, 0.8, 0.6, 0.65, 0.9, 0.9})
	approx(t, "val scores", got.ValScores, []float64{0.5, 0.5, 0.9})
}

func TestEvaluateErrors(t *testing.T) {
	holdout := schema.Protocol{Kind: ProtocolHoldout, Splits: 2, Runs: 1, SelectOn: "val_metric", Metric: "accuracy"}
	errica := holdout
	errica.Kind = ProtocolErrica
	base := [][][]score{{{{0.5, 0.5}}, {{0.5, 0.5}}}, {{{0.6, 0.6}}, {{0.6, 0.6}}}}
	good := func() []selection.TrainRun { return holdoutRuns("accuracy", base) }
	nanTest := good()
	nanTest[3].Result.TestScore = math.NaN()
	nanVal := good()
	nanVal[0].Result.ValScore = math.Inf(1)
	mixed := good()
	mixed[2].Result.Metric = "mae"
	tests := []struct {
		name string
		p    stages.EvaluateParams
		runs []selection.TrainRun
		want string
	}{
		{"holdout count", stages.EvaluateParams{Points: 3, Protocol: holdout}, good(), "got 4 train results, want points×splits×runs = 3×2×1 = 6"},
		{"errica count", stages.EvaluateParams{Points: 2, Protocol: errica}, good(), "got 4 train results, want splits×runs = 2×1 = 2"},
		{"no points", stages.EvaluateParams{Points: 0, Protocol: holdout}, good(), "points (0) must be at least 1"},
		{"unknown protocol", stages.EvaluateParams{Points: 2, Protocol: schema.Protocol{Kind: "kfold", Splits: 2, Runs: 1, Metric: "accuracy"}}, good(), `unknown protocol kind "kfold"`},
		{"NaN test score", stages.EvaluateParams{Points: 2, Protocol: holdout}, nanTest, "split 1: p1/s1/r0: test_score is missing or not finite (NaN)"},
		{"infinite val score", stages.EvaluateParams{Points: 2, Protocol: holdout}, nanVal, "point 0: p0/s0/r0: val_score is missing or not finite (+Inf)"},
		{"metric mismatch", stages.EvaluateParams{Points: 2, Protocol: holdout}, mixed, `p1/s0/r0: metric "mae", want "accuracy"`},
		{"wrong protocol metric", stages.EvaluateParams{Points: 2, Protocol: schema.Protocol{Kind: ProtocolHoldout, Splits: 2, Runs: 1, SelectOn: "val_metric", Metric: "mae"}}, good(), `p0/s0/r0: metric "accuracy", want "mae"`},
		{"mixed points in a group", stages.EvaluateParams{Points: 1, Protocol: schema.Protocol{Kind: ProtocolHoldout, Splits: 4, Runs: 1, SelectOn: "val_metric", Metric: "accuracy"}}, good(), "inputs are not grouped by point"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Evaluate(tc.p, tc.runs)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func writeJSON(t *testing.T, dir string, v any) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	b, ok := v.([]byte)
	if !ok {
		var err error
		if b, err = json.Marshal(v); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, stages.FileResult), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestRunAndReadResult(t *testing.T) {
	root := t.TempDir()
	p := stages.EvaluateParams{Points: 2, Protocol: schema.Protocol{Kind: ProtocolHoldout, Splits: 1, Runs: 2, SelectOn: "val_loss", Metric: "mae"}}
	raw, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	j := &stages.Job{Name: "eval-test", Params: raw, Dir: filepath.Join(root, "out")}
	if err := os.Mkdir(j.Dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for i, r := range holdoutRuns("mae", [][][]score{{{{0.9, 1.5}, {0.9, 2.5}}}, {{{0.8, 3}, {0.8, 4}}}}) {
		dir := filepath.Join(root, fmt.Sprint("train", i))
		writeJSON(t, dir, r.Result)
		j.Inputs = append(j.Inputs, stages.Input{Kind: stages.KindTrain, Key: fmt.Sprint(i), Dir: dir})
	}
	if err := (Kind{}).Run(context.Background(), j); err != nil {
		t.Fatal(err)
	}
	got, err := selection.ReadEvalResult(j.Dir)
	if err != nil {
		t.Fatal(err)
	}
	// val_loss = 1 - val: point 0 has loss 0.1 < 0.2, so it wins.
	if got.Winner != 0 {
		t.Errorf("winner %d, want 0", got.Winner)
	}
	approx(t, "split scores", got.SplitScores, []float64{2})
}

func TestReadResultErrors(t *testing.T) {
	tests := []struct{ name, content, want string }{
		{"corrupted", "{\"metric\": \"accuracy\",\n\"split_scores\": [0.5,, 0.6]}", "result.json:2:22: invalid character ','"},
		{"empty scores", `{"metric": "accuracy", "split_scores": []}`, "split_scores is missing or empty"},
		{"no scores", `{"metric": "accuracy"}`, "split_scores is missing or empty"},
		{"null score", `{"metric": "accuracy", "split_scores": [0.5, null]}`, "split_scores[1] is missing or not finite"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeJSON(t, dir, []byte(tc.content))
			_, err := selection.ReadEvalResult(dir)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
}
