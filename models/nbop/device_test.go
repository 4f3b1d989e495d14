package nbop

import (
	"math/rand/v2"
	"testing"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/models/cuda/engine"
	"github.com/spn-project/spn/models/cuda/engine/enginetest"
	"github.com/spn-project/spn/models/kernels"
	"github.com/spn-project/spn/models/op/optest"
	"github.com/spn-project/spn/models/synth"
)

// TestCombineOnDevice runs Combine's SPN form (k = 4, and k = 1 as GIN)
// on the emulated device and on the CPU over a batch of more than one
// row chunk in tensors with padding rows (optest.CheckDevice): output
// and gradients within 1e-5 relative and 1e-4 absolute, the tolerance of
// dα and dε (the CPU adds float32 partial dot products per chunk, the
// device double ones; kern's emulation test asserts the aggregation's
// and dH's bits). With DevSums the backward pass reads the forward's hop
// sums, without it recomputes them.
func TestCombineOnDevice(t *testing.T) { combineOnDevice(t, enginetest.Emulated(t)) }

// TestGPUCombineOnDevice is TestCombineOnDevice on GPU 0 (it skips
// without one).
func TestGPUCombineOnDevice(t *testing.T) { combineOnDevice(t, enginetest.GPU(t)) }

func combineOnDevice(t *testing.T, e *engine.Engine) {
	const k, w = 4, 6
	ds, hops, err := synth.Layered(5, 24, 3, [2]int{3, 6}, [2]int{2, 5}, k)
	if err != nil {
		t.Fatal(err)
	}
	all := make([]int, len(ds.Graphs))
	for i := range all {
		all[i] = i
	}
	b, err := data.NewBatch(ds, hops, all, k)
	if err != nil {
		t.Fatal(err)
	}
	n := b.N
	if n <= kernels.ChunkRows {
		t.Fatalf("batch of %d nodes: want more than one chunk", n)
	}
	N := n + 9
	rng := rand.New(rand.NewPCG(5, 6))
	be := kernels.CPU{Threads: 1}
	for _, kk := range []int{k, 1} {
		D := &Data{N: n, G: b.NumGraphs, Ptr: b.GraphPtr, Hop1: b.Hop[0], Hop1T: kernels.Transpose(b.Hop[0])}
		for _, h := range b.Hop[1:kk] {
			D.Hops = append(D.Hops, h)
			D.HopsT = append(D.HopsT, kernels.Transpose(h))
		}
		dev, err := UploadHops(e, D, kk)
		if err != nil {
			t.Fatal(err)
		}
		defer dev.Free()
		D.Dev = dev
		alpha := randFloats(rng, kk, 0.5)
		in := [][]float32{randFloats(rng, N*w, 1), alpha, {0.3}}
		for _, keep := range []bool{true, false} {
			o := Combine{ID: "agg", Be: be, D: D, K: kk, N: N, W: w, Hop1: true}
			if keep {
				o.Sums, o.DevSums = new([][]float32), &DeviceSums{}
			}
			optest.CheckDevice(t, e, "combine", o, in, 1e-4, 1e-5)
		}
	}
	bad := Combine{ID: "agg", Be: be, D: &Data{N: n}, K: k, N: N, W: w, Hop1: true}
	if err := bad.DeviceForward(e, nil, nil); err == nil || err.Error() != "agg: the hop sets are not on the device" {
		t.Errorf("Combine without the hop sets on the device: %v", err)
	}
}
