package numgrad

import (
	"math"
	"testing"
)

// recorder is a testing.TB that records failures instead of failing.
type recorder struct {
	testing.TB
	failed bool
}

func (r *recorder) Helper()               {}
func (r *recorder) Errorf(string, ...any) { r.failed = true }
func (r *recorder) Fatalf(string, ...any) { r.failed = true }

// Check accepts the true gradient of a smooth function, refuses one entry
// off by 1%, and leaves x as it found it.
func TestCheck(t *testing.T) {
	f := func(x []float64) float64 { return x[0]*x[0]*x[1] + math.Sin(x[1]) }
	x := []float64{0.7, -1.3}
	good := []float32{float32(2 * x[0] * x[1]), float32(x[0]*x[0] + math.Cos(x[1]))}
	r := &recorder{TB: t}
	Check(r, 1e-6, "good", f, x, good)
	if r.failed {
		t.Fatal("the true gradient was refused")
	}
	if x[0] != 0.7 || x[1] != -1.3 {
		t.Fatalf("x changed to %v", x)
	}
	bad := []float32{good[0], good[1] * 1.01}
	r = &recorder{TB: t}
	Check(r, 1e-6, "bad", f, x, bad)
	if !r.failed {
		t.Fatal("a gradient 1% off was accepted")
	}
	r = &recorder{TB: t}
	Check(r, 1e-6, "short", f, x, good[:1])
	if !r.failed {
		t.Fatal("a gradient of the wrong length was accepted")
	}
}
