package cuda_test

import (
	"testing"

	"github.com/spn-project/spn/models/cuda"
)

// TestProfile profiles launches and a product on the emulated device
// (profileCalls), then checks that Close destroyed the profile's events.
func TestProfile(t *testing.T) {
	r, ctx, lib := emuContext(t)
	count := live(t, lib)
	profileCalls(t, r, ctx)
	if n := count(4); n != 10 {
		t.Fatalf("%d live events after two profiles of 5 calls, want 10: two per call, the second profile reusing the first's", n)
	}
	if err := ctx.Close(); err != nil {
		t.Fatal(err)
	}
	if n := count(4); n != 0 {
		t.Errorf("%d events live after Close", n)
	}
}

// TestGPUProfile is TestProfile's calls on GPU 0 (it skips without one).
func TestGPUProfile(t *testing.T) {
	r, ctx := gpuContext(t)
	profileCalls(t, r, ctx)
}

// profileCalls: a profile reports each kernel's launches and cuBLAS's
// products by name, longest first, with a time each; calls outside a
// profile are not in it; a second profile of the same calls reports the
// same counts; StopProfile without a profile, and StartProfile during
// one, fail.
func profileCalls(t *testing.T, r *cuda.Runtime, ctx *cuda.Context) {
	ks := loadKernels(t, r, ctx, "spn_fill", "spn_relu_mask")
	fill, relu := ks[0], ks[1]
	blas, err := ctx.NewBLAS()
	if err != nil {
		t.Fatal(err)
	}
	const n = 64
	x, err := cuda.Alloc[float32](ctx, n*n)
	if err != nil {
		t.Fatal(err)
	}
	y, err := cuda.Alloc[float32](ctx, n*n)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ctx.StopProfile(); err == nil {
		t.Error("StopProfile without a profile: no error")
	}
	calls := func() {
		t.Helper()
		for range 3 {
			if err := fill.Launch(n*n/64, 64, x, float32(1), n*n); err != nil {
				t.Fatal(err)
			}
		}
		if err := relu.Launch(n*n/64, 64, y, x, x, n*n); err != nil {
			t.Fatal(err)
		}
		if err := blas.Sgemm(false, false, n, n, n, 1, x, x, 0, y); err != nil {
			t.Fatal(err)
		}
	}
	calls() // not profiled
	for round := range 2 {
		if err := ctx.StartProfile(); err != nil {
			t.Fatal(err)
		}
		if err := ctx.StartProfile(); err == nil {
			t.Error("StartProfile during a profile: no error")
		}
		calls()
		prof, err := ctx.StopProfile()
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]int{"spn_fill": 3, "spn_relu_mask": 1, cuda.GEMMName: 1}
		if len(prof) != len(want) {
			t.Fatalf("round %d: profile %v, want the %d names of %v", round, prof, len(want), want)
		}
		for i, kt := range prof {
			if kt.Launches != want[kt.Name] {
				t.Errorf("round %d: %s launched %d times, want %d", round, kt.Name, kt.Launches, want[kt.Name])
			}
			if kt.Time < 0 {
				t.Errorf("round %d: %s took %v", round, kt.Name, kt.Time)
			}
			if i > 0 && kt.Time > prof[i-1].Time {
				t.Errorf("round %d: %s (%v) after %s (%v): want the longest first", round, kt.Name, kt.Time, prof[i-1].Name, prof[i-1].Time)
			}
		}
	}
}
