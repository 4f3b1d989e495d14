package selectstage

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spn-project/spn/models/metric"
	"github.com/spn-project/spn/schema"
	"github.com/spn-project/spn/stages"
	"github.com/spn-project/spn/stages/selection"
)

// point returns a distinguishable configuration.
func point(k int) schema.Point {
	return schema.Point{
		Values: []schema.GridValue{{Path: "model.k", Value: float64(k)}},
		Model:  schema.Model{Kind: "spn", K: k, Layers: 2, Hidden: 8, Pool: "sum"},
	}
}

// runs builds point-major runs: vals[i][r] is the score of run r of point i.
func runs(metric string, vals [][]float64, loss bool) []selection.TrainRun {
	var out []selection.TrainRun
	for i, vs := range vals {
		for r, v := range vs {
			res := stages.TrainResult{Point: point(i + 1), Metric: metric, ValScore: v, ValLoss: 1}
			if loss {
				res.ValScore, res.ValLoss = 0.5, v
			}
			out = append(out, selection.TrainRun{Source: "p" + string(rune('0'+i)) + "r" + string(rune('0'+r)), Result: res})
		}
	}
	return out
}

func TestSelect(t *testing.T) {
	tests := []struct {
		name     string
		metric   string
		selectOn string
		vals     [][]float64
		loss     bool
		winner   int
		scores   []float64
	}{
		{"accuracy higher wins", metric.Accuracy, selection.SelectOnValMetric, [][]float64{{0.5, 0.7}, {0.8, 0.8}, {0.9, 0.5}}, false, 1, []float64{0.6, 0.8, 0.7}},
		{"rocauc higher wins", metric.ROCAUC, selection.SelectOnValMetric, [][]float64{{0.5}, {0.75}}, false, 1, []float64{0.5, 0.75}},
		{"mae lower wins", metric.MAE, selection.SelectOnValMetric, [][]float64{{3, 1}, {1, 1}, {2, 2}}, false, 1, []float64{2, 1, 2}},
		{"val_loss lower wins even for accuracy", metric.Accuracy, selection.SelectOnValLoss, [][]float64{{0.3, 0.5}, {0.2, 0.2}}, true, 1, []float64{0.4, 0.2}},
		{"tie: earliest point wins (higher)", metric.Accuracy, selection.SelectOnValMetric, [][]float64{{0.5, 0.5}, {0.75, 0.25}, {0.25, 0.75}, {0.5, 0.5}}, false, 0, []float64{0.5, 0.5, 0.5, 0.5}},
		{"tie: earliest point wins (lower)", metric.MAE, selection.SelectOnValMetric, [][]float64{{2}, {1}, {1}}, false, 1, []float64{2, 1, 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rs := runs(tc.metric, tc.vals, tc.loss)
			p := stages.SelectParams{Split: 3, Points: len(tc.vals), Runs: len(tc.vals[0]), SelectOn: tc.selectOn}
			got, err := Select(p, rs)
			if err != nil {
				t.Fatal(err)
			}
			if got.Winner != tc.winner || got.Split != 3 {
				t.Errorf("winner %d split %d, want %d split 3", got.Winner, got.Split, tc.winner)
			}
			if got.Point.Model.K != tc.winner+1 {
				t.Errorf("point k=%d, want the winner's k=%d", got.Point.Model.K, tc.winner+1)
			}
			if len(got.Scores) != len(tc.scores) {
				t.Fatalf("scores %v, want %v", got.Scores, tc.scores)
			}
			for i := range tc.scores {
				if math.Abs(got.Scores[i]-tc.scores[i]) > 1e-12 {
					t.Errorf("scores %v, want %v", got.Scores, tc.scores)
				}
			}
		})
	}
}

func TestSelectErrors(t *testing.T) {
	good := runs(metric.Accuracy, [][]float64{{0.5, 0.6}, {0.7, 0.8}}, false)
	nan := runs(metric.Accuracy, [][]float64{{0.5, 0.6}, {0.7, 0.8}}, false)
	nan[2].Result.ValScore = math.NaN()
	mixed := runs(metric.Accuracy, [][]float64{{0.5, 0.6}, {0.7, 0.8}}, false)
	mixed[3].Result.Metric = metric.MAE
	ungrouped := runs(metric.Accuracy, [][]float64{{0.5, 0.6}, {0.7, 0.8}}, false)
	ungrouped[1], ungrouped[2] = ungrouped[2], ungrouped[1]
	p := stages.SelectParams{Points: 2, Runs: 2, SelectOn: selection.SelectOnValMetric}
	tests := []struct {
		name string
		p    stages.SelectParams
		runs []selection.TrainRun
		want string
	}{
		{"too few inputs", p, good[:3], "got 3 train results, want points×runs = 2×2 = 4"},
		{"too many inputs", stages.SelectParams{Points: 1, Runs: 2, SelectOn: selection.SelectOnValMetric}, good, "got 4 train results, want points×runs = 1×2 = 2"},
		{"zero runs", stages.SelectParams{Points: 2, Runs: 0, SelectOn: selection.SelectOnValMetric}, good, "must be at least 1"},
		{"NaN score", p, nan, "point 1: p1r0: val_score is missing or not finite (NaN)"},
		{"mixed metrics", p, mixed, `p1r1: metric "mae", want "accuracy"`},
		{"unknown select_on", stages.SelectParams{Points: 2, Runs: 2, SelectOn: "val_acc"}, good, `unknown select_on "val_acc"`},
		{"not grouped by point", p, ungrouped, "inputs are not grouped by point"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Select(tc.p, tc.runs)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
	unknown := runs("f1", [][]float64{{0.5}}, false)
	if _, err := Select(stages.SelectParams{Points: 1, Runs: 1, SelectOn: selection.SelectOnValMetric}, unknown); err == nil || !strings.Contains(err.Error(), `unknown metric "f1"`) {
		t.Errorf("unknown metric: error %v", err)
	}
}

// writeResult writes content as dir/result.json.
func writeResult(t *testing.T, dir, content string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, stages.FileResult), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func job(t *testing.T, p stages.SelectParams, rs []stages.TrainResult) *stages.Job {
	t.Helper()
	root := t.TempDir()
	raw, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	j := &stages.Job{Name: "select-test", Params: raw, Dir: filepath.Join(root, "out")}
	if err := os.Mkdir(j.Dir, 0o755); err != nil {
		t.Fatal(err)
	}
	// A precompute input is declared too; select must only read train inputs.
	j.Inputs = append(j.Inputs, stages.Input{Kind: stages.KindPrecompute, Key: "pre", Dir: filepath.Join(root, "pre")})
	for i, r := range rs {
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		dir := filepath.Join(root, "train", string(rune('a'+i)))
		writeResult(t, dir, string(b))
		j.Inputs = append(j.Inputs, stages.Input{Kind: stages.KindTrain, Key: "k" + string(rune('a'+i)), Dir: dir})
	}
	return j
}

func TestRun(t *testing.T) {
	var rs []stages.TrainResult
	for _, r := range runs(metric.MAE, [][]float64{{0.4, 0.6}, {0.3, 0.5}, {0.2, 0.9}}, false) {
		rs = append(rs, r.Result)
	}
	j := job(t, stages.SelectParams{Split: 1, Points: 3, Runs: 2, SelectOn: selection.SelectOnValMetric}, rs)
	if err := (Kind{}).Run(context.Background(), j); err != nil {
		t.Fatal(err)
	}
	var got stages.SelectResult
	if err := selection.DecodeFile(filepath.Join(j.Dir, stages.FileResult), &got); err != nil {
		t.Fatal(err)
	}
	if got.Winner != 1 || got.Split != 1 || got.Point.Model.K != 2 || got.Point.Values[0].Value != 2.0 {
		t.Errorf("got %+v, want winner 1 (k=2) of split 1", got)
	}
}

func TestRunReadErrors(t *testing.T) {
	p := stages.SelectParams{Points: 1, Runs: 1, SelectOn: selection.SelectOnValMetric}
	tests := []struct {
		name, content, want string
	}{
		{"corrupted", "{\n  \"metric\": \"accuracy\",\n  \"val_score\": 0.5,\n  \"test_score\" 0.4\n}", "result.json:4:16: invalid character"},
		{"truncated", `{"metric": "accuracy", "val_sc`, "unexpected end of JSON input"},
		{"wrong type", "{\"metric\": \"accuracy\",\n\"val_score\": \"high\"}", "result.json:2:19: json: cannot unmarshal string"},
		{"missing score", `{"metric": "accuracy", "val_loss": 0.1}`, "val_score is missing or not finite"},
		{"null score", `{"metric": "accuracy", "val_score": null}`, "val_score is missing or not finite"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			j := job(t, p, nil)
			dir := filepath.Join(t.TempDir(), "train")
			writeResult(t, dir, tc.content)
			j.Inputs = append(j.Inputs, stages.Input{Kind: stages.KindTrain, Key: "x", Dir: dir})
			err := (Kind{}).Run(context.Background(), j)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
	j := job(t, p, nil)
	j.Inputs = append(j.Inputs, stages.Input{Kind: stages.KindTrain, Key: "gone", Dir: filepath.Join(t.TempDir(), "gone")})
	if err := (Kind{}).Run(context.Background(), j); err == nil || !strings.Contains(err.Error(), "input 0 (gone): reading result") {
		t.Errorf("missing file: error %v", err)
	}
	j.Params = []byte(`{"split": 0, "points": 1, "runs": 1, "select_on": "val_metric", "extra": 1}`)
	if err := (Kind{}).Run(context.Background(), j); err == nil || !strings.Contains(err.Error(), "unknown field") {
		t.Errorf("unknown parameter: error %v", err)
	}
}
