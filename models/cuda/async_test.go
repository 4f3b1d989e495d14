package cuda_test

import (
	"errors"
	"runtime"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/spn-project/spn/models/cuda"
)

// TestAsyncCopies runs asyncCopies on the emulated device, then checks
// what the emulator adds: a device→host copy's values reach the host
// only when it waits for an event recorded after the copy (a host that
// reads early reads what was there), a second copy into host memory that
// a pending one writes is refused (CUDA_ERROR_ILLEGAL_STATE), the driver
// refuses to free memory that is not page-locked, and Close frees the
// page-locked memory and the events and leaves no copy pending.
func TestAsyncCopies(t *testing.T) {
	r, ctx, lib := emuContext(t)
	count := live(t, lib)
	asyncCopies(t, r, ctx)

	h, err := ctx.AllocHost(16)
	if err != nil {
		t.Fatal(err)
	}
	dst := cuda.HostValues[float32](h)[:2]
	b, err := cuda.NewBuffer(ctx, []float32{3, 4})
	if err != nil {
		t.Fatal(err)
	}
	ev, err := ctx.NewEvent()
	if err != nil {
		t.Fatal(err)
	}
	copy(dst, []float32{-1, -1})
	if err := cuda.DownloadAsync(dst, b); err != nil {
		t.Fatal(err)
	}
	if err := ev.Record(); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(dst, []float32{-1, -1}) {
		t.Errorf("before the wait the host reads %v, want what was there, [-1 -1] (the emulator delivers at the wait)", dst)
	}
	if n := count(6); n != 1 {
		t.Errorf("%d copies pending before the wait, want 1", n)
	}
	if err := cuda.DownloadAsync(dst, b); err == nil || !strings.Contains(err.Error(), "CUDA_ERROR_ILLEGAL_STATE (401)") {
		t.Errorf("a second copy into memory a pending copy writes: %v, want CUDA_ERROR_ILLEGAL_STATE", err)
	}
	if err := ev.Wait(); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(dst, []float32{3, 4}) || count(6) != 0 {
		t.Errorf("after the wait the host reads %v with %d copies pending, want [3 4] and none", dst, count(6))
	}

	// The driver itself refuses to free memory that is not page-locked.
	freeHost, retain, release, setCurrent := driverCalls(t, lib)
	runtime.LockOSThread()
	var pctx uintptr
	if rc := retain(&pctx, 0); rc != 0 {
		t.Fatalf("cuDevicePrimaryCtxRetain: %d", rc)
	}
	if rc := setCurrent(pctx); rc != 0 {
		t.Fatalf("cuCtxSetCurrent: %d", rc)
	}
	pageable := make([]byte, 64)
	rcGo := freeHost(unsafe.Pointer(&pageable[0]))
	rcInside := freeHost(unsafe.Add(unsafe.Pointer(&h.Bytes()[0]), 4))
	setCurrent(0)
	release(0)
	runtime.UnlockOSThread()
	if rcGo != 1 || rcInside != 1 {
		t.Errorf("cuMemFreeHost of Go memory %d, of a page-locked allocation's inside %d: want CUDA_ERROR_INVALID_VALUE (1)", rcGo, rcInside)
	}

	if count(5) == 0 || count(4) == 0 {
		t.Fatalf("%d page-locked allocations and %d events before Close: the test's should be live", count(5), count(4))
	}
	if err := ctx.Close(); err != nil {
		t.Fatal(err)
	}
	for what, name := range map[int32]string{4: "events", 5: "page-locked allocations", 6: "pending copies"} {
		if n := count(what); n != 0 {
			t.Errorf("%d %s after Close", n, name)
		}
	}
	if h.Bytes() != nil {
		t.Error("a page-locked buffer's bytes after Close")
	}
	if err := h.Free(); err != nil {
		t.Errorf("Free after Close: %v", err)
	}
	if err := ev.Destroy(); err != nil {
		t.Errorf("Destroy after Close: %v", err)
	}
}

// TestContextStreams opens two Contexts of the emulated device, as two
// train stages sharing a GPU do: each has a stream of its own, on which
// its launches, products, asynchronous copies and event records go (the
// emulator counts the work on the legacy default stream: none), and a
// wait for one Context's work observes its own asynchronous copies, not
// the other's: the host waiting for A's event reads A's download, while
// B's stays undelivered until B synchronizes. Close destroys the
// streams.
func TestContextStreams(t *testing.T) {
	r, a, lib := emuContext(t)
	count := live(t, lib)
	b, err := r.NewContext(0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	if n := count(7); n != 2 {
		t.Fatalf("%d streams live with two Contexts, want 2", n)
	}
	legacy := count(8)

	fill := loadKernels(t, r, a, "spn_fill")[0]
	y, err := cuda.Alloc[float32](a, 2)
	if err != nil {
		t.Fatal(err)
	}
	if err := fill.Launch(1, 32, y, float32(7), 2); err != nil {
		t.Fatal(err)
	}
	blas, err := a.NewBLAS()
	if err != nil {
		t.Fatal(err)
	}
	if err := blas.Sgemm(false, false, 1, 1, 1, 1, y, y, 0, y); err != nil {
		t.Fatal(err)
	}
	if err := a.StartProfile(); err != nil {
		t.Fatal(err)
	}
	if err := fill.Launch(1, 32, y, float32(3), 1); err != nil {
		t.Fatal(err)
	}
	if _, err := a.StopProfile(); err != nil {
		t.Fatal(err)
	}

	// downloads copies buf's values into page-locked memory of ctx
	// asynchronously, the host's copy holding -1s until it is delivered.
	downloads := func(ctx *cuda.Context, buf *cuda.Buffer) []float32 {
		h, err := ctx.AllocHost(8)
		if err != nil {
			t.Fatal(err)
		}
		dst := cuda.HostValues[float32](h)[:2]
		copy(dst, []float32{-1, -1})
		if err := cuda.DownloadAsync(dst, buf); err != nil {
			t.Fatal(err)
		}
		return dst
	}
	xb, err := cuda.NewBuffer(b, []float32{5, 6})
	if err != nil {
		t.Fatal(err)
	}
	dstB := downloads(b, xb)
	dstA := downloads(a, y)
	ev, err := a.NewEvent()
	if err != nil {
		t.Fatal(err)
	}
	if err := ev.Record(); err != nil {
		t.Fatal(err)
	}
	if err := ev.Wait(); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(dstA, []float32{3, 7}) || !slices.Equal(dstB, []float32{-1, -1}) {
		t.Errorf("after A's wait: A's download %v, B's %v; want [3 7] and B's undelivered [-1 -1]", dstA, dstB)
	}
	if err := b.Synchronize(); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(dstB, []float32{5, 6}) || count(6) != 0 {
		t.Errorf("after B's Synchronize: B's download %v, %d copies pending; want [5 6] and none", dstB, count(6))
	}
	if n := count(8) - legacy; n != 0 {
		t.Errorf("%d launches, products, copies or event records on the legacy stream, want none", n)
	}
	if err := errors.Join(a.Close(), b.Close()); err != nil {
		t.Fatal(err)
	}
	if n := count(7); n != 0 {
		t.Errorf("%d streams live after Close", n)
	}
}

// driverCalls binds the emulated driver's cuMemFreeHost and what makes
// its primary context current, for calls past the package's checks.
func driverCalls(t *testing.T, lib string) (freeHost func(unsafe.Pointer) int32, retain func(*uintptr, int32) int32, release func(int32) int32, setCurrent func(uintptr) int32) {
	t.Helper()
	l, err := cuda.System().Open(lib)
	if err != nil {
		t.Fatal(err)
	}
	for name, f := range map[string]any{"cuMemFreeHost": &freeHost, "cuDevicePrimaryCtxRetain": &retain,
		"cuDevicePrimaryCtxRelease_v2": &release, "cuCtxSetCurrent": &setCurrent} {
		if err := l.Bind(f, name); err != nil {
			t.Fatal(err)
		}
	}
	return freeHost, retain, release, setCurrent
}

// TestGPUAsyncCopies is asyncCopies on GPU 0 (it skips without one).
func TestGPUAsyncCopies(t *testing.T) {
	r, ctx := gpuContext(t)
	asyncCopies(t, r, ctx)
}

// asyncCopies: DownloadAsync into page-locked memory makes one
// asynchronous copy and no synchronous one, and after a wait for an
// event recorded after it the host holds the values the buffer held at
// the copy's place in the stream (a kernel enqueued after it may
// overwrite the buffer); it refuses pageable memory, memory of another
// context, a freed page-locked buffer and a length other than the
// buffer's, as Download does; a freed event and freed memory are refused.
func asyncCopies(t *testing.T, r *cuda.Runtime, ctx *cuda.Context) {
	fill := loadKernels(t, r, ctx, "spn_fill")[0]
	before := ctx.Calls()
	h, err := ctx.AllocHost(4 * 8)
	if err != nil {
		t.Fatal(err)
	}
	if h.Len() != 32 || len(h.Bytes()) != 32 || len(cuda.HostValues[float32](h)) != 8 || len(cuda.HostValues[float64](h)) != 4 {
		t.Fatalf("32 bytes of page-locked memory: Len %d, %d bytes, %d float32s, %d float64s", h.Len(), len(h.Bytes()), len(cuda.HostValues[float32](h)), len(cuda.HostValues[float64](h)))
	}
	vals := cuda.HostValues[float32](h)
	b, err := cuda.NewBuffer(ctx, []float32{1, 2, 3})
	if err != nil {
		t.Fatal(err)
	}
	ev, err := ctx.NewEvent()
	if err != nil {
		t.Fatal(err)
	}
	if err := ev.Wait(); err != nil { // never recorded: nothing to wait for
		t.Fatal(err)
	}
	c0 := ctx.Calls()
	if err := cuda.DownloadAsync(vals[1:4], b); err != nil {
		t.Fatal(err)
	}
	if err := fill.Launch(1, 32, b, float32(9), 3); err != nil { // after the copy in the stream
		t.Fatal(err)
	}
	if err := ev.Record(); err != nil {
		t.Fatal(err)
	}
	if err := ev.Wait(); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(vals[1:4], []float32{1, 2, 3}) {
		t.Errorf("the copy brought back %v, want the values before the fill enqueued after it, [1 2 3]", vals[1:4])
	}
	if got := ctx.Calls().Sub(c0); got != (cuda.Calls{ToHostAsync: 1, Waits: 1, Launches: 1}) {
		t.Errorf("an asynchronous copy, a launch and a wait: calls %+v", got)
	}
	other := otherEmuContext(t, ctx)
	var foreign *cuda.HostBuffer
	if other != nil {
		if foreign, err = other.AllocHost(16); err != nil {
			t.Fatal(err)
		}
	}
	freed, err := ctx.AllocHost(16)
	if err != nil {
		t.Fatal(err)
	}
	freedVals := cuda.HostValues[float32](freed)
	if err := freed.Free(); err != nil {
		t.Fatal(err)
	}
	if err := freed.Free(); err != nil {
		t.Errorf("second Free: %v", err)
	}
	type refused struct {
		name string
		dst  []float32
		want string
	}
	cases := []refused{
		{"pageable memory", make([]float32, 3), "cuda: copying from the device: the host memory is not page-locked memory of this context (AllocHost)"},
		{"freed page-locked memory", freedVals[:3], "not page-locked memory of this context"},
		{"one value past the end", unsafe.Slice(&vals[6], 3), "not page-locked memory of this context"},
		{"too short", vals[:2], "cuda: copying a buffer of 3 values into 2"},
	}
	if foreign != nil {
		cases = append(cases, refused{"another context's", cuda.HostValues[float32](foreign)[:3], "not page-locked memory of this context"})
	}
	for _, c := range cases {
		if err := cuda.DownloadAsync(c.dst, b); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	if err := h.Free(); err != nil {
		t.Fatal(err)
	}
	if foreign != nil {
		if err := foreign.Free(); err != nil {
			t.Fatal(err)
		}
	}
	if err := cuda.DownloadAsync(vals[1:4], b); err == nil {
		t.Error("a copy into freed page-locked memory: no error")
	}
	if err := ev.Destroy(); err != nil {
		t.Fatal(err)
	}
	for name, err := range map[string]error{"Record": ev.Record(), "Wait": ev.Wait()} {
		if err == nil || !strings.Contains(err.Error(), "the event is destroyed") {
			t.Errorf("%s after Destroy: %v", name, err)
		}
	}
	if _, err := ctx.AllocHost(0); err == nil {
		t.Error("AllocHost(0): no error")
	}
	if got := ctx.Calls().Sub(before); got.HostAllocs != 2 || got.HostFrees != 2 || got.ToHost != 0 {
		t.Errorf("calls %+v: want 2 page-locked allocations and frees, no synchronous copy back", got)
	}
	if err := b.Free(); err != nil {
		t.Fatal(err)
	}
}

// otherEmuContext returns a second context on the emulated device when
// ctx is one (nil on a GPU, which has one device here).
func otherEmuContext(t *testing.T, ctx *cuda.Context) *cuda.Context {
	t.Helper()
	if ctx.Device.Name != "Fake GPU" {
		return nil
	}
	_, other, _ := emuContext(t)
	return other
}

// TestPackUploadAsync sends packs of different contents and sizes
// through one Staging into one device buffer on the emulated device, a
// kernel reading each pack's views before the next is sent: each pack
// is one asynchronous copy and one wait, no synchronous copy; the kernels
// read every pack's values; never more copies are pending than staging
// buffers (the pack waits for a buffer's event before refilling it, and
// the emulator checks when it does that the buffer was not changed while
// its copy was pending); the staging buffers are allocated twice and
// again only for a larger pack; and a staging buffer changed before its
// copy ran is reported at the wait (CUDA_ERROR_ILLEGAL_STATE).
func TestPackUploadAsync(t *testing.T) {
	r, ctx, lib := emuContext(t)
	count := live(t, lib)
	add := loadKernels(t, r, ctx, "spn_bias_relu")[0]
	s, err := cuda.NewStaging(ctx)
	if err != nil {
		t.Fatal(err)
	}
	zero, err := cuda.NewBuffer(ctx, make([]float32, 2000))
	if err != nil {
		t.Fatal(err)
	}
	var dev *cuda.Buffer
	var pk cuda.Pack
	var outs []*cuda.Buffer
	var wants [][]float32
	pending := 0
	for j, n := range []int{3, 5, 4, 1000, 7, 2, 6} {
		pk.Reset()
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(100*j + i)
		}
		var xv, iv *cuda.Buffer
		cuda.Put(&pk, &iv, []int32{int32(j)})
		cuda.Put(&pk, &xv, x)
		c0 := ctx.Calls()
		next, err := pk.UploadAsync(s, dev, 2*pk.Len())
		if err != nil {
			t.Fatalf("pack %d: %v", j, err)
		}
		c := ctx.Calls().Sub(c0)
		if c.ToDeviceAsync != 1 || c.ToDevice != 0 || c.Waits != 1 || c.ToHost != 0 {
			t.Errorf("pack %d: calls %+v, want one asynchronous copy, one wait and no synchronous copy", j, c)
		}
		// Each buffer is allocated for twice its first pack, and again
		// for the pack of 1000 values.
		if grow := j < cuda.StagingBuffers || n == 1000; c.HostAllocs != 0 != grow || c.HostFrees > c.HostAllocs {
			t.Errorf("pack %d of %d bytes: %d page-locked allocations and %d frees", j, pk.Len(), c.HostAllocs, c.HostFrees)
		}
		// A larger device buffer frees the old one (cuMemFree waits for
		// the device): then only this pack's copy is pending.
		pending = min(pending+1, cuda.StagingBuffers)
		if c.Frees > 0 {
			pending = 1
		}
		if got := count(6); int(got) != pending {
			t.Errorf("after pack %d: %d copies pending, want %d", j, got, pending)
		}
		dev = next
		y, err := cuda.Alloc[float32](ctx, n)
		if err != nil {
			t.Fatal(err)
		}
		zv, err := zero.Slice(0, n)
		if err != nil {
			t.Fatal(err)
		}
		if err := add.Launch(1, 1024, y, xv, zv, 1, n, 0); err != nil { // y = x + 0
			t.Fatal(err)
		}
		outs, wants = append(outs, y), append(wants, x)
	}
	for j, y := range outs {
		got := make([]float32, y.Len())
		if err := cuda.Download(got, y); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, wants[j]) {
			t.Errorf("the kernel after pack %d read %v, want %v", j, got[:min(len(got), 5)], wants[j][:min(len(got), 5)])
		}
	}
	if n := count(6); n != 0 {
		t.Errorf("%d copies pending after a synchronous copy", n)
	}

	// A staging buffer changed while its copy is pending (as a pack that
	// refilled it without waiting would): the wait that retires the copy
	// reports it.
	for j := range cuda.StagingBuffers + 1 {
		pk.Reset()
		var v *cuda.Buffer
		cuda.Put(&pk, &v, []int32{int32(j), 1, 2})
		if dev, err = pk.UploadAsync(s, dev, 0); err != nil {
			if j == cuda.StagingBuffers && strings.Contains(err.Error(), "CUDA_ERROR_ILLEGAL_STATE (401)") {
				break
			}
			t.Fatalf("pack %d: %v", j, err)
		}
		if j == 0 {
			cuda.LastStaging(s)[0] ^= 0xFF
		}
		if j == cuda.StagingBuffers {
			t.Error("a staging buffer changed while its copy was pending: no error")
		}
	}
	if err := s.Free(); err != nil {
		t.Fatal(err)
	}
	if n := count(5); n != 0 {
		t.Errorf("%d page-locked allocations after the staging's Free", n)
	}
}
