package data

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/spn-project/spn/internal/testkit/golden"
)

func sampleDataset(t testing.TB) *Dataset {
	t.Helper()
	g1, err := FromEdges(4, [][2]int{{0, 1}, {1, 2}, {2, 3}, {3, 0}, {1, 0}})
	if err != nil {
		t.Fatal(err)
	}
	g1.Labels = []int32{0, 1, 2, 1}
	g1.Attrs = []float32{0.5, -1, 2, 3, 4, 5, 6, 7}
	g1.Y = 1
	g2, err := FromEdges(3, [][2]int{{0, 2}})
	if err != nil {
		t.Fatal(err)
	}
	g2.Labels = []int32{2, 2, 0}
	g2.Attrs = make([]float32, 6)
	g2.EdgeType = []int32{0, 1}
	return &Dataset{
		Name: "sample", Graphs: []Graph{g1, g2},
		NumLabels: 3, AttrDim: 2, NumEdgeTypes: 2, NumClasses: 2,
		Splits: []Split{{Train: []int{0}, Test: []int{1}}, {Train: []int{1}, Val: []int{}, Test: []int{0}}},
	}
}

// sampleMolecules is an OGB-like dataset: categorical atom and bond
// features, a multi-task binary target with missing labels (NaN), and a
// one-atom molecule without bonds.
func sampleMolecules(t testing.TB) *Dataset {
	t.Helper()
	g1, err := FromEdges(3, [][2]int{{0, 1}, {1, 2}})
	if err != nil {
		t.Fatal(err)
	}
	g1.NodeCat = []int32{5, 0, 1, 6, 2, 0, 7, 0, 3}
	g1.EdgeFeat = []int32{0, 1, 0, 0, 1, 1, 2, 0}
	g1.Target = []float64{1, math.NaN()}
	g2, err := FromEdges(1, nil)
	if err != nil {
		t.Fatal(err)
	}
	g2.NodeCat = []int32{5, 1, 0}
	g2.EdgeFeat = []int32{}
	g2.Target = []float64{math.NaN(), 0}
	return &Dataset{
		Name: "mol", Graphs: []Graph{g1, g2},
		NumTargets: 2, NodeCatVocab: []int{119, 4, 12}, EdgeFeatVocab: []int{5, 6},
		Task:   TaskBinary,
		Splits: []Split{{Train: []int{0}, Val: []int{1}, Test: []int{}}},
	}
}

func sampleHops(t testing.TB) *Hops {
	t.Helper()
	u := CSR{Ptr: []int32{0, 0, 1, 2}, Idx: []int32{2, 1}}
	h := &Hops{KMax: 2, Graphs: []GraphHops{
		{Hop: []CSR{{Ptr: []int32{0, 1, 2}, Idx: []int32{1, 0}}, {Ptr: []int32{0, 0, 0}}}},
		{Hop: []CSR{{Ptr: []int32{0, 0, 0, 0}}, {Ptr: []int32{0, 0, 0, 0}}}, Unreachable: &u},
	}}
	// The readers record the symmetry; so does the expected value.
	h.RecordSymmetry()
	return h
}

func encodeDataset(t testing.TB, ds *Dataset) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := WriteDataset(&buf, ds); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func encodeHops(t testing.TB, h *Hops) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := WriteHops(&buf, h); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// normalize makes nil and empty split parts compare equal.
func normalize(ds *Dataset) {
	for i := range ds.Splits {
		for _, p := range []*[]int{&ds.Splits[i].Train, &ds.Splits[i].Val, &ds.Splits[i].Test} {
			if len(*p) == 0 {
				*p = nil
			}
		}
	}
}

func TestDatasetRoundTrip(t *testing.T) {
	ds := sampleDataset(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "dataset.bin")
	if err := WriteDatasetFile(path, ds); err != nil {
		t.Fatal(err)
	}
	got, err := ReadDatasetFile(path)
	if err != nil {
		t.Fatal(err)
	}
	normalize(ds)
	normalize(got)
	if !reflect.DeepEqual(got, ds) {
		t.Fatalf("round trip changed the dataset:\n got %+v\nwant %+v", got, ds)
	}
	b1, _ := os.ReadFile(path)
	if b2 := encodeDataset(t, got); !bytes.Equal(b1, b2) {
		t.Fatal("re-encoding the decoded dataset gives different bytes")
	}
}

func TestDatasetRoundTripCategorical(t *testing.T) {
	ds := sampleMolecules(t)
	b := encodeDataset(t, ds)
	got, err := ReadDataset(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if got.Task != TaskBinary || !reflect.DeepEqual(got.NodeCatVocab, ds.NodeCatVocab) || !reflect.DeepEqual(got.EdgeFeatVocab, ds.EdgeFeatVocab) {
		t.Fatalf("header changed: task %q, vocab %v %v", got.Task, got.NodeCatVocab, got.EdgeFeatVocab)
	}
	for i := range ds.Graphs {
		w, g := &ds.Graphs[i], &got.Graphs[i]
		if !reflect.DeepEqual(g.NodeCat, w.NodeCat) || !reflect.DeepEqual(g.EdgeFeat, w.EdgeFeat) {
			t.Errorf("graph %d: features %v %v, want %v %v", i, g.NodeCat, g.EdgeFeat, w.NodeCat, w.EdgeFeat)
		}
		for j := range w.Target {
			if math.Float64bits(g.Target[j]) != math.Float64bits(w.Target[j]) {
				t.Errorf("graph %d target %d: %v, want %v", i, j, g.Target[j], w.Target[j])
			}
		}
	}
	if g := got.Graphs[1]; g.EdgeFeat == nil {
		t.Error("empty edge features of a graph without bonds decoded as absent")
	}
	if b2 := encodeDataset(t, got); !bytes.Equal(b, b2) {
		t.Fatal("re-encoding the decoded dataset gives different bytes")
	}
}

// TestDatasetVersionRejected: a file of the format before the categorical
// features must be rejected, never read with those fields silently empty.
func TestDatasetVersionRejected(t *testing.T) {
	b := encodeDataset(t, sampleMolecules(t))
	old := append([]byte{}, b...)
	old[8] = 1
	_, err := ReadDataset(bytes.NewReader(resign(old)))
	if err == nil || !strings.Contains(err.Error(), "unsupported format version 1") {
		t.Fatalf("version-1 file: got %v", err)
	}
}

func TestHopsRoundTrip(t *testing.T) {
	h := sampleHops(t)
	path := filepath.Join(t.TempDir(), "hops.bin")
	if err := WriteHopsFile(path, h); err != nil {
		t.Fatal(err)
	}
	got, err := ReadHopsFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, h) {
		t.Fatalf("round trip changed the hops:\n got %+v\nwant %+v", got, h)
	}
}

// TestHopsVersion1Read reads a hops file written by the first format (raw
// int32 CSRs; testdata/hops_v1.bin holds sampleHops) and checks that the
// current writer produces version 2 and reads it back to the same hops.
func TestHopsVersion1Read(t *testing.T) {
	got, err := ReadHopsFile(filepath.Join("testdata", "hops_v1.bin"))
	if err != nil {
		t.Fatal(err)
	}
	want := sampleHops(t)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("version-1 file decoded to\n%+v\nwant\n%+v", got, want)
	}
	b := encodeHops(t, got)
	if b[8] != hopsVersion {
		t.Fatalf("writer wrote version %d, want %d", b[8], hopsVersion)
	}
	again, err := ReadHops(bytes.NewReader(b))
	if err != nil || !reflect.DeepEqual(again, want) {
		t.Fatalf("version-2 round trip: %v", err)
	}
}

// TestHopsRoundTripRandom round-trips random hop sets, with rows whose ids
// need multi-byte varints (graphs of up to 70 000 nodes, ids beyond
// uint16) and empty graphs.
func TestHopsRoundTripRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 20 {
		kmax := 1 + rng.IntN(4)
		h := &Hops{KMax: kmax}
		for range 1 + rng.IntN(4) {
			n := rng.IntN(50)
			if trial%5 == 0 {
				n = 1 + rng.IntN(70000)
			}
			gh := GraphHops{}
			for range kmax {
				gh.Hop = append(gh.Hop, randomCSR(rng, n))
			}
			if rng.IntN(3) == 0 {
				u := randomCSR(rng, n)
				gh.Unreachable = &u
			}
			h.Graphs = append(h.Graphs, gh)
		}
		b := encodeHops(t, h)
		got, err := ReadHops(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("trial %d: %v", trial, err)
		}
		h.RecordSymmetry()
		if !reflect.DeepEqual(got, h) {
			t.Fatalf("trial %d: round trip changed the hops", trial)
		}
	}
}

// randomCSR returns n sorted rows without their own node, a few entries
// each (far ids included).
func randomCSR(rng *rand.Rand, n int) CSR {
	c := CSR{Ptr: make([]int32, n+1)} // Idx nil when empty, as decoded
	for u := range n {
		seen := map[int32]bool{}
		for range rng.IntN(4) {
			if v := int32(rng.IntN(n)); v != int32(u) {
				seen[v] = true
			}
		}
		row := slices.Sorted(maps.Keys(seen))
		c.Idx = append(c.Idx, row...)
		c.Ptr[u+1] = int32(len(c.Idx))
	}
	return c
}

// resign recomputes the SHA-256 trailer so a test can reach the structural
// checks behind it.
func resign(b []byte) []byte {
	body := b[:len(b)-sha256.Size]
	sum := sha256.Sum256(body)
	return append(append([]byte{}, body...), sum[:]...)
}

func TestDecodeErrorsGolden(t *testing.T) {
	ds := encodeDataset(t, sampleDataset(t))
	hp := encodeHops(t, sampleHops(t))
	flip := func(b []byte, i int) []byte {
		c := append([]byte{}, b...)
		c[i] ^= 0xff
		return c
	}
	set := func(b []byte, i int, v byte) []byte {
		c := append([]byte{}, b...)
		c[i] = v
		return resign(c)
	}
	mol := encodeDataset(t, sampleMolecules(t))
	// Byte offsets into the sample dataset: magic 8, version 4, name len 4,
	// name 6, vocab 20, categorical counts 8, task 1, #graphs 4 -> graph 0
	// at 55: N, nnz, flags, ptr...
	// Into the molecules: name 3, vocab 20, node vocab 4+12 (at 39), edge
	// vocab 4+8, task at 67, #graphs 4 -> graph 0 at 72: N 3, nnz 4, flags,
	// ptr 16, idx 16, node features 36 (at 113), edge features 32.
	cases := []struct {
		name string
		hops bool
		data []byte
	}{
		{"dataset empty", false, nil},
		{"dataset truncated", false, ds[:len(ds)-5]},
		{"dataset bit flip", false, flip(ds, 30)},
		{"dataset bad magic", false, set(ds, 0, 'X')},
		{"dataset bad version", false, set(ds, 8, 9)},
		{"dataset version 1", false, set(ds, 8, 1)},
		{"dataset huge graph count", false, set(ds, 54, 0x7f)},
		{"dataset node id out of range", false, set(ds, 55+9+20, 9)},
		{"dataset label out of range", false, set(ds, 55+9+20+32, 7)},
		{"dataset zero vocabulary", false, set(mol, 43, 0)},
		{"dataset unknown task", false, set(mol, 67, 9)},
		{"dataset binary without tasks", false, set(set(mol, 35, 0), 67, 3)},
		{"dataset node feature out of range", false, set(mol, 113+4, 4)},
		{"dataset edge feature out of range", false, set(mol, 113+36+4, 6)},
		{"dataset unknown flag", false, set(mol, 72+8, 0x40)},
		{"dataset split index out of range", false, set(ds, len(ds)-32-20, 99)},
		{"hops empty", true, nil},
		{"hops bit flip", true, flip(hp, 20)},
		{"hops kmax zero", true, set(hp, 12, 0)},
		// Hops (version 2): magic 8, version 4, KMax 4, #graphs 4, graph 0
		// at 20: N 4, flag 1, hop 1 at 25: nnz 2, B 4, rows at 27: row 0
		// (count 1, gap 1), row 1 (count 1, gap 0).
		{"hops bad version", true, set(hp, 8, 3)},
		{"hops node id out of range", true, set(hp, 28, 5)},
		{"hops self loop", true, set(hp, 28, 0)},
		{"hops row longer than the entry count", true, set(hp, 27, 3)},
		{"hops entry count beyond the bytes", true, set(hp, 25, 0x82)},
		{"hops byte length beyond the file", true, set(hp, 26, 0x7f)},
		{"hops non-minimal varint", true, set(set(hp, 27, 0x81), 28, 0)},
	}
	var out strings.Builder
	for _, tc := range cases {
		var err error
		if tc.hops {
			_, err = ReadHops(bytes.NewReader(tc.data))
		} else {
			_, err = ReadDataset(bytes.NewReader(tc.data))
		}
		if err == nil {
			t.Errorf("%s: decoded without error", tc.name)
			continue
		}
		out.WriteString(tc.name + ": " + err.Error() + "\n")
	}
	golden.CheckString(t, "testdata/codec_errors.golden", out.String())
}

func TestReadFileErrorNamesFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "broken.bin")
	if err := os.WriteFile(path, []byte("SPN-DSET garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := ReadDatasetFile(path)
	if err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("error %v does not name %s", err, path)
	}
	_, err = ReadHopsFile(filepath.Join(t.TempDir(), "missing.bin"))
	if !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing file: got %v", err)
	}
}

func TestWriteRejectsInvalid(t *testing.T) {
	ds := sampleDataset(t)
	ds.Graphs[0].Labels[0] = 5
	if err := WriteDataset(&bytes.Buffer{}, ds); err == nil {
		t.Error("dataset with out-of-range label written")
	}
	h := sampleHops(t)
	h.KMax = 3
	if err := WriteHops(&bytes.Buffer{}, h); err == nil {
		t.Error("hops with wrong hop count written")
	}
}

func FuzzReadDataset(f *testing.F) {
	ds := encodeDataset(f, sampleDataset(f))
	mol := encodeDataset(f, sampleMolecules(f))
	f.Add(mol)
	f.Add(mol[:len(mol)-40])
	f.Add(ds)
	f.Add(ds[:len(ds)/2])
	f.Add(resign(append([]byte{}, ds...)))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := ReadDataset(bytes.NewReader(b))
		if err != nil {
			// Also try with a valid trailer so the structural checks run.
			if len(b) >= sha256.Size {
				_, _ = ReadDataset(bytes.NewReader(resign(b)))
			}
			return
		}
		if err := got.Validate(); err != nil {
			t.Fatalf("decoded dataset is invalid: %v", err)
		}
		// What decodes re-encodes to the same bytes (NaN payloads included).
		var buf bytes.Buffer
		if err := WriteDataset(&buf, got); err != nil {
			t.Fatalf("re-encoding a decoded dataset: %v", err)
		}
		if !bytes.Equal(buf.Bytes(), b) {
			t.Fatal("re-encoding a decoded dataset gives different bytes")
		}
	})
}

func FuzzReadHops(f *testing.F) {
	hp := encodeHops(f, sampleHops(f))
	f.Add(hp)
	f.Add(hp[:len(hp)-3])
	f.Add([]byte("SPN-HOPS"))
	if v1, err := os.ReadFile(filepath.Join("testdata", "hops_v1.bin")); err == nil {
		f.Add(v1)
	}
	big := encodeHops(f, &Hops{KMax: 1, Graphs: []GraphHops{{Hop: []CSR{{Ptr: []int32{0, 1, 1, 2}, Idx: []int32{2, 0}}}}}})
	f.Add(big)
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := ReadHops(bytes.NewReader(b))
		// Keeping only N_1 verifies the same: it fails exactly when the
		// whole read does, and otherwise gives Prefix(1) of it; so does
		// reading it packed, and packing all of it.
		one, kmax, errOne := decodeHops(bytes.NewReader(b), int64(len(b)), 1, false)
		if (err == nil) != (errOne == nil) {
			t.Fatalf("whole read: %v; keeping N_1: %v", err, errOne)
		}
		packedOne, _, errPacked := decodeHops(bytes.NewReader(b), int64(len(b)), 1, true)
		packedAll, _, errAll := decodeHops(bytes.NewReader(b), int64(len(b)), -1, true)
		if (err == nil) != (errPacked == nil) || (err == nil) != (errAll == nil) {
			t.Fatalf("whole read: %v; keeping N_1 packed: %v; all packed: %v", err, errPacked, errAll)
		}
		if err != nil {
			if len(b) >= sha256.Size {
				_, _ = ReadHops(bytes.NewReader(resign(b)))
			}
			return
		}
		if kmax != got.KMax || !reflect.DeepEqual(one, got.Prefix(1)) {
			t.Fatalf("keeping N_1 gave kmax %d and %+v, want %d and %+v", kmax, one, got.KMax, got.Prefix(1))
		}
		if u := unpacked(packedOne); packedOne.Graphs != nil || !reflect.DeepEqual(u, one) {
			t.Fatalf("keeping N_1 packed gave %+v, want %+v", u, one)
		}
		if u := unpacked(packedAll); !reflect.DeepEqual(u, got) {
			t.Fatalf("reading packed gave %+v, want %+v", u, got)
		}
		// The header alone (HopsFileHeader) agrees with the whole read.
		hk, hu, herr := hopsHeader(bytes.NewReader(b), int64(len(b)))
		if wantU := len(got.Graphs) == 0 || got.Graphs[0].Unreachable != nil; herr != nil || hk != got.KMax || hu != wantU {
			t.Fatalf("header: kmax %d, N_∞ %v, %v; the whole read: kmax %d, first graph's N_∞ %v", hk, hu, herr, got.KMax, wantU)
		}
		if err := got.Validate(); err != nil {
			t.Fatalf("decoded hops are invalid: %v", err)
		}
		// A version-2 file re-encodes to the same bytes (varints are
		// minimal, so the encoding is unique).
		if b[8] == hopsVersion {
			var buf bytes.Buffer
			if err := WriteHops(&buf, got); err != nil {
				t.Fatalf("re-encoding decoded hops: %v", err)
			}
			if !bytes.Equal(buf.Bytes(), b) {
				t.Fatal("re-encoding decoded hops gives different bytes")
			}
		}
	})
}

// TestReadHopsFilePrefix checks that reading the first k hop sets of a file
// (both format versions) gives what Prefix gives of the whole file,
// packed (sampleHops keeps N_∞ of its second graph only), and
// that HopsFileHeader reads the header's kmax and the first graph's N_∞
// flag.
func TestReadHopsFilePrefix(t *testing.T) {
	h := sampleHops(t)
	v2 := filepath.Join(t.TempDir(), "hops.bin")
	if err := WriteHopsFile(v2, h); err != nil {
		t.Fatal(err)
	}
	all := &Hops{KMax: h.KMax, Graphs: []GraphHops{h.Graphs[1], h.Graphs[1]}}
	v2all := filepath.Join(t.TempDir(), "all.bin")
	if err := WriteHopsFile(v2all, all); err != nil {
		t.Fatal(err)
	}
	if kmax, unr, err := HopsFileHeader(v2all); err != nil || kmax != h.KMax || !unr || !all.KeptUnreachable() {
		t.Errorf("%s (N_∞ of every graph): HopsFileHeader = %d, %v, %v; KeptUnreachable %v; want %d, true", v2all, kmax, unr, err, all.KeptUnreachable(), h.KMax)
	}
	for _, path := range []string{v2, filepath.Join("testdata", "hops_v1.bin")} {
		kmax, unr, err := HopsFileHeader(path)
		if err != nil || kmax != h.KMax || unr || h.KeptUnreachable() {
			t.Fatalf("%s: HopsFileHeader = %d, %v, %v; KeptUnreachable %v; want %d, false (graph 0 has no N_∞)", path, kmax, unr, err, h.KeptUnreachable(), h.KMax)
		}
		for k := -1; k <= h.KMax+1; k++ {
			got, fileK, err := ReadHopsFilePrefix(path, k)
			if err != nil {
				t.Fatalf("%s, k = %d: %v", path, k, err)
			}
			want := h
			if k >= 0 {
				want = h.Prefix(k)
			}
			if fileK != h.KMax || got.Graphs != nil || !reflect.DeepEqual(unpacked(got), want) {
				t.Errorf("%s, k = %d: got kmax %d, hops %+v; want %d, packed %+v", path, k, fileK, unpacked(got), h.KMax, want)
			}
		}
	}
	// A damaged file fails whatever is kept: every hop set is verified.
	b, err := os.ReadFile(v2)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)-sha256.Size-1] ^= 1
	bad := filepath.Join(t.TempDir(), "bad.bin")
	if err := os.WriteFile(bad, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ReadHopsFilePrefix(bad, 1); err == nil {
		t.Error("a damaged file read without error when keeping one hop set")
	}
	if _, _, err := HopsFileHeader(filepath.Join(t.TempDir(), "missing.bin")); err == nil {
		t.Error("HopsFileHeader of a missing file: no error")
	}
}
