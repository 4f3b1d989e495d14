package protocol

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/spn-project/spn/schema"
	"github.com/spn-project/spn/stages"
	"github.com/spn-project/spn/stages/selection"
)

func proto(kind string, splits, runs int) schema.Protocol {
	return schema.Protocol{Kind: kind, Splits: splits, Runs: runs, SelectOn: "val_metric", Metric: "mae"}
}

// TestLayout pins each protocol's stage layout: roles, points, splits,
// runs and selects, in order.
func TestLayout(t *testing.T) {
	str := func(tr Train) string {
		return fmt.Sprintf("%s p%d s%d r%d sel%d", tr.Role, tr.Point, tr.Split, tr.Run, tr.Select)
	}
	tests := []struct {
		kind          string
		splits, runs  int
		points        int
		wantEvaluated []string
		wantSelects   []string
	}{
		{KindHoldout, 2, 2, 2, []string{
			"holdout p0 s0 r0 sel-1", "holdout p0 s0 r1 sel-1", "holdout p0 s1 r0 sel-1", "holdout p0 s1 r1 sel-1",
			"holdout p1 s0 r0 sel-1", "holdout p1 s0 r1 sel-1", "holdout p1 s1 r0 sel-1", "holdout p1 s1 r1 sel-1",
		}, nil},
		{KindErrica, 2, 2, 2, []string{
			"final p-1 s0 r0 sel0", "final p-1 s0 r1 sel0", "final p-1 s1 r0 sel1", "final p-1 s1 r1 sel1",
		}, []string{
			"split 0: select p0 s0 r0 sel-1, select p1 s0 r0 sel-1",
			"split 1: select p0 s1 r0 sel-1, select p1 s1 r0 sel-1",
		}},
		{KindFixed, 1, 3, 2, []string{
			"holdout p0 s0 r0 sel-1", "holdout p0 s0 r1 sel-1", "holdout p0 s0 r2 sel-1",
			"holdout p1 s0 r0 sel-1", "holdout p1 s0 r1 sel-1", "holdout p1 s0 r2 sel-1",
		}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.kind, func(t *testing.T) {
			p, err := Get(tc.kind)
			if err != nil {
				t.Fatal(err)
			}
			l, err := p.Layout(proto(tc.kind, tc.splits, tc.runs), tc.points)
			if err != nil {
				t.Fatal(err)
			}
			var got, sels []string
			for _, tr := range l.Evaluated {
				got = append(got, str(tr))
			}
			for _, s := range l.Selects {
				var parts []string
				for _, tr := range s.Trains {
					parts = append(parts, str(tr))
				}
				sels = append(sels, fmt.Sprintf("split %d: %s", s.Split, strings.Join(parts, ", ")))
			}
			if strings.Join(got, "\n") != strings.Join(tc.wantEvaluated, "\n") {
				t.Errorf("evaluated:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.wantEvaluated, "\n"))
			}
			if strings.Join(sels, "\n") != strings.Join(tc.wantSelects, "\n") {
				t.Errorf("selects:\n%s\nwant\n%s", strings.Join(sels, "\n"), strings.Join(tc.wantSelects, "\n"))
			}
			// Model agrees with the layout: the stage it names has the
			// asked split and run (and point, where the protocol has one).
			for i, tr := range l.Evaluated {
				pt := tr.Point
				idx, err := p.Model(proto(tc.kind, tc.splits, tc.runs), tc.points, pt, tr.Split, tr.Run, func() (int, error) { return 0, errors.New("no winner") })
				if err != nil {
					t.Fatalf("model of %s: %v", str(tr), err)
				}
				if idx != i {
					t.Errorf("model of %s at %d, want %d", str(tr), idx, i)
				}
			}
		})
	}
}

func TestModelErrors(t *testing.T) {
	noWinner := func() (int, error) { return 0, errors.New("no finished evaluation") }
	tests := []struct {
		kind                string
		p                   schema.Protocol
		points, point, s, r int
		want                string
	}{
		{KindHoldout, proto(KindHoldout, 2, 2), 3, -1, 0, 0, "no finished evaluation"},
		{KindHoldout, proto(KindHoldout, 2, 2), 3, 3, 0, 0, "grid points 0..2; asked for 3"},
		{KindHoldout, proto(KindHoldout, 2, 2), 1, 0, 2, 0, "splits 0..1 and runs 0..1; asked for split 2 run 0"},
		{KindErrica, proto(KindErrica, 2, 2), 3, 0, 0, 0, "--point does not apply"},
		{KindErrica, proto(KindErrica, 2, 2), 3, -1, 0, 5, "asked for split 0 run 5"},
		{KindFixed, proto(KindFixed, 2, 2), 1, 0, 0, 0, "splits must be 1, got 2"},
	}
	for _, tc := range tests {
		p, _ := Get(tc.kind)
		_, err := p.Model(tc.p, tc.points, tc.point, tc.s, tc.r, noWinner)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.kind, err, tc.want)
		}
	}
	if _, err := Get("kfold"); err == nil || err.Error() != `unknown protocol kind "kfold" (want holdout, errica, fixed)` {
		t.Errorf("Get: %v", err)
	}
	if _, err := (Fixed{}).Layout(proto(KindFixed, 10, 5), 1); err == nil {
		t.Error("fixed layout with 10 splits: no error")
	}
}

// TestFixedEvaluate: the fixed protocol reports one split (the mean of the
// winner's runs) and every run's test score; the winner has the lowest
// mean validation MAE.
func TestFixedEvaluate(t *testing.T) {
	vals := [][]float64{{0.5, 0.7}, {0.4, 0.5}} // point 1 wins (0.45 < 0.6)
	tests := [][]float64{{1, 2}, {3, 5}}
	var runs []selection.TrainRun
	for pt := range vals {
		for r := range vals[pt] {
			runs = append(runs, selection.TrainRun{
				Source: fmt.Sprintf("p%d/r%d", pt, r),
				Result: stages.TrainResult{
					Point:  schema.Point{Model: schema.Model{Kind: "spn", K: pt + 1}},
					Metric: "mae", ValScore: vals[pt][r], ValLoss: vals[pt][r], TestScore: tests[pt][r],
				},
			})
		}
	}
	res, err := Fixed{}.Evaluate(proto(KindFixed, 1, 2), 2, runs)
	if err != nil {
		t.Fatal(err)
	}
	if res.Winner != 1 || res.Point == nil || res.Point.Model.K != 2 {
		t.Fatalf("winner %d point %+v, want 1 (k=2)", res.Winner, res.Point)
	}
	want := []float64{4}
	if len(res.SplitScores) != 1 || math.Abs(res.SplitScores[0]-want[0]) > 1e-12 {
		t.Errorf("split scores %v, want %v", res.SplitScores, want)
	}
	if len(res.RunScores) != 2 || res.RunScores[0] != 3 || res.RunScores[1] != 5 {
		t.Errorf("run scores %v, want [3 5]", res.RunScores)
	}
	if math.Abs(res.ValScores[0]-0.45) > 1e-12 {
		t.Errorf("val scores %v, want [0.45]", res.ValScores)
	}
}
