package devicetest

import (
	"fmt"
	"math"
	"strings"
	"testing"
)

// recorder is a testing.TB that records a fatal failure's message and
// ends the goroutine, as testing.T does.
type recorder struct {
	testing.TB
	msg string
}

func (r *recorder) Helper() {}

func (r *recorder) Fatalf(format string, args ...any) {
	r.msg = fmt.Sprintf(format, args...)
	r.FailNow()
}

func (r *recorder) FailNow() { panic(r) }

// run runs f with r and returns its fatal message ("" if none).
func (r *recorder) run(f func()) (msg string) {
	defer func() {
		if p := recover(); p != nil && p != r {
			panic(p)
		}
		msg = r.msg
	}()
	f()
	return ""
}

// TestCompareValues: the largest difference relative to 1 + |CPU value|
// is found and named with its index and both values, a NaN on either
// side is the largest (+Inf), and every value over the tolerance is
// counted.
func TestCompareValues(t *testing.T) {
	cpu := []float32{1, 2, 3, -4, 0}
	dev := []float32{1, 2.01, 3, -4.5, 0}
	worst, over := CompareValues("step 2 output", dev, cpu, 1e-3)
	if worst.At != "step 2 output value 3" || worst.Dev != -4.5 || worst.CPU != -4 || math.Abs(worst.Rel-0.1) > 1e-9 || over != 2 {
		t.Errorf("worst %+v, %d over: want value 3 (−4.5 against −4, 0.1) and 2 over", worst, over)
	}
	dev[4] = float32(math.NaN())
	if worst, over = CompareValues("x", dev, cpu, 1e-3); worst.At != "x value 4" || !math.IsInf(worst.Rel, 1) || over != 3 {
		t.Errorf("with a NaN: worst %+v, %d over: want value 4 at +Inf, 3 over", worst, over)
	}
	var d Diff
	d.Max(Diff{})
	if d.String() != "no values" {
		t.Errorf("an empty Diff reads %q", d)
	}
}

// TestOutputsNamesWorst: a comparison over its tolerance fails naming
// the largest difference (not the first value over the tolerance), where
// it is, and how many values are over it; within it, it returns the
// largest difference.
func TestOutputsNamesWorst(t *testing.T) {
	cpu := []float32{1, 2, 3, 4}
	dev := []float32{1, 2.01, 3, 4.25}
	r := &recorder{TB: t}
	msg := r.run(func() { Outputs(r, "after step 4", dev, cpu, 1e-3) })
	for _, want := range []string{"after step 4: 2 of 4 values over the tolerance 0.001", "at after step 4 value 3 (4.25 ", "on the device, 4 on the CPU)"} {
		if !strings.Contains(msg, want) {
			t.Errorf("failure %q does not say %q", msg, want)
		}
	}
	if got := Outputs(t, "x", dev, cpu, 0.1); math.Abs(got-0.25/5) > 1e-6 {
		t.Errorf("Outputs within the tolerance returns %v, want 0.05", got)
	}
}
