package cuda_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/spn-project/spn/models/cuda"
)

// TestPack packs arrays of the three element types (one of them empty)
// on the emulated device: one host→device copy, each view reads back its
// array, a kernel runs on views, a smaller pack reuses the buffer, a
// larger one replaces (and frees) it, and the views of a freed buffer
// are refused; Slice makes views of part of a buffer.
func TestPack(t *testing.T) {
	r, ctx, _ := emuContext(t)
	pack(t, r, ctx)
}

// TestGPUPack is TestPack on GPU 0 (it skips without one).
func TestGPUPack(t *testing.T) {
	r, ctx := gpuContext(t)
	pack(t, r, ctx)
}

func pack(t *testing.T, r *cuda.Runtime, ctx *cuda.Context) {
	mod, err := ctx.LoadModule(kernelsPTX(t, r, ctx))
	if err != nil {
		t.Fatal(err)
	}
	x, b := []float32{1, 2, 3}, []float32{10, 20, 30}
	idx := []int32{7, 8, 9, 10, 11}
	tgt := []float64{0.5, -1.25}
	var xv, bv, iv, ev, tv *cuda.Buffer
	var pk cuda.Pack
	cuda.Put(&pk, &xv, x)
	cuda.Put(&pk, &iv, idx)
	cuda.Put(&pk, &ev, []int32{})
	cuda.Put(&pk, &tv, tgt)
	cuda.Put(&pk, &bv, b)
	if want := 4*cuda.PackAlign + 4*len(b); pk.Len() != want {
		t.Errorf("pack of %d bytes, want %d (each array at a multiple of %d)", pk.Len(), want, cuda.PackAlign)
	}
	before := ctx.Calls()
	dev, err := pk.Upload(ctx, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := ctx.Calls(); got.ToDevice-before.ToDevice != 1 {
		t.Errorf("%d host→device copies for one pack, want 1", got.ToDevice-before.ToDevice)
	}
	if ev.Len() != 0 || iv.Len() != len(idx) || tv.Len() != len(tgt) {
		t.Errorf("views of %d, %d and %d values, want 0, %d and %d", ev.Len(), iv.Len(), tv.Len(), len(idx), len(tgt))
	}
	check := func(what string, v *cuda.Buffer, want any) {
		t.Helper()
		var err error
		var got any
		switch w := want.(type) {
		case []float32:
			g := make([]float32, len(w))
			err, got = cuda.Download(g, v), g
		case []int32:
			g := make([]int32, len(w))
			err, got = cuda.Download(g, v), g
		case []float64:
			g := make([]float64, len(w))
			err, got = cuda.Download(g, v), g
		}
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if !slices.Equal(anySlice(got), anySlice(want)) {
			t.Errorf("%s reads %v, want %v", what, got, want)
		}
	}
	check("x", xv, x)
	check("idx", iv, idx)
	check("targets", tv, tgt)
	check("b", bv, b)
	// A kernel reads views: y = x + b (spn_bias_relu, one row, no ReLU).
	k, err := mod.Kernel("spn_bias_relu")
	if err != nil {
		t.Fatal(err)
	}
	y, err := cuda.Alloc[float32](ctx, 3)
	if err != nil {
		t.Fatal(err)
	}
	defer y.Free()
	if err := k.Launch(1, 32, y, xv, bv, 1, 3, 0); err != nil {
		t.Fatal(err)
	}
	check("x + b", y, []float32{11, 22, 33})
	// A slice of a view (and of an allocation) is a view of its values.
	mid, err := iv.Slice(1, 3)
	if err != nil {
		t.Fatal(err)
	}
	check("idx[1:4]", mid, idx[1:4])
	tail, err := y.Slice(2, 1)
	if err != nil {
		t.Fatal(err)
	}
	check("(x + b)[2:]", tail, []float32{33})
	if err := k.Launch(1, 32, tail, xv, bv, 1, 1, 0); err != nil {
		t.Fatal(err)
	}
	check("x + b with its last value written through a slice", y, []float32{11, 22, 11})
	if _, err := iv.Slice(3, 3); err == nil || err.Error() != "cuda: values [3, 6) of a buffer of 5" {
		t.Errorf("a slice past the end: %v", err)
	}

	// A smaller pack goes into the same buffer.
	pk.Reset()
	cuda.Put(&pk, &iv, []int32{4, 5})
	again, err := pk.Upload(ctx, dev, 0)
	if err != nil {
		t.Fatal(err)
	}
	if again != dev {
		t.Error("a smaller pack did not reuse the buffer")
	}
	check("reused idx", iv, []int32{4, 5})
	// A larger one replaces it, and the old views are refused.
	old := xv
	pk.Reset()
	cuda.Put(&pk, &xv, make([]float32, 1000))
	bigger, err := pk.Upload(ctx, dev, 0)
	if err != nil {
		t.Fatal(err)
	}
	if bigger == dev {
		t.Fatal("a larger pack went into the smaller buffer")
	}
	if err := cuda.Download(make([]float32, 3), old); err == nil || !strings.Contains(err.Error(), "freed") {
		t.Errorf("reading a view of a replaced buffer: %v", err)
	}
	if err := xv.Free(); err != nil {
		t.Errorf("freeing a view: %v", err)
	}
	check("view after its Free", xv, make([]float32, 1000))
	if err := bigger.Free(); err != nil {
		t.Fatal(err)
	}
	if err := cuda.Download(make([]float32, 1000), xv); err == nil {
		t.Error("reading a view of a freed buffer: no error")
	}
}

// anySlice returns the values of a slice of float32, int32 or float64 as
// float64s.
func anySlice(s any) []float64 {
	var r []float64
	switch v := s.(type) {
	case []float32:
		for _, x := range v {
			r = append(r, float64(x))
		}
	case []int32:
		for _, x := range v {
			r = append(r, float64(x))
		}
	case []float64:
		r = append(r, v...)
	}
	return r
}

// TestPackShare: Share adds nothing to the copy and points its view at
// the shared Put's device array (what a kernel writes through one view
// the other reads); a Put of part of the same values, or of the same
// array again, is an array of its own; sharing what the pack does not
// hold fails.
func TestPackShare(t *testing.T) {
	r, ctx, _ := emuContext(t)
	fill := loadKernels(t, r, ctx, "spn_fill")[0]
	v := []float32{4, 5, 6, 7}
	var a, b, c, stray *cuda.Buffer
	var pk cuda.Pack
	cuda.Put(&pk, &a, v)
	if err := pk.Share(&b, &a); err != nil {
		t.Fatal(err)
	}
	cuda.Put(&pk, &c, v[:2])
	if want := cuda.PackAlign + 4*2; pk.Len() != want {
		t.Errorf("pack of %d bytes, want %d (v once, its prefix once)", pk.Len(), want)
	}
	if err := pk.Share(&b, &stray); err == nil {
		t.Error("sharing an array the pack does not hold: no error")
	}
	// An array put twice is copied twice.
	var twice cuda.Pack
	w := []float32{1, 2}
	cuda.Put(&twice, &stray, w)
	cuda.Put(&twice, &stray, w)
	if want := cuda.PackAlign + 4*2; twice.Len() != want {
		t.Errorf("pack of an array put twice: %d bytes, want %d (two copies)", twice.Len(), want)
	}
	dev, err := pk.Upload(ctx, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Free()
	if err := fill.Launch(1, 32, a, float32(9), len(v)); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		what string
		view *cuda.Buffer
		want []float32
	}{{"the first view, filled", a, []float32{9, 9, 9, 9}}, {"the shared view", b, []float32{9, 9, 9, 9}}, {"the prefix's own array", c, v[:2]}} {
		got := make([]float32, len(c.want))
		if err := cuda.Download(got, c.view); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s holds %v, want %v", c.what, got, c.want)
		}
	}
}

// TestPackPlace: Place makes an array in the pack for the caller to fill,
// laid out as Put lays out the same values (the same bytes on the
// device), and an array filled before a later Place keeps its values when
// that Place moves the pack's memory; a Reset pack reuses its memory, and
// Place does not clear it (the caller writes every value).
func TestPackPlace(t *testing.T) {
	_, ctx, _ := emuContext(t)
	v := []int32{3, 1, 4, 1, 5}
	big := make([]float32, 10000) // more than the pack holds before: Place grows it
	for i := range big {
		big[i] = float32(i)
	}
	var pv, pb, pe, qv, qb, qe *cuda.Buffer
	var put, place cuda.Pack
	cuda.Put(&put, &pv, v)
	cuda.Put(&put, &pe, []float64{})
	cuda.Put(&put, &pb, big)
	copy(cuda.Place[int32](&place, &qv, len(v)), v)
	if got := cuda.Place[float64](&place, &qe, 0); len(got) != 0 {
		t.Errorf("Place of 0 values returned %d", len(got))
	}
	copy(cuda.Place[float32](&place, &qb, len(big)), big)
	if put.Len() != place.Len() {
		t.Errorf("placed arrays take %d bytes, put ones %d", place.Len(), put.Len())
	}
	for _, c := range []struct {
		pk    *cuda.Pack
		views []**cuda.Buffer
	}{{&put, []**cuda.Buffer{&pv, &pe, &pb}}, {&place, []**cuda.Buffer{&qv, &qe, &qb}}} {
		dev, err := c.pk.Upload(ctx, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer dev.Free()
		gv, gb := make([]int32, len(v)), make([]float32, len(big))
		if err := errors.Join(cuda.Download(gv, *c.views[0]), cuda.Download(gb, *c.views[2])); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(gv, v) || !slices.Equal(gb, big) || (*c.views[1]).Len() != 0 {
			t.Errorf("the device holds %v, %d values (%v…), and an empty view of %d", gv, len(gb), gb[:3], (*c.views[1]).Len())
		}
	}
	// After Reset, the pack's memory is the last arrays': a placed array
	// shows what was there (so the caller must write every value).
	place.Reset()
	if got := cuda.Place[int32](&place, &qv, len(v)); !slices.Equal(got, v) {
		t.Errorf("a Reset pack's first placed array holds %v, want the last pack's %v (its memory kept, not cleared)", got, v)
	}
}
