package metric

import (
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spn-project/spn/data/qm9"
	"github.com/spn-project/spn/internal/testkit/mirrortest"
)

// TestFiLMErrorByHand pins GNN-FiLM's error convention on the first three
// molecules of GNN-FiLM's test file: their z-scored U0 targets are
// 0.24404486, -0.722031, 1.3413436 and mu targets 0.14480467, 0.62330443,
// -0.20359421. For predictions (U0, mu) = (0.5, -0.25), (0, 1), (-1.5,
// 0.125):
//
//	MAE_U0 = (0.25595514 + 0.722031 + 2.8413436) / 3 = 1.2731099333
//	U0 error = 1.2731099333 / 0.004165489 = 305.63276324
//	MAE_mu = (0.39480467 + 0.37669557 + 0.32859421) / 3 = 0.3666981500
//	mu error = 0.3666981500 / 0.066513725 = 5.5131200365
//	both: (305.63276324 + 5.5131200365) / 2 = 155.57294164
//
// (numbers computed independently of this code, in Python from the
// .jsonl.gz file).
func TestFiLMErrorByHand(t *testing.T) {
	ds, err := qm9.LoadN(filepath.Join(mirrortest.Dir(t), "qm9", "test.jsonl.gz"), "test", 3)
	if err != nil {
		t.Fatal(err)
	}
	u0, mu := 7, 0
	pred := []float32{0.5, -0.25, 0, 1, -1.5, 0.125}
	var both, tu, tm []float64
	for _, g := range ds.Graphs {
		both = append(both, g.Target[u0], g.Target[mu])
		tu = append(tu, g.Target[u0])
		tm = append(tm, g.Target[mu])
	}
	f := qm9.ChemAccFactors
	cases := []struct {
		name    string
		pred    []float32
		target  []float64
		factors []float64
		want    float64
	}{
		{"U0", []float32{0.5, 0, -1.5}, tu, []float64{f[u0]}, 305.6327632442034},
		{"mu", []float32{-0.25, 1, 0.125}, tm, []float64{f[mu]}, 5.513120036503744},
		{"U0 and mu", pred, both, []float64{f[u0], f[mu]}, 155.57294164035355},
	}
	for _, c := range cases {
		got, err := FiLMError(c.pred, c.target, c.factors)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(got-c.want) > 1e-9*c.want {
			t.Errorf("%s: %.12g, want %.12g", c.name, got, c.want)
		}
	}
	// The factors are tf-gnn-samples' CHEMICAL_ACC_NORMALISING_FACTORS.
	if f[u0] != 0.004165489 || f[mu] != 0.066513725 || f[12] != 0.037467458 {
		t.Errorf("factors changed: %v", f)
	}
}

func TestFiLMErrorErrors(t *testing.T) {
	cases := []struct {
		pred    []float32
		target  []float64
		factors []float64
		want    string
	}{
		{[]float32{1}, []float64{1}, nil, "no normalising factors"},
		{[]float32{1, 2}, []float64{1}, []float64{1}, "2 predictions for 1 targets"},
		{[]float32{1, 2, 3}, []float64{1, 2, 3}, []float64{1, 1}, "3 predictions for 3 targets of 2 properties"},
		{[]float32{1}, []float64{1}, []float64{0}, "factor 0 is 0"},
		{nil, nil, []float64{1}, "0 predictions"},
	}
	for _, c := range cases {
		if _, err := FiLMError(c.pred, c.target, c.factors); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %v, want %q", err, c.want)
		}
	}
}
