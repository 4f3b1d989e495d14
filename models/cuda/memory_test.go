package cuda_test

import (
	"testing"

	"github.com/spn-project/spn/models/cuda"
)

// TestMemory follows a context's allocations on the emulated device: the
// live bytes rise with each allocation (a buffer of no values holds one
// value) and fall with each Free, the peak keeps the most, views of a
// pack take nothing of their own, and Close leaves nothing live.
func TestMemory(t *testing.T) {
	_, ctx, _ := emuContext(t)
	want := func(what string, live, peak int64) {
		t.Helper()
		if got := ctx.Memory(); got != (cuda.Memory{Live: live, Peak: peak}) {
			t.Errorf("%s: %+v, want live %d and peak %d bytes", what, got, live, peak)
		}
	}
	want("new context", 0, 0)
	a, err := cuda.Alloc[float32](ctx, 100)
	if err != nil {
		t.Fatal(err)
	}
	b, err := cuda.Alloc[float64](ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	want("400 + 80 bytes", 480, 480)
	if err := a.Free(); err != nil {
		t.Fatal(err)
	}
	if err := a.Free(); err != nil { // a second Free frees nothing
		t.Fatal(err)
	}
	want("a freed", 80, 480)
	e, err := cuda.Alloc[int32](ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	want("an empty buffer", 84, 480)
	var pk cuda.Pack
	var v1, v2 *cuda.Buffer
	cuda.Put(&pk, &v1, make([]float32, 300))
	cuda.Put(&pk, &v2, []int32{1, 2})
	dev, err := pk.Upload(ctx, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := v1.Free(); err != nil { // a view frees nothing
		t.Fatal(err)
	}
	packed := int64(pk.Len())
	want("a pack", 84+packed, 84+packed)
	if err := dev.Free(); err != nil {
		t.Fatal(err)
	}
	if err := e.Free(); err != nil {
		t.Fatal(err)
	}
	want("the pack and the empty buffer freed", 80, 84+packed)
	_ = b // freed by Close
	if err := ctx.Close(); err != nil {
		t.Fatal(err)
	}
	if got := ctx.Memory(); got.Live != 0 {
		t.Errorf("after Close: %d bytes live, want 0", got.Live)
	}
}
