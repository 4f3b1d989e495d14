// Package numgrad checks analytic gradients against central differences
// computed in float64. It is a test helper: it imports nothing of spn, so
// that the independent references (models/internal/testkit/ref) and the
// kernels' own tests can both use it.
package numgrad

import (
	"math"
	"testing"
)

// Step is the central-difference step: small enough that the O(h²) error
// is far below float32 rounding, large enough for float64's.
const Step = 1e-6

// Check compares grad (analytic, rounded to float32) with the central
// differences (f(x+h·e_i) − f(x−h·e_i)) / 2h of f at x, for every entry i
// of x. It reports the first entry where they differ by more than
// tol·(1+|numeric|), and restores x.
func Check(t testing.TB, tol float64, name string, f func(x []float64) float64, x []float64, grad []float32) {
	t.Helper()
	if len(grad) != len(x) {
		t.Fatalf("%s: %d gradient entries for %d inputs", name, len(grad), len(x))
		return
	}
	for i := range x {
		old := x[i]
		x[i] = old + Step
		lp := f(x)
		x[i] = old - Step
		lm := f(x)
		x[i] = old
		num := (lp - lm) / (2 * Step)
		if math.Abs(num-float64(grad[i])) > tol*(1+math.Abs(num)) {
			t.Errorf("%s[%d]: analytic %.7g, float64 numeric %.7g", name, i, grad[i], num)
			return
		}
	}
}
