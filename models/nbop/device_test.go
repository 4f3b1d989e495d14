package nbop

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/internal/testkit/kerntest"
	"github.com/spn-project/spn/internal/testkit/synth"
	"github.com/spn-project/spn/models/cuda"
	"github.com/spn-project/spn/models/cuda/engine"
	"github.com/spn-project/spn/models/internal/testkit/enginetest"
	"github.com/spn-project/spn/models/internal/testkit/optest"
	"github.com/spn-project/spn/models/kernels"
)

// TestCombineOnDevice runs HopCombine (k = 4, and k = 1 as GIN)
// on the emulated device and on the CPU over a batch of more than one
// row chunk in tensors with padding rows (optest.CheckDevice): output
// and gradients within 1e-5 relative and 1e-4 absolute, the tolerance of
// dα and dε (the CPU adds float32 partial dot products per chunk, the
// device double ones; kern's emulation test asserts the aggregation's
// and dH's bits).
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
	b := kerntest.AllGraphs(t, ds, hops, k)
	n := b.N
	N := n + 9
	rng := rand.New(rand.NewPCG(5, 6))
	be := kernels.CPU{Threads: 1}
	for _, kk := range []int{k, 1} {
		D := &Data{}
		D.SetHop1(b, b.Hop[:kk])
		dev, err := UploadHops(e, D, kk)
		if err != nil {
			t.Fatal(err)
		}
		defer dev.Free()
		D.Dev = dev
		alpha := randFloats(rng, kk, 0.5)
		in := [][]float32{randFloats(rng, N*w, 1), alpha, {0.3}}
		optest.CheckDevice(t, e, "combine", &HopCombine{ID: "agg", Be: be, D: D, K: kk, N: N, W: w}, in, optest.Tol{Abs: 1e-4, Rel: 1e-5})
	}
	bad := &HopCombine{ID: "agg", Be: be, D: &Data{N: n}, K: k, N: N, W: w}
	if err := bad.DeviceForward(e, nil, nil); err == nil || err.Error() != "agg: the hop sets are not on the device" {
		t.Errorf("HopCombine without the hop sets on the device: %v", err)
	}
}

// TestRSPNOnDevice runs R-SPN's ops on the emulated device and on the
// CPU (optest.CheckDevice) over a batch of synth.Relational graphs of
// more than one row chunk in tensors with padding rows: RelAgg (the same
// bits) and GivenFirstHop for k = 3 and k = 1
// (y, dS, dR and dH the same bits as kern's emulation test asserts; dα
// and dε summed in double per chunk on the device, float32 partials on
// the CPU: 1e-5 relative and 1e-4 absolute, as the SPN form), and the
// AtomEncoder over the graphs' categorical node features, CatEmbed (the
// same bits: the sum in column order, the tables' gradient a gather per
// table row over its nodes in order).
func TestRSPNOnDevice(t *testing.T) { rspnOnDevice(t, enginetest.Emulated(t)) }

// TestGPURSPNOnDevice is TestRSPNOnDevice on GPU 0 (it skips without
// one).
func TestGPURSPNOnDevice(t *testing.T) { rspnOnDevice(t, enginetest.GPU(t)) }

func rspnOnDevice(t *testing.T, e *engine.Engine) {
	const w = 5
	for _, k := range []int{3, 1} {
		ds, hops, err := synth.Relational(3, 40, k)
		if err != nil {
			t.Fatal(err)
		}
		b := kerntest.AllGraphs(t, ds, hops, k)
		n, R := b.N, len(b.Rel)
		if R < 2 {
			t.Fatalf("%d relations: want relations", R)
		}
		N := n + 7
		D := &Data{}
		if err := D.Set(b, Need{K: k, Relations: true}); err != nil {
			t.Fatal(err)
		}
		var pk cuda.Pack
		release, err := D.PackTyped(&pk)
		if err != nil {
			t.Fatal(err)
		}
		buf, err := pk.Upload(e.Context(), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(7, uint64(k)))
		be := kernels.CPU{Threads: 1}
		var xs [][]float32
		for range R {
			xs = append(xs, randFloats(rng, N*w, 1))
		}
		optest.CheckDevice(t, e, "relations", RelAgg{ID: "rel", Be: be, D: D, R: R, N: N, W: w}, xs, optest.Tol{})
		in := [][]float32{randFloats(rng, N*w, 1), randFloats(rng, N*w, 1), randFloats(rng, N*w, 1), randFloats(rng, k, 0.5), {0.3}}
		optest.CheckDevice(t, e, "combine", GivenFirstHop{ID: "combine", Be: be, D: D, K: k, N: N, W: w}, in, optest.Tol{Abs: 1e-4, Rel: 1e-5})
		_, rows := kernels.EmbedOffsets(b.NodeCatVocab)
		if len(b.NodeCatVocab) < 2 || D.DevNodeCat == nil {
			t.Fatalf("node feature vocabularies %v, on the device %v: want two columns or more, packed", b.NodeCatVocab, D.DevNodeCat != nil)
		}
		// The table's gradient adds a common category's entries (more
		// than a chunk of them) by chunks: within rounding of the CPU's
		// one sum (nbop.DeviceRows.Grad); the rest are the same bits.
		atom := CatEmbed{ID: "atom", Be: be, D: D, Rows: rows, N: N, W: w}
		optest.CheckDevice(t, e, "atom", atom, [][]float32{randFloats(rng, rows*w, 1)}, optest.Tol{Abs: 1e-5, Rel: 1e-6})
		atom.Onto = true
		optest.CheckDevice(t, e, "atom onto h", atom, [][]float32{randFloats(rng, N*w, 1), randFloats(rng, rows*w, 1)}, optest.Tol{Abs: 1e-5, Rel: 1e-6})
		release()
		if err := buf.Free(); err != nil {
			t.Fatal(err)
		}
		if D.Dev != nil || D.DevRel != nil || D.DevNodeCat != nil {
			t.Error("the release of PackTyped left the device data in Data")
		}
	}
	bad := RelAgg{ID: "rel", D: &Data{}, R: 2, N: 10, W: w}
	if err := bad.DeviceForward(e, nil, nil); err == nil || err.Error() != "rel: the relations are not on the device" {
		t.Errorf("RelAgg without the relations on the device: %v", err)
	}
	noCat := CatEmbed{ID: "atom", D: &Data{N: 10, NodeOff: []int32{0, 3}}, Rows: 5, N: 10, W: w}
	if err := noCat.DeviceForward(e, nil, nil); err == nil || err.Error() != "atom: the categorical node features are not on the device" {
		t.Errorf("CatEmbed without the node features on the device: %v", err)
	}
	wrong := GivenFirstHop{ID: "combine", D: &Data{Dev: &DeviceHops{K: 3}}, K: 3, N: 10, W: w}
	if err := wrong.DeviceForward(e, nil, nil); err == nil || err.Error() != "combine: 3 hop sets on the device, want 2 for k = 3" {
		t.Errorf("GivenFirstHop with N_1..N_k on the device: %v", err)
	}
}

// TestBCEOnDevice runs the multi-task BCE with missing labels on the
// emulated device and on the CPU (optest.CheckDevice) over G = 23 graphs
// × 4 tasks in logits with padding rows, about a third of the labels
// missing: the loss and the gradient within 1e-5 relative (the C
// library's exp and log1p against Go's). Without the labels on the
// device the op refuses to run.
func TestBCEOnDevice(t *testing.T) { bceOnDevice(t, enginetest.Emulated(t)) }

// TestGPUBCEOnDevice is TestBCEOnDevice on GPU 0 (it skips without one).
func TestGPUBCEOnDevice(t *testing.T) { bceOnDevice(t, enginetest.GPU(t)) }

func bceOnDevice(t *testing.T, e *engine.Engine) {
	const g, T, G = 23, 4, 27
	rng := rand.New(rand.NewPCG(21, 22))
	target := make([]float64, g*T)
	for i := range target {
		switch rng.IntN(3) {
		case 0:
			target[i] = math.NaN()
		case 1:
			target[i] = 1
		}
	}
	dev, err := cuda.NewBuffer(e.Context(), target)
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Free()
	D := &Data{G: g, Target: target, DevTarget: dev}
	o := BCE{ID: "loss.bce", D: D, G: G, T: T}
	optest.CheckDevice(t, e, "bce", o, [][]float32{randFloats(rng, G*T, 2)}, optest.Tol{Abs: 1e-7, Rel: 1e-5})
	bad := BCE{ID: "loss.bce", D: &Data{G: g, Target: target}, G: G, T: T}
	want := "loss.bce: the batch on the device has no binary labels for 23 graphs × 4 tasks"
	if err := bad.DeviceForward(e, []*cuda.Buffer{nil}, nil); err == nil || err.Error() != want {
		t.Errorf("BCE without the labels on the device: %v, want %q", err, want)
	}
}

// TestESPNOnDevice runs E-SPN's first hop, EdgeMsg, on the emulated
// device and on the CPU (optest.CheckDevice) over a batch of
// synth.Relational graphs of more than one row chunk with their
// categorical edge features (two columns), in tensors with padding rows:
// the messages and the gradients of h and of the BondEncoder tables the
// same bits (the tables' gradient a gather per table row over its
// entries in order, h's over each node's incoming entries). PackTyped
// packs the edges only when the batch data has edge features, and its
// release drops them.
func TestESPNOnDevice(t *testing.T) { espnOnDevice(t, enginetest.Emulated(t)) }

// TestGPUESPNOnDevice is TestESPNOnDevice on GPU 0 (it skips without
// one).
func TestGPUESPNOnDevice(t *testing.T) { espnOnDevice(t, enginetest.GPU(t)) }

func espnOnDevice(t *testing.T, e *engine.Engine) {
	const k, w = 2, 6
	ds, hops, err := synth.Relational(4, 40, k)
	if err != nil {
		t.Fatal(err)
	}
	b := kerntest.AllGraphs(t, ds, hops, k)
	n := b.N
	if len(b.EdgeFeatVocab) < 2 {
		t.Fatalf("edge feature vocabularies %v: want two columns", b.EdgeFeatVocab)
	}
	N := n + 5
	D := &Data{}
	if err := D.Set(b, Need{K: k, Edges: true}); err != nil {
		t.Fatal(err)
	}
	var pk cuda.Pack
	release, err := D.PackTyped(&pk)
	if err != nil {
		t.Fatal(err)
	}
	buf, err := pk.Upload(e.Context(), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	if D.DevEdges == nil {
		t.Fatal("PackTyped did not pack the edges of a batch with edge features")
	}
	_, rows := kernels.EmbedOffsets(b.EdgeFeatVocab)
	rng := rand.New(rand.NewPCG(8, 9))
	o := EdgeMsg{ID: "edge", Be: kernels.CPU{Threads: 1}, D: D, Rows: rows, N: N, W: w}
	// The bond tables' gradient adds a common bond type's entries by
	// chunks: within rounding of the CPU's one sum (DeviceRows.Grad).
	in := [][]float32{randFloats(rng, N*w, 1), randFloats(rng, rows*w, 1)}
	optest.CheckDevice(t, e, "edge messages", o, in, optest.Tol{Abs: 1e-5, Rel: 1e-6})
	// The same with the embeddings kept from the forward pass
	// (EdgeMsg.Kept): the same values, one launch less.
	o.Kept = new(EdgeEmbeddings)
	optest.CheckDevice(t, e, "edge messages, embeddings kept", o, in, optest.Tol{Abs: 1e-5, Rel: 1e-6})
	if o.Kept.dev == nil {
		t.Error("the forward pass kept no embeddings")
	}
	release()
	if err := buf.Free(); err != nil {
		t.Fatal(err)
	}
	if D.DevEdges != nil || D.DevNodeCat != nil {
		t.Error("the release of PackTyped left the device data in Data")
	}
	// Without edge features nothing of the edges is packed.
	if err := D.Set(b, Need{K: k}); err != nil {
		t.Fatal(err)
	}
	var pk2 cuda.Pack
	if _, err := D.PackTyped(&pk2); err != nil {
		t.Fatal(err)
	}
	if D.DevEdges != nil {
		t.Error("PackTyped packed edges for batch data without edge features")
	}
	bad := EdgeMsg{ID: "edge", D: &Data{N: 10}, Rows: 4, N: 10, W: w}
	if err := bad.DeviceForward(e, nil, nil); err == nil || err.Error() != "edge: the edges are not on the device" {
		t.Errorf("EdgeMsg without the edges on the device: %v", err)
	}
}

// TestGlobalReadOnDevice runs the global readout term, GlobalRead, on the
// emulated device and on the CPU (optest.CheckDevice) over a batch of
// synth.Relational graphs of more than one row chunk in tensors with
// padding rows: the output and the gradients of x and W within 1e-5
// relative and 1e-4 absolute (cuBLAS's order of products against the
// CPU's GEMMs; the graph sums are the CPU's bits, as kern's emulation
// test asserts).
func TestGlobalReadOnDevice(t *testing.T) { globalReadOnDevice(t, enginetest.Emulated(t)) }

// TestGPUGlobalReadOnDevice is TestGlobalReadOnDevice on GPU 0 (it skips
// without one).
func TestGPUGlobalReadOnDevice(t *testing.T) { globalReadOnDevice(t, enginetest.GPU(t)) }

func globalReadOnDevice(t *testing.T, e *engine.Engine) {
	const w = 6
	ds, hops, err := synth.Relational(5, 40, 1)
	if err != nil {
		t.Fatal(err)
	}
	b := kerntest.AllGraphs(t, ds, hops, 1)
	n := b.N
	N := n + 3
	D := &Data{N: n, G: b.NumGraphs, Ptr: b.GraphPtr}
	o := GlobalRead{ID: "read", Be: kernels.CPU{Threads: 1}, D: D, N: N, W: w}
	if err := o.DeviceForward(e, nil, nil); err == nil || err.Error() != "read: the graph offsets are not on the device" {
		t.Errorf("GlobalRead without the graph offsets on the device: %v", err)
	}
	var pk cuda.Pack
	release := D.PackPtr(&pk)
	buf, err := pk.Upload(e.Context(), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer buf.Free()
	rng := rand.New(rand.NewPCG(10, 11))
	optest.CheckDevice(t, e, "global readout", o, [][]float32{randFloats(rng, N*w, 1), randFloats(rng, w*w, 0.5)}, optest.Tol{Abs: 1e-4, Rel: 1e-5})
	release()
	if D.DevPtr != nil {
		t.Error("the release of PackPtr left the offsets in Data")
	}
}

// TestPackSetsOwnTransposes: sets that are their own transposes (the same
// arrays, as Data.Set and SetHop1 give for symmetric hop sets) go into
// the pack once; equal copies, or one set of several that is not its
// own transpose, pack the transposes apart.
func TestPackSetsOwnTransposes(t *testing.T) {
	a := data.CSR{Ptr: []int32{0, 1, 2, 2}, Idx: []int32{1, 0}}
	b := data.CSR{Ptr: []int32{0, 0, 1, 2}, Idx: []int32{2, 1}}
	cp := func(c data.CSR) data.CSR {
		return data.CSR{Ptr: append([]int32(nil), c.Ptr...), Idx: append([]int32(nil), c.Idx...)}
	}
	packLen := func(sets, setsT []data.CSR) int {
		t.Helper()
		var pk cuda.Pack
		if _, err := PackSets(&pk, sets, setsT, 3); err != nil {
			t.Fatal(err)
		}
		return pk.Len()
	}
	sets := []data.CSR{a, b}
	once := packLen(sets, sets)
	for _, c := range []struct {
		name  string
		setsT []data.CSR
	}{
		{"equal copies", []data.CSR{cp(a), cp(b)}},
		{"one set its own transpose", []data.CSR{a, cp(b)}},
	} {
		if got := packLen(sets, c.setsT); got <= once {
			t.Errorf("%s: a pack of %d bytes, want more than the %d of the sets alone", c.name, got, once)
		}
	}
	if want := 2 * cuda.PackAlign; once > want {
		t.Errorf("own transposes: a pack of %d bytes, want at most %d (row offsets and entries once)", once, want)
	}
}
