package metric

import (
	"math"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"

	"github.com/spn-project/spn/data"
)

func TestAccuracyMAE(t *testing.T) {
	acc, _ := AccuracyOf([]float32{1, 0, 0, 1, 0.5, 0.5}, 2, []int32{0, 0, 0})
	if math.Abs(acc-2.0/3) > 1e-12 {
		t.Errorf("accuracy = %v, want 2/3 (ties pick class 0)", acc)
	}
	mae, _ := MAEOf([]float32{1, 2}, []float64{0, 4})
	if mae != 1.5 {
		t.Errorf("mae = %v, want 1.5", mae)
	}
}

// TestMAEMissing: MAE is the mean over the labelled (non-NaN) targets,
// an error when none is labelled, as Score computes it.
func TestMAEMissing(t *testing.T) {
	nan := math.NaN()
	for _, c := range []struct {
		name    string
		pred    []float32
		target  []float64
		want    float64
		wantErr string
	}{
		{"all labelled", []float32{1, 2, -1}, []float64{0, 4, 0}, 4.0 / 3, ""},
		{"some missing", []float32{1, 2, 3, -1}, []float64{0, nan, 0, nan}, 2, ""},
		{"one labelled", []float32{5, 2}, []float64{nan, 4.5}, 2.5, ""},
		{"none labelled", []float32{1, 2}, []float64{nan, nan}, 0, "mae: no labelled target"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := Score(MAE, data.TaskRegression, Outputs{Out: c.pred, C: 1, Target: c.target})
			if c.wantErr != "" {
				if err == nil || err.Error() != c.wantErr {
					t.Fatalf("mae = %v, %v; want error %q", got, err, c.wantErr)
				}
				return
			}
			if err != nil || !(math.Abs(got-c.want) <= 1e-12) { // NaN fails
				t.Fatalf("mae = %v, %v; want %v", got, err, c.want)
			}
		})
	}
}

func TestAUCHandMade(t *testing.T) {
	aucs := []struct {
		s    []float64
		y    []int32
		want float64
	}{
		// scikit-learn's documented example: roc_auc_score([0,0,1,1], [0.1,0.4,0.35,0.8]) = 0.75.
		{[]float64{0.1, 0.4, 0.35, 0.8}, []int32{0, 0, 1, 1}, 0.75},
		{[]float64{1, 1, 1, 1}, []int32{0, 1, 0, 1}, 0.5},
		{[]float64{3, 2, 1}, []int32{1, 0, 0}, 1},
		// A positive tied with a negative counts one half: positives
		// {0.9, 0.5}, negatives {0.5, 0.2, 0.1}: pairs won 3 + (0.5 + 1 + 1)
		// = 5.5 of 6.
		{[]float64{0.9, 0.5, 0.5, 0.2, 0.1}, []int32{1, 1, 0, 0, 0}, 5.5 / 6},
	}
	for _, a := range aucs {
		got, err := AUC(a.s, a.y)
		if err != nil || math.Abs(got-a.want) > 1e-12 {
			t.Errorf("AUC(%v,%v) = %v, %v; want %v", a.s, a.y, got, err, a.want)
		}
	}
	if _, err := AUC([]float64{1, 2}, []int32{1, 1}); err == nil {
		t.Error("AUC with one class should fail")
	}
	if _, err := AUC([]float64{math.NaN(), 2}, []int32{1, 0}); err == nil {
		t.Error("AUC with a NaN score should fail")
	}
}

// trapezoidAUC is scikit-learn's roc_auc_score computed the way
// sklearn.metrics.roc_curve + auc do it: thresholds at the distinct scores
// in decreasing order, one ROC point (FPR, TPR) per threshold (tied scores
// move both rates at once), then the trapezoidal area.
func trapezoidAUC(s []float64, y []int32) float64 {
	type pt struct {
		s float64
		y int32
	}
	ps := make([]pt, len(s))
	var P, N float64
	for i := range s {
		ps[i] = pt{s[i], y[i]}
		if y[i] == 1 {
			P++
		} else {
			N++
		}
	}
	sort.Slice(ps, func(a, b int) bool { return ps[a].s > ps[b].s })
	var tp, fp, area, prevTPR, prevFPR float64
	for i := 0; i < len(ps); {
		j := i
		for j < len(ps) && ps[j].s == ps[i].s {
			if ps[j].y == 1 {
				tp++
			} else {
				fp++
			}
			j++
		}
		tpr, fpr := tp/P, fp/N
		area += (fpr - prevFPR) * (tpr + prevTPR) / 2
		prevTPR, prevFPR = tpr, fpr
		i = j
	}
	return area
}

func TestAUCMatchesTrapezoid(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 200; trial++ {
		n := 2 + rng.IntN(60)
		s := make([]float64, n)
		y := make([]int32, n)
		levels := 1 + rng.IntN(8) // few levels: many ties
		for i := range s {
			s[i] = float64(rng.IntN(levels)) / 4
			y[i] = int32(rng.IntN(2))
		}
		y[0], y[1] = 0, 1
		got, err := AUC(s, y)
		if err != nil {
			t.Fatal(err)
		}
		if want := trapezoidAUC(s, y); math.Abs(got-want) > 1e-12 {
			t.Fatalf("trial %d: AUC = %v, trapezoid = %v (scores %v labels %v)", trial, got, want, s, y)
		}
	}
}

// TestMeanROCAUCOGB pins OGB's Evaluator semantics on a hand-made
// 4-task set of 5 graphs: task 0 fully labelled, task 1 with missing
// labels, task 2 without a negative (skipped), task 3 unlabelled (skipped).
func TestMeanROCAUCOGB(t *testing.T) {
	nan := math.NaN()
	target := []float64{
		1, nan, 1, nan,
		0, 1, 1, nan,
		1, 0, nan, nan,
		0, nan, 1, nan,
		0, 0, 1, nan,
	}
	scores := []float32{
		0.9, 5, 0, 0,
		0.1, 0.7, 0, 0,
		0.3, 0.2, 0, 0,
		0.4, -9, 0, 0,
		0.3, 0.9, 0, 0,
	}
	// Task 0: positives {0.9, 0.3}, negatives {0.1, 0.4, 0.3}: pairs won
	// 3 + (1 + 0 + 0.5) = 4.5 of 6 = 0.75. Task 1 labelled graphs 1, 2, 4:
	// positive 0.7, negatives {0.2, 0.9}: 1 of 2 = 0.5. Mean 0.625.
	got, err := MeanROCAUC(scores, target, 4)
	if err != nil || math.Abs(got-0.625) > 1e-12 {
		t.Fatalf("MeanROCAUC = %v, %v; want 0.625", got, err)
	}
	if s, err := Score(ROCAUC, data.TaskBinary, Outputs{Out: scores, C: 4, Target: target}); err != nil || s != got {
		t.Errorf("Score(rocauc, binary) = %v, %v; want %v", s, err, got)
	}
	// Only skipped tasks left: an error, as OGB raises.
	if _, err := MeanROCAUC([]float32{1, 2}, []float64{1, 1}, 1); err == nil || !strings.Contains(err.Error(), "no task") {
		t.Errorf("all tasks skipped: got %v", err)
	}
	if _, err := MeanROCAUC([]float32{1, 2}, []float64{1, 0.5}, 1); err == nil {
		t.Error("label 0.5 accepted")
	}
}

func TestRMSE(t *testing.T) {
	nan := math.NaN()
	// Task 0: errors 1, 3 -> sqrt(5); task 1: errors 2 (one labelled) -> 2.
	got, err := RMSEOf([]float32{1, 0, 3, 2}, []float64{0, 2, 0, nan}, 2)
	if want := (math.Sqrt(5) + 2) / 2; err != nil || math.Abs(got-want) > 1e-12 {
		t.Errorf("RMSE = %v, %v; want %v", got, err, want)
	}
	if s, err := Score(RMSE, data.TaskRegression, Outputs{Out: []float32{1, 2}, C: 1, Target: []float64{0, 4}}); err != nil || math.Abs(s-math.Sqrt(2.5)) > 1e-12 {
		t.Errorf("Score(rmse) = %v, %v", s, err)
	}
}

func TestDirectionAndCheck(t *testing.T) {
	for name, higher := range map[string]bool{Accuracy: true, ROCAUC: true, MAE: false, RMSE: false} {
		if HigherIsBetter(name) != higher {
			t.Errorf("HigherIsBetter(%s) = %v", name, !higher)
		}
	}
	for _, tc := range []struct {
		name string
		task data.Task
		out  int
		ok   bool
	}{
		{Accuracy, data.TaskClassification, 3, true},
		{ROCAUC, data.TaskClassification, 2, true},
		{ROCAUC, data.TaskClassification, 3, false},
		{ROCAUC, data.TaskBinary, 12, true},
		{Accuracy, data.TaskBinary, 12, false},
		{MAE, data.TaskRegression, 1, true},
		{RMSE, data.TaskRegression, 1, true},
		{RMSE, data.TaskClassification, 2, false},
		{"f1", data.TaskClassification, 2, false},
	} {
		if err := Check(tc.name, tc.task, tc.out); (err == nil) != tc.ok {
			t.Errorf("Check(%s, %s, %d) = %v", tc.name, tc.task, tc.out, err)
		}
	}
}

// TestAveragePrecision compares AP with scikit-learn 1.2.1's
// average_precision_score (Debian's python3-sklearn), computed by
//
//	from sklearn.metrics import average_precision_score
//	average_precision_score(y, s)
//
// for each case, ties within and across classes included, and OGB's
// eval_ap loop (tasks with both labels among the non-NaN ones, mean over
// them) for the multi-task case. By hand, the fourth case: thresholds 0.7
// (1 of 3 positive: P 1/3, R 1/3), 0.3 (2 of 4: P 2/4, R 2/3), 0.2 (3 of
// 5: P 3/5, R 1), 0.1: AP = 1/3·1/3 + 1/3·2/4 + 1/3·3/5 = 0.47777…
func TestAveragePrecision(t *testing.T) {
	for i, tc := range []struct {
		s    []float64
		y    []int32
		want float64
	}{
		{[]float64{0.1, 0.4, 0.35, 0.8}, []int32{0, 0, 1, 1}, 0.8333333333333333},
		{[]float64{0.5, 0.5, 0.5, 0.2, 0.9}, []int32{1, 0, 1, 0, 0}, 0.5},
		{[]float64{1, 1, 1, 1}, []int32{0, 1, 0, 1}, 0.5},
		{[]float64{0.3, 0.7, 0.7, 0.1, 0.7, 0.2}, []int32{1, 1, 0, 0, 0, 1}, 0.4777777777777778},
		{[]float64{-2, 3, 3, 0.5, 0.5, -1, 3, 2}, []int32{0, 1, 0, 1, 1, 0, 0, 1}, 0.5416666666666666},
	} {
		got, err := AveragePrecision(tc.s, tc.y)
		if err != nil || math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("case %d: AP %v (%v), scikit-learn %v", i, got, err, tc.want)
		}
	}
	nan := math.NaN()
	target := []float64{1, 0, nan, 0, nan, 1, 1, 1, 0, 0, 0, nan, 1, 1, nan}
	scores := []float32{0.9, 0.2, 0.3, 0.1, 0.5, 0.5, 0.9, 0.5, 0.5, 0.4, 0.1, 0.0, 0.2, 0.8, 1.0}
	got, err := Score(AP, data.TaskBinary, Outputs{Out: scores, C: 3, Target: target})
	if err != nil || math.Abs(got-0.8055555555555555) > 1e-12 {
		t.Errorf("mean AP over tasks %v (%v), OGB's eval_ap with scikit-learn 0.8055555555555555", got, err)
	}
	if !HigherIsBetter(AP) {
		t.Error("ap: lower is better, want higher (model selection keeps the highest validation AP)")
	}
	if _, err := MeanAP([]float32{0.1, 0.2}, []float64{1, 1}, 1); err == nil {
		t.Error("AP of a task with positives only: no error, want OGB's (no task has both labels)")
	}
	if err := Check(AP, data.TaskClassification, 2); err == nil {
		t.Error("ap accepted for a classification task")
	}
}
