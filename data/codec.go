package data

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"io"
	"math"
	"os"
	"slices"

	"github.com/spn-project/spn/internal/atomicfile"
)

// Binary file formats. Both are little-endian and end in a SHA-256 trailer
// over every preceding byte, so equal values give equal bytes and any
// corruption is detected before decoding.
//
// Dataset file (version 2; version 1 lacked the categorical features and
// the task, and is rejected rather than misread):
//
//	magic "SPN-DSET", u32 version
//	u32 len + name bytes
//	u32 NumLabels, AttrDim, NumEdgeTypes, NumClasses, NumTargets
//	u32 C + u32[C] NodeCatVocab, u32 E + u32[E] EdgeFeatVocab
//	u8 Task (0 "", 1 classification, 2 regression, 3 binary)
//	u32 #graphs, then per graph:
//	  u32 N, u32 nnz, u8 flags (1 edge types, 2 labels, 4 attrs, 8 target,
//	    16 categorical node features, 32 categorical edge features)
//	  i32[N+1] Adj.Ptr, i32[nnz] Adj.Idx
//	  [i32[nnz] EdgeType] [i32[N] Labels] [f32[N*AttrDim] Attrs]
//	  [i32[N*C] NodeCat] [i32[nnz*E] EdgeFeat]
//	  i32 Y, [f64[NumTargets] Target] (NaN kept bit for bit)
//	u32 #splits, per split train, validation, test as u32 len + i32[len]
//	[32]byte SHA-256
//
// Hops file (version 2, written; version 1 is still read, the version
// field tells them apart):
//
//	magic "SPN-HOPS", u32 version, u32 KMax, u32 #graphs, then per graph:
//	  u32 N, u8 hasUnreachable
//	  KMax (+1 if hasUnreachable) CSRs, each
//	    version 2: uvarint nnz, uvarint B, then B bytes: per row u = 0..N-1
//	      uvarint count, then the row's sorted ids as uvarint gaps (the
//	      first id itself, then id - previous id - 1)
//	    version 1: u32 nnz, i32[N+1] Ptr, i32[nnz] Idx
//	[32]byte SHA-256
//
// Version 2 stores D&D's hop sets (kmax 10) in 84 MB instead of 327 MB.
// Its varints are minimal (a longer encoding of a value is rejected), so
// equal hop sets give equal bytes.
const (
	datasetMagic   = "SPN-DSET"
	hopsMagic      = "SPN-HOPS"
	datasetVersion = 2
	hopsVersion    = 2
	// hopsVersionInt32 is the first hops format (raw int32 CSRs), still
	// read so that cached precompute artifacts stay valid.
	hopsVersionInt32 = 1
)

const (
	flagEdgeType = 1 << iota
	flagLabels
	flagAttrs
	flagTarget
	flagNodeCat
	flagEdgeFeat
)

// taskCodes numbers the tasks in the dataset file; the index is the code.
var taskCodes = [...]Task{"", TaskClassification, TaskRegression, TaskBinary}

func taskCode(t Task) (byte, bool) {
	for i, c := range taskCodes {
		if c == t {
			return byte(i), true
		}
	}
	return 0, false
}

// WriteDatasetFile writes ds to path atomically (temporary file + rename).
func WriteDatasetFile(path string, ds *Dataset) error {
	return atomicfile.Write(path, func(w io.Writer) error { return WriteDataset(w, ds) })
}

// ReadDatasetFile reads and validates a dataset file.
func ReadDatasetFile(path string) (*Dataset, error) {
	f, size, err := openSized(path)
	if err != nil {
		return nil, fmt.Errorf("reading dataset: %w", err)
	}
	defer f.Close()
	ds, err := decodeDataset(f, size)
	if err != nil {
		return nil, fmt.Errorf("reading dataset %s: %w", path, err)
	}
	return ds, nil
}

// WriteHopsFile writes h to path atomically (temporary file + rename).
func WriteHopsFile(path string, h *Hops) error {
	return atomicfile.Write(path, func(w io.Writer) error { return WriteHops(w, h) })
}

// ReadHopsFile reads and validates a hops file and records its hop sets'
// symmetry (Hops.RecordSymmetry). The hop sets are decoded (Hops.Graphs);
// ReadHopsFilePrefix reads them packed.
func ReadHopsFile(path string) (*Hops, error) {
	h, _, err := readHopsFile(path, -1, false)
	return h, err
}

// HopsFileHeader returns the kmax a hops file declares in its header and
// whether it holds N_∞ (the flag of its first graph: one precompute
// keeps N_∞ of every graph or of none; true for a file of no graphs),
// reading nothing after the first graph's flag (ReadHopsFile and
// ReadHopsFilePrefix verify the whole file).
func HopsFileHeader(path string) (kmax int, unreachable bool, err error) {
	f, size, err := openSized(path)
	if err != nil {
		return 0, false, fmt.Errorf("reading hops: %w", err)
	}
	defer f.Close()
	kmax, unreachable, err = hopsHeader(f, size)
	if err != nil {
		return 0, false, fmt.Errorf("reading hops %s: %w", path, err)
	}
	return kmax, unreachable, nil
}

// hopsHeader is HopsFileHeader of the size bytes of r.
func hopsHeader(r io.Reader, size int64) (kmax int, unreachable bool, err error) {
	d, err := newDecoder(r, size, hopsMagic, hopsVersion, hopsVersionInt32)
	if err != nil {
		return 0, false, err
	}
	kmax, ng, err := d.hopsHead()
	unreachable = true // a file of no graphs
	if err == nil && ng > 0 {
		_, unreachable, err = d.hopsGraphHead(0, kmax)
	}
	if err == nil {
		err = d.err
	}
	if err != nil {
		return 0, false, err
	}
	return kmax, unreachable, nil
}

// ReadHopsFilePrefix reads and validates a hops file like ReadHopsFile but
// keeps only N_1..N_k of every graph (all of them when k < 0 or k ≥ the
// file's kmax), and N_∞ where the file has it, as Hops.Prefix would,
// and returns them packed (Hops.Packed): every graph is decoded,
// validated and its symmetry recorded (Hops.RecordSymmetry), then its
// kept sets are packed and the decoded ones dropped, so neither the sets
// it does not keep nor the decoded form of all graphs is ever held: a
// training stage holds its hop sets in about the file's size, and a
// model that reads few hop sets of a large kmax artifact does not pay for
// the others. A file that keeps N_∞ for some graphs only is read as
// such (a graph without it has none in the result). It also returns the
// file's kmax (the result's KMax is min(k, kmax)).
func ReadHopsFilePrefix(path string, k int) (*Hops, int, error) {
	return readHopsFile(path, k, true)
}

// readHopsFile is ReadHopsFilePrefix, returning the hop sets packed or
// decoded.
func readHopsFile(path string, k int, packed bool) (*Hops, int, error) {
	f, size, err := openSized(path)
	if err != nil {
		return nil, 0, fmt.Errorf("reading hops: %w", err)
	}
	defer f.Close()
	h, kmax, err := decodeHops(f, size, k, packed)
	if err != nil {
		return nil, 0, fmt.Errorf("reading hops %s: %w", path, err)
	}
	return h, kmax, nil
}

// ReadDataset reads and validates a dataset from r (read to the end).
func ReadDataset(r io.Reader) (*Dataset, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("reading dataset: %w", err)
	}
	ds, err := decodeDataset(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		return nil, fmt.Errorf("reading dataset: %w", err)
	}
	return ds, nil
}

// ReadHops reads and validates hop sets from r (read to the end) and
// records their symmetry (Hops.RecordSymmetry).
func ReadHops(r io.Reader) (*Hops, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("reading hops: %w", err)
	}
	h, _, err := decodeHops(bytes.NewReader(b), int64(len(b)), -1, false)
	if err != nil {
		return nil, fmt.Errorf("reading hops: %w", err)
	}
	return h, nil
}

// WriteDataset validates ds and writes it to w in the dataset format.
func WriteDataset(w io.Writer, ds *Dataset) error {
	if err := ds.Validate(); err != nil {
		return fmt.Errorf("writing dataset: %w", err)
	}
	e := newEncoder(w)
	e.bytes([]byte(datasetMagic))
	e.u32(datasetVersion)
	e.u32(uint32(len(ds.Name)))
	e.bytes([]byte(ds.Name))
	for _, v := range []int{ds.NumLabels, ds.AttrDim, ds.NumEdgeTypes, ds.NumClasses, ds.NumTargets} {
		e.u32(uint32(v))
	}
	for _, vocab := range [][]int{ds.NodeCatVocab, ds.EdgeFeatVocab} {
		e.u32(uint32(len(vocab)))
		for _, v := range vocab {
			e.u32(uint32(v))
		}
	}
	code, ok := taskCode(ds.Task)
	if !ok { // Validate rejects unknown tasks; kept as a guard.
		return fmt.Errorf("writing dataset: unknown task %q", ds.Task)
	}
	e.bytes([]byte{code})
	e.u32(uint32(len(ds.Graphs)))
	for i := range ds.Graphs {
		g := &ds.Graphs[i]
		var flags byte
		if g.EdgeType != nil {
			flags |= flagEdgeType
		}
		if g.Labels != nil {
			flags |= flagLabels
		}
		if g.Attrs != nil {
			flags |= flagAttrs
		}
		if g.Target != nil {
			flags |= flagTarget
		}
		if g.NodeCat != nil {
			flags |= flagNodeCat
		}
		if g.EdgeFeat != nil {
			flags |= flagEdgeFeat
		}
		e.u32(uint32(g.N))
		e.u32(uint32(len(g.Adj.Idx)))
		e.bytes([]byte{flags})
		e.i32s(g.Adj.Ptr)
		e.i32s(g.Adj.Idx)
		if g.EdgeType != nil {
			e.i32s(g.EdgeType)
		}
		if g.Labels != nil {
			e.i32s(g.Labels)
		}
		if g.Attrs != nil {
			e.f32s(g.Attrs)
		}
		if g.NodeCat != nil {
			e.i32s(g.NodeCat)
		}
		if g.EdgeFeat != nil {
			e.i32s(g.EdgeFeat)
		}
		e.u32(uint32(int32(g.Y)))
		if g.Target != nil {
			e.f64s(g.Target)
		}
	}
	e.u32(uint32(len(ds.Splits)))
	for _, s := range ds.Splits {
		for _, part := range [][]int{s.Train, s.Val, s.Test} {
			e.u32(uint32(len(part)))
			for _, v := range part {
				e.u32(uint32(int32(v)))
			}
		}
	}
	if err := e.finish(); err != nil {
		return fmt.Errorf("writing dataset: %w", err)
	}
	return nil
}

// WriteHops validates h and writes it to w in the hops format; packed hop
// sets are decoded graph by graph.
func WriteHops(w io.Writer, h *Hops) error {
	if err := h.Validate(); err != nil {
		return fmt.Errorf("writing hops: %w", err)
	}
	e := newEncoder(w)
	e.bytes([]byte(hopsMagic))
	e.u32(hopsVersion)
	e.u32(uint32(h.KMax))
	e.u32(uint32(h.NumGraphs()))
	var rows []byte // one CSR's encoded rows, reused
	for i := range h.NumGraphs() {
		gh := h.Graph(i)
		n := 0
		if len(gh.Hop) > 0 {
			n = gh.Hop[0].Len()
		}
		e.u32(uint32(n))
		csrs := gh.Hop
		if gh.Unreachable != nil {
			e.bytes([]byte{1})
			csrs = append(csrs[:len(csrs):len(csrs)], *gh.Unreachable)
		} else {
			e.bytes([]byte{0})
		}
		for _, c := range csrs {
			rows = appendRows(rows[:0], c)
			e.bytes(binary.AppendUvarint(e.buf[:0], uint64(len(c.Idx))))
			e.bytes(binary.AppendUvarint(e.buf[:0], uint64(len(rows))))
			e.bytes(rows)
		}
	}
	if err := e.finish(); err != nil {
		return fmt.Errorf("writing hops: %w", err)
	}
	return nil
}

// appendRows appends the version-2 encoding of c's rows to b: per row its
// length, then the gaps between its sorted ids (c is valid, so rows are
// strictly increasing and every gap is ≥ 0).
func appendRows(b []byte, c CSR) []byte {
	for u := 0; u+1 < len(c.Ptr); u++ {
		row := c.Row(u)
		b = binary.AppendUvarint(b, uint64(len(row)))
		prev := int32(-1)
		for _, v := range row {
			b = binary.AppendUvarint(b, uint64(v-prev-1))
			prev = v
		}
	}
	return b
}

// Validate checks that every graph has KMax hop CSRs over the same node
// count, with sorted in-range rows that never contain their own node.
// Packed hop sets are decoded graph by graph; corrupt packed bytes are an
// error.
func (h *Hops) Validate() error {
	if h.KMax < 1 {
		return fmt.Errorf("hops: KMax %d < 1", h.KMax)
	}
	for i := range h.NumGraphs() {
		var gh GraphHops
		if h.packed != nil {
			var err error
			if gh, err = h.unpackGraph(i); err != nil {
				return fmt.Errorf("hops: %w", err)
			}
		} else {
			gh = h.Graphs[i]
		}
		if len(gh.Hop) != h.KMax {
			return fmt.Errorf("hops: graph %d has %d hop sets, want %d", i, len(gh.Hop), h.KMax)
		}
		n := gh.Hop[0].Len()
		for k, c := range gh.Hop {
			if err := ValidateCSR(c, n, n, true); err != nil {
				return fmt.Errorf("hops: graph %d hop %d: %w", i, k+1, err)
			}
		}
		if gh.Unreachable != nil {
			if err := ValidateCSR(*gh.Unreachable, n, n, true); err != nil {
				return fmt.Errorf("hops: graph %d unreachable set: %w", i, err)
			}
		}
	}
	return nil
}

// Matches checks that h was computed for ds: same number of graphs and the
// same node count per graph (its N_1's rows, so hop sets without N_1 do
// not match).
func (h *Hops) Matches(ds *Dataset) error {
	if h.NumGraphs() != len(ds.Graphs) {
		return fmt.Errorf("hops hold %d graphs, dataset %q has %d", h.NumGraphs(), ds.Name, len(ds.Graphs))
	}
	if p := h.packed; p != nil {
		for i := range p.numGraphs() {
			if h.KMax < 1 || p.nnz[p.hop(i, 1)] < 0 || int(p.n[i]) != ds.Graphs[i].N {
				return fmt.Errorf("hops of graph %d do not cover its %d nodes", i, ds.Graphs[i].N)
			}
		}
		return nil
	}
	for i, gh := range h.Graphs {
		if len(gh.Hop) == 0 || gh.Hop[0].Len() != ds.Graphs[i].N {
			return fmt.Errorf("hops of graph %d do not cover its %d nodes", i, ds.Graphs[i].N)
		}
	}
	return nil
}

// encoder writes little-endian values through a buffer while hashing them;
// the first error sticks.
type encoder struct {
	w   *bufio.Writer
	h   hash.Hash
	out io.Writer
	buf []byte
	err error
}

func newEncoder(w io.Writer) *encoder {
	h := sha256.New()
	bw := bufio.NewWriterSize(io.MultiWriter(w, h), 1<<16)
	return &encoder{w: bw, h: h, out: w, buf: make([]byte, 0, 1<<14)}
}

func (e *encoder) bytes(b []byte) {
	if e.err == nil {
		_, e.err = e.w.Write(b)
	}
}

func (e *encoder) u32(v uint32) {
	e.bytes(binary.LittleEndian.AppendUint32(e.buf[:0], v))
}

func (e *encoder) i32s(vs []int32) {
	for len(vs) > 0 && e.err == nil {
		n := min(len(vs), cap(e.buf)/4)
		b := e.buf[:0]
		for _, v := range vs[:n] {
			b = binary.LittleEndian.AppendUint32(b, uint32(v))
		}
		e.bytes(b)
		vs = vs[n:]
	}
}

func (e *encoder) f32s(vs []float32) {
	for len(vs) > 0 && e.err == nil {
		n := min(len(vs), cap(e.buf)/4)
		b := e.buf[:0]
		for _, v := range vs[:n] {
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
		}
		e.bytes(b)
		vs = vs[n:]
	}
}

func (e *encoder) f64s(vs []float64) {
	for _, v := range vs {
		e.bytes(binary.LittleEndian.AppendUint64(e.buf[:0], math.Float64bits(v)))
	}
}

// finish flushes the data and appends the SHA-256 trailer.
func (e *encoder) finish() error {
	if e.err != nil {
		return e.err
	}
	if err := e.w.Flush(); err != nil {
		return err
	}
	// The trailer goes to the underlying writer only, not into the hash.
	_, err := e.out.Write(e.h.Sum(nil))
	return err
}

// errTruncated reports a file that ends early.
var errTruncated = errors.New("unexpected end of data")

// decoder reads little-endian values from a stream whose length is known,
// hashing what it consumes; counts are checked against the bytes left so a
// corrupted count cannot cause a huge allocation. Arrays are decoded chunk
// by chunk, so reading a file needs little more memory than its values.
type decoder struct {
	r      *bufio.Reader
	h      hash.Hash
	remain int64 // body bytes left (the trailer excluded)
	off    int64
	err    error
	buf    []byte
	// version is the file's format version.
	version uint32
	// blob is a reusable buffer for variable-length sections.
	blob []byte
}

// newDecoder checks the file's length and magic and that its version is
// one of versions (the first is the current one, named in the error); size
// is the total length including the SHA-256 trailer. d.version is the
// file's version.
func newDecoder(r io.Reader, size int64, magic string, versions ...uint32) (*decoder, error) {
	if size < int64(len(magic))+4+sha256.Size {
		return nil, fmt.Errorf("file of %d bytes is too short", size)
	}
	d := &decoder{r: bufio.NewReaderSize(r, 1<<16), h: sha256.New(), remain: size - sha256.Size, buf: make([]byte, 1<<16)}
	m := d.take(len(magic))
	if d.err != nil {
		return nil, d.err
	}
	if string(m) != magic {
		return nil, d.finish(fmt.Errorf("bad magic %q, want %q", m, magic))
	}
	d.version = d.u32()
	if d.err == nil && !slices.Contains(versions, d.version) {
		return nil, d.finish(fmt.Errorf("unsupported format version %d, want %d", d.version, versions[0]))
	}
	return d, nil
}

// finish consumes the rest of the body and checks the trailer. A checksum
// mismatch takes precedence over decodeErr (it is the root cause); trailing
// bytes after a successful decode are an error.
func (d *decoder) finish(decodeErr error) error {
	if decodeErr == nil && d.err == nil && d.remain != 0 {
		decodeErr = fmt.Errorf("%d trailing bytes after the data", d.remain)
	}
	if decodeErr == nil {
		decodeErr = d.err
	}
	d.err = nil
	for d.remain > 0 && d.err == nil {
		d.take(int(min(d.remain, int64(len(d.buf)))))
	}
	if d.err != nil {
		return fmt.Errorf("checksum mismatch (file corrupted or truncated): %w", d.err)
	}
	var trailer [sha256.Size]byte
	if _, err := io.ReadFull(d.r, trailer[:]); err != nil {
		return fmt.Errorf("checksum mismatch (file corrupted or truncated): reading trailer: %w", err)
	}
	if !bytes.Equal(d.h.Sum(nil), trailer[:]) {
		return errors.New("checksum mismatch (file corrupted or truncated)")
	}
	if n, _ := io.Copy(io.Discard, d.r); n > 0 {
		return fmt.Errorf("%d bytes after the checksum", n)
	}
	return decodeErr
}

// take returns the next n bytes (n <= len(d.buf)) in a buffer that is only
// valid until the next call.
func (d *decoder) take(n int) []byte {
	if d.err != nil {
		return nil
	}
	if n < 0 || int64(n) > d.remain {
		d.err = fmt.Errorf("at byte %d: %w", d.off, errTruncated)
		return nil
	}
	b := d.buf[:n]
	if _, err := io.ReadFull(d.r, b); err != nil {
		d.err = fmt.Errorf("at byte %d: %w", d.off, errTruncated)
		return nil
	}
	d.h.Write(b)
	d.remain -= int64(n)
	d.off += int64(n)
	return b
}

func (d *decoder) u8() byte {
	s := d.take(1)
	if s == nil {
		return 0
	}
	return s[0]
}

func (d *decoder) u32() uint32 {
	s := d.take(4)
	if s == nil {
		return 0
	}
	return binary.LittleEndian.Uint32(s)
}

// fits checks that n items of size bytes remain.
func (d *decoder) fits(n, size uint64, what string) bool {
	if d.err != nil {
		return false
	}
	if n*size > uint64(d.remain) {
		d.err = fmt.Errorf("at byte %d: %s %d exceeds the remaining data", d.off, what, n)
		return false
	}
	return true
}

// count reads a u32 count of items of size bytes each and checks that that
// many bytes remain.
func (d *decoder) count(size int, what string) int {
	v := d.u32()
	if d.err != nil {
		return 0
	}
	d.off -= 4
	ok := d.fits(uint64(v), uint64(size), what)
	d.off += 4
	if !ok {
		return 0
	}
	return int(v)
}

// words decodes n 4-byte words chunk by chunk through conv.
func (d *decoder) words(n int, conv func(i int, w uint32)) {
	if !d.fits(uint64(n), 4, "array length") {
		return
	}
	for i := 0; i < n && d.err == nil; {
		k := min(n-i, len(d.buf)/4)
		s := d.take(4 * k)
		for j := 0; j < k && s != nil; j++ {
			conv(i+j, binary.LittleEndian.Uint32(s[4*j:]))
		}
		i += k
	}
}

func (d *decoder) i32s(n int) []int32 {
	if n == 0 || !d.fits(uint64(n), 4, "array length") {
		return nil
	}
	out := make([]int32, n)
	d.words(n, func(i int, w uint32) { out[i] = int32(w) })
	return out
}

// flagged returns the n values of a slice whose flag is set: empty but not
// nil when n == 0, so a round trip keeps the flag.
func (d *decoder) flagged(n int) []int32 {
	if n == 0 {
		return []int32{}
	}
	return d.i32s(n)
}

func (d *decoder) f32s(n int) []float32 {
	if n == 0 || !d.fits(uint64(n), 4, "array length") {
		return nil
	}
	out := make([]float32, n)
	d.words(n, func(i int, w uint32) { out[i] = math.Float32frombits(w) })
	return out
}

func (d *decoder) f64s(n int) []float64 {
	if n == 0 || !d.fits(uint64(n), 8, "array length") {
		return nil
	}
	out := make([]float64, n)
	for i := range out {
		s := d.take(8)
		if s == nil {
			return nil
		}
		out[i] = math.Float64frombits(binary.LittleEndian.Uint64(s))
	}
	return out
}

// uvarint reads a minimal unsigned varint.
func (d *decoder) uvarint(what string) uint64 {
	var v uint64
	for i := 0; d.err == nil; i++ {
		s := d.take(1)
		if s == nil {
			return 0
		}
		b := s[0]
		if i == 9 && b > 1 || b == 0 && i > 0 {
			d.err = fmt.Errorf("at byte %d: %s: bad varint", d.off-1, what)
			return 0
		}
		v |= uint64(b&0x7f) << (7 * i)
		if b < 0x80 {
			return v
		}
	}
	return 0
}

// bytesN returns the next n bytes (n ≤ d.remain) in d.blob, valid until
// the next call.
func (d *decoder) bytesN(n int) []byte {
	if !d.fits(uint64(n), 1, "section length") {
		return nil
	}
	if cap(d.blob) < n {
		d.blob = make([]byte, n)
	}
	b := d.blob[:n]
	for i := 0; i < n && d.err == nil; {
		k := min(n-i, len(d.buf))
		s := d.take(k)
		copy(b[i:], s)
		i += k
	}
	if d.err != nil {
		return nil
	}
	return b
}

// rowsCSR decodes a version-2 CSR of n rows: nnz, the byte length B of the
// rows, and the rows (count, id gaps). The arrays are allocated once at
// their final size, so a file decodes into one copy of its hop sets.
func (d *decoder) rowsCSR(n int, what string) CSR {
	nnz := d.uvarint(what + " entry count")
	size := d.uvarint(what + " byte length")
	if d.err != nil {
		return CSR{}
	}
	// Every row takes one byte at least, and so does every entry.
	if size < nnz || size < uint64(n) {
		d.err = fmt.Errorf("at byte %d: %s: %d entries in %d rows do not fit in %d bytes", d.off, what, nnz, n, size)
		return CSR{}
	}
	if size > uint64(d.remain) {
		d.err = fmt.Errorf("at byte %d: %s: byte length %d exceeds the remaining data", d.off, what, size)
		return CSR{}
	}
	rows := d.bytesN(int(size))
	if d.err != nil {
		return CSR{}
	}
	c, err := decodeCSR(rows, n, int(nnz))
	if err != nil {
		d.err = fmt.Errorf("%s: %w", what, err)
		return CSR{}
	}
	return c
}

func (d *decoder) csr(n int, what string) CSR {
	nnz := d.count(4, what+" entry count")
	ptr := d.i32s(n + 1)
	idx := d.i32s(nnz)
	return CSR{Ptr: ptr, Idx: idx}
}

func decodeDataset(r io.Reader, size int64) (*Dataset, error) {
	d, err := newDecoder(r, size, datasetMagic, datasetVersion)
	if err != nil {
		return nil, err
	}
	ds, err := d.dataset()
	if err := d.finish(err); err != nil {
		return nil, err
	}
	return ds, nil
}

// dataset decodes a dataset: the header (name, vocabularies, task), the
// graphs and the splits.
func (d *decoder) dataset() (*Dataset, error) {
	ds := &Dataset{}
	if err := d.datasetHeader(ds); err != nil {
		return nil, err
	}
	// Every graph takes at least 13 bytes.
	ng := d.count(13, "graph count")
	ds.Graphs = make([]Graph, ng)
	for i := 0; i < ng && d.err == nil; i++ {
		if err := d.graph(ds, i); err != nil {
			return nil, err
		}
	}
	if err := d.splits(ds); err != nil {
		return nil, err
	}
	if d.err != nil {
		return nil, d.err
	}
	return ds, nil
}

// datasetHeader decodes ds's name, vocabulary sizes and task.
func (d *decoder) datasetHeader(ds *Dataset) error {
	nameLen := d.count(1, "name length")
	if nameLen > len(d.buf) {
		return fmt.Errorf("name of %d bytes is too long", nameLen)
	}
	ds.Name = string(d.take(nameLen))
	vocab := []*int{&ds.NumLabels, &ds.AttrDim, &ds.NumEdgeTypes, &ds.NumClasses, &ds.NumTargets}
	for _, p := range vocab {
		v := d.u32()
		if v > math.MaxInt32 {
			return fmt.Errorf("vocabulary size %d out of range", v)
		}
		*p = int(v)
	}
	for _, vocab := range []*[]int{&ds.NodeCatVocab, &ds.EdgeFeatVocab} {
		m := d.count(4, "categorical feature count")
		for j := 0; j < m && d.err == nil; j++ {
			v := d.u32()
			if d.err == nil && (v < 1 || v > math.MaxInt32) {
				return fmt.Errorf("categorical feature %d: vocabulary size %d out of range", j, v)
			}
			*vocab = append(*vocab, int(v))
		}
	}
	code := d.u8()
	if d.err == nil {
		if int(code) >= len(taskCodes) {
			return fmt.Errorf("unknown task code %d", code)
		}
		ds.Task = taskCodes[code]
		if ds.Task == TaskBinary && ds.NumTargets < 1 {
			return fmt.Errorf("binary task with %d targets", ds.NumTargets)
		}
	}
	return nil
}

// graph decodes graph i of ds (its vocabularies decoded) and validates it.
func (d *decoder) graph(ds *Dataset, i int) error {
	g := &ds.Graphs[i]
	n := d.count(4, "node count")
	nnz := d.count(4, "edge entry count")
	flags := d.u8()
	if flags&^(flagEdgeType|flagLabels|flagAttrs|flagTarget|flagNodeCat|flagEdgeFeat) != 0 {
		return fmt.Errorf("graph %d: unknown flags %#x", i, flags)
	}
	g.N = n
	g.Adj.Ptr = d.i32s(n + 1)
	g.Adj.Idx = d.i32s(nnz)
	if flags&flagEdgeType != 0 {
		g.EdgeType = d.flagged(nnz)
	}
	if flags&flagLabels != 0 {
		g.Labels = d.flagged(n)
	}
	if flags&flagAttrs != 0 {
		if !d.fits(uint64(n)*uint64(ds.AttrDim), 4, "attribute count") {
			return fmt.Errorf("graph %d: %w", i, d.err)
		}
		g.Attrs = d.f32s(n * ds.AttrDim)
		if g.Attrs == nil && d.err == nil {
			g.Attrs = []float32{}
		}
	}
	if flags&flagNodeCat != 0 {
		if !d.fits(uint64(n)*uint64(len(ds.NodeCatVocab)), 4, "categorical node feature count") {
			return fmt.Errorf("graph %d: %w", i, d.err)
		}
		g.NodeCat = d.flagged(n * len(ds.NodeCatVocab))
	}
	if flags&flagEdgeFeat != 0 {
		if !d.fits(uint64(nnz)*uint64(len(ds.EdgeFeatVocab)), 4, "categorical edge feature count") {
			return fmt.Errorf("graph %d: %w", i, d.err)
		}
		g.EdgeFeat = d.flagged(nnz * len(ds.EdgeFeatVocab))
	}
	g.Y = int(int32(d.u32()))
	if flags&flagTarget != 0 {
		if !d.fits(uint64(ds.NumTargets), 8, "target count") {
			return fmt.Errorf("graph %d: %w", i, d.err)
		}
		g.Target = d.f64s(ds.NumTargets)
		if g.Target == nil && d.err == nil {
			g.Target = []float64{}
		}
	}
	if d.err != nil {
		return fmt.Errorf("graph %d: %w", i, d.err)
	}
	if err := g.Validate(ds); err != nil {
		return fmt.Errorf("graph %d: %w", i, err)
	}
	return nil
}

// splits decodes ds's splits and validates them against its graphs.
func (d *decoder) splits(ds *Dataset) error {
	ns := d.count(12, "split count")
	for i := 0; i < ns && d.err == nil; i++ {
		var parts [3][]int
		for p := range parts {
			m := d.count(4, "split length")
			for _, v := range d.i32s(m) {
				parts[p] = append(parts[p], int(v))
			}
		}
		s := Split{Train: parts[0], Val: parts[1], Test: parts[2]}
		if d.err == nil {
			if err := s.Validate(len(ds.Graphs)); err != nil {
				return fmt.Errorf("split %d: %w", i, err)
			}
		}
		ds.Splits = append(ds.Splits, s)
	}
	return nil
}

// decodeHops decodes hop sets, keeping N_1..N_keep of every graph (all
// when keep < 0), packed or decoded, and returns them with the file's
// kmax.
func decodeHops(r io.Reader, size int64, keep int, packed bool) (*Hops, int, error) {
	d, err := newDecoder(r, size, hopsMagic, hopsVersion, hopsVersionInt32)
	if err != nil {
		return nil, 0, err
	}
	h, kmax, err := d.hops(keep, packed)
	if err := d.finish(err); err != nil {
		return nil, 0, err
	}
	return h, kmax, nil
}

// hopsHead reads a hops file's kmax (1..65536) and graph count. Every
// graph takes at least 5 + KMax*8 bytes in version 1, 5 + KMax*2 in
// version 2, and every node 4*KMax resp. KMax bytes (hopsGraphHead).
func (d *decoder) hopsHead() (kmax, ng int, err error) {
	k := d.u32()
	if d.err == nil && (k < 1 || k > 1<<16) {
		return 0, 0, fmt.Errorf("KMax %d out of range 1..65536", k)
	}
	perCSR := 8
	if d.version == hopsVersion {
		perCSR = 2
	}
	return int(k), d.count(5+perCSR*int(k), "graph count"), nil
}

// hopsGraphHead reads graph i's node count and whether its N_∞ follows.
func (d *decoder) hopsGraphHead(i, kmax int) (n int, unreachable bool, err error) {
	perNode := 4
	if d.version == hopsVersion {
		perNode = 1
	}
	n = d.count(perNode*kmax, "node count")
	flag := d.u8()
	if flag > 1 {
		return 0, false, fmt.Errorf("graph %d: bad unreachable flag %d", i, flag)
	}
	return n, flag == 1, nil
}

// hops decodes the hop sets of a hops file graph by graph, validating
// every one and recording the symmetry of those it keeps, N_1..N_keep
// and N_∞ (all hop sets when keep < 0 or keep > kmax). Packed, each
// graph's kept sets are packed (Hops.Packed) before the next graph is
// decoded, so only one graph is ever held decoded.
func (d *decoder) hops(keep int, packed bool) (*Hops, int, error) {
	kmax, ng, err := d.hopsHead()
	if err != nil {
		return nil, 0, err
	}
	if keep < 0 || keep > kmax {
		keep = kmax
	}
	h := &Hops{KMax: keep}
	var pk *packer
	if packed {
		// When every set is kept, the rows take at most what is left
		// of a version-2 file; else the buffer grows as needed.
		rowsCap := 0
		if keep == kmax && d.version == hopsVersion {
			rowsCap = int(d.remain)
		}
		pk = newPacker(keep, ng, rowsCap)
	} else {
		h.Graphs = make([]GraphHops, ng)
	}
	sym := newSymRecorder(keep)
	csr := d.csr
	if d.version == hopsVersion {
		csr = d.rowsCSR
	}
	for i := 0; i < ng && d.err == nil; i++ {
		n, unreachable, err := d.hopsGraphHead(i, kmax)
		if err != nil {
			return nil, 0, err
		}
		gh := GraphHops{Hop: make([]CSR, keep)}
		for k := range kmax {
			c := csr(n, "hop")
			if d.err == nil {
				if err := ValidateCSR(c, n, n, true); err != nil {
					return nil, 0, fmt.Errorf("graph %d hop %d: %w", i, k+1, err)
				}
			}
			if k < keep {
				gh.Hop[k] = c
			}
		}
		if unreachable {
			c := csr(n, "unreachable")
			if d.err == nil {
				if err := ValidateCSR(c, n, n, true); err != nil {
					return nil, 0, fmt.Errorf("graph %d unreachable set: %w", i, err)
				}
			}
			gh.Unreachable = &c
		}
		if d.err != nil {
			return nil, 0, fmt.Errorf("graph %d: %w", i, d.err)
		}
		sym.add(i, &gh)
		if packed {
			pk.add(n, gh.Hop, gh.Unreachable)
		} else {
			h.Graphs[i] = gh
		}
	}
	if d.err != nil {
		return nil, 0, d.err
	}
	if packed {
		h.packed = pk.finish()
	}
	h.sym = sym.s
	return h, kmax, nil
}

// openSized opens path and returns its size.
func openSized(path string) (*os.File, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	return f, st.Size(), nil
}
