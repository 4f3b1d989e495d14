package data

import (
	"encoding/binary"
	"fmt"
	"slices"
)

// packedHops holds the hop sets of a dataset in the row coding of the hops
// file (version 2, appendRows): per set, per row its count, then the gaps
// between its sorted ids, all as uvarints. Its arrays hold no pointers, so
// the garbage collector does not scan them, and they take about a quarter
// of the int32 CSRs they code.
//
// Graph g stores stride sets, numbered s = g*stride + j: j = 0..hops-1 are
// N_1..N_hops, and, when unreachable is set, j = stride-1 is N_∞. A set
// that a graph does not have (N_∞ not kept for it in a file that keeps
// some, N_i of hop sets built by hand with fewer) is absent: nnz -1 and
// no bytes. A Hops over packed sets keeps KMax ≤ hops of them, so
// that Prefix shares the arrays.
type packedHops struct {
	// rows holds every set's rows back to back: set s is
	// rows[start[s]:start[s+1]].
	rows []byte
	// start has one entry per set and one more.
	start []int64
	// nnz is the number of entries of every set, -1 when it is absent.
	nnz []int32
	// n is the node count of every graph.
	n []int32
	// stride is the number of sets stored per graph, hops the number of
	// hop sets N_1..N_hops among them.
	stride, hops int
	// unreachable says that the last set of every graph is N_∞.
	unreachable bool
}

// numGraphs returns the number of graphs.
func (p *packedHops) numGraphs() int { return len(p.n) }

// hop returns the set number of N_i of graph g (1 ≤ i ≤ p.hops).
func (p *packedHops) hop(g, i int) int { return g*p.stride + i - 1 }

// unr returns the set number of N_∞ of graph g, -1 when none is stored.
func (p *packedHops) unr(g int) int {
	if !p.unreachable {
		return -1
	}
	s := g*p.stride + p.stride - 1
	if p.nnz[s] < 0 {
		return -1
	}
	return s
}

// set returns the coded rows and the entry count of set s.
func (p *packedHops) set(s int) ([]byte, int) {
	return p.rows[p.start[s]:p.start[s+1]], int(p.nnz[s])
}

// packer builds a packedHops graph by graph.
type packer struct {
	p *packedHops
	// anyUnr says that some graph has its N_∞.
	anyUnr bool
}

// newPacker returns a packer of hops hop sets per graph for about graphs
// graphs, its rows buffer sized for rowsCap bytes. It stores an N_∞ slot
// per graph, which finish drops when no graph fills it.
func newPacker(hops, graphs, rowsCap int) *packer {
	stride := hops + 1
	return &packer{p: &packedHops{
		rows:        make([]byte, 0, rowsCap),
		start:       append(make([]int64, 0, graphs*stride+1), 0),
		nnz:         make([]int32, 0, graphs*stride),
		n:           make([]int32, 0, graphs),
		stride:      stride,
		hops:        hops,
		unreachable: true,
	}}
}

// add packs the hop sets of one graph of n nodes: N_1..N_hops of hop (a
// set beyond len(hop) is absent) and N_∞ when unr is not nil. Every set
// must be a valid CSR over n nodes with sorted rows (ValidateCSR), which
// the coding needs.
func (pk *packer) add(n int, hop []CSR, unr *CSR) {
	p := pk.p
	p.n = append(p.n, int32(n))
	for j := range p.hops {
		var c *CSR
		if j < len(hop) {
			c = &hop[j]
		}
		pk.set(c)
	}
	pk.set(unr)
	pk.anyUnr = pk.anyUnr || unr != nil
}

// set packs one set, absent when c is nil.
func (pk *packer) set(c *CSR) {
	p := pk.p
	nnz := int32(-1)
	if c != nil {
		p.rows = appendRows(p.rows, *c)
		nnz = int32(len(c.Idx))
	}
	p.nnz = append(p.nnz, nnz)
	p.start = append(p.start, int64(len(p.rows)))
}

// finish returns the packed sets: without the N_∞ slot when no graph
// filled it, the rows buffer trimmed when it is much larger than needed.
func (pk *packer) finish() *packedHops {
	p := pk.p
	if !pk.anyUnr {
		// Every N_∞ slot is absent and holds no bytes: drop them.
		w := 0
		for s := range p.nnz {
			if s%p.stride == p.stride-1 {
				continue
			}
			p.nnz[w] = p.nnz[s]
			p.start[w+1] = p.start[s+1]
			w++
		}
		p.nnz, p.start = p.nnz[:w], p.start[:w+1]
		p.stride--
		p.unreachable = false
	}
	if cap(p.rows)-len(p.rows) > len(p.rows)/8 {
		p.rows = append([]byte(nil), p.rows...)
	}
	p.nnz, p.start, p.n = slices.Clip(p.nnz), slices.Clip(p.start), slices.Clip(p.n)
	return p
}

// Packed returns h's hop sets packed: held in the row coding of the hops
// file (about a quarter of the memory of the int32 CSRs for sparse hop
// sets, in a few flat arrays that the garbage collector does not scan)
// and decoded graph by graph as NewBatchWith builds a batch, which comes
// out the same as from h. The result's Graphs is nil (Graph and NumGraphs
// read it); it has h's KMax and symmetry record (RecordSymmetry) and
// keeps N_1..N_KMax of every graph and its N_∞ where h keeps it. h is
// left unchanged; a packed h is returned itself.
//
// Every hop set of h must be a valid CSR over its graph's nodes with
// strictly ascending rows (ValidateCSR), as those of data/sp and of the
// hops readers are: Packed panics, naming the graph and set, when one is
// not. A graph with fewer than KMax hop sets lacks the others in the
// result too (NewBatchWith then fails for it, as it does for h); sets
// beyond KMax are not kept.
func (h *Hops) Packed() *Hops {
	if h.packed != nil {
		return h
	}
	size := 0
	for _, gh := range h.Graphs {
		for _, c := range gh.Hop[:min(len(gh.Hop), h.KMax)] {
			size += len(c.Ptr) + len(c.Idx)
		}
		if gh.Unreachable != nil {
			size += len(gh.Unreachable.Ptr) + len(gh.Unreachable.Idx)
		}
	}
	// Sparse rows take about a byte per row and per entry.
	pk := newPacker(h.KMax, len(h.Graphs), size)
	for g, gh := range h.Graphs {
		hop := gh.Hop[:min(len(gh.Hop), h.KMax)]
		n := graphNodes(hop, gh.Unreachable)
		for j := range hop {
			if err := ValidateCSR(hop[j], n, n, false); err != nil {
				panic(fmt.Sprintf("data: Hops.Packed: graph %d hop set N_%d: %v", g, j+1, err))
			}
		}
		if gh.Unreachable != nil {
			if err := ValidateCSR(*gh.Unreachable, n, n, false); err != nil {
				panic(fmt.Sprintf("data: Hops.Packed: graph %d N_∞: %v", g, err))
			}
		}
		pk.add(n, hop, gh.Unreachable)
	}
	return &Hops{KMax: h.KMax, packed: pk.finish(), sym: h.sym}
}

// graphNodes returns the node count of a graph's hop sets: the rows of
// its first set, 0 when it has none.
func graphNodes(hop []CSR, unr *CSR) int {
	switch {
	case len(hop) > 0:
		return hop[0].Len()
	case unr != nil:
		return unr.Len()
	}
	return 0
}

// NumGraphs returns the number of graphs whose hop sets h holds, packed
// or not.
func (h *Hops) NumGraphs() int {
	if h.packed != nil {
		return h.packed.numGraphs()
	}
	return len(h.Graphs)
}

// Graph returns the hop sets of graph i: h.Graphs[i], or, when h is
// packed (Packed), graph i's sets decoded into fresh CSRs, N_1..N_KMax
// and N_∞ where kept, equal to those that were packed. It panics when i
// is out of range, or when packed bytes are corrupt (they are made only
// from valid hop sets).
func (h *Hops) Graph(i int) GraphHops {
	if h.packed == nil {
		return h.Graphs[i]
	}
	gh, err := h.unpackGraph(i)
	if err != nil {
		panic(fmt.Sprintf("data: Hops.Graph: %v", err))
	}
	return gh
}

// unpackGraph decodes the packed sets of graph i, failing on corrupt
// bytes. A graph lacking one of N_1..N_KMax gets only the sets before it.
func (h *Hops) unpackGraph(i int) (GraphHops, error) {
	p := h.packed
	if i < 0 || i >= p.numGraphs() {
		panic(fmt.Sprintf("data: hop sets of graph %d out of range [0,%d)", i, p.numGraphs()))
	}
	n := int(p.n[i])
	gh := GraphHops{Hop: make([]CSR, 0, h.KMax)}
	for j := 1; j <= h.KMax; j++ {
		b, nnz := p.set(p.hop(i, j))
		if nnz < 0 {
			break
		}
		c, err := unpackCSR(b, n, nnz)
		if err != nil {
			return GraphHops{}, fmt.Errorf("graph %d hop set N_%d: %w", i, j, err)
		}
		gh.Hop = append(gh.Hop, c)
	}
	gh.Hop = slices.Clip(gh.Hop)
	if s := p.unr(i); s >= 0 {
		b, nnz := p.set(s)
		c, err := unpackCSR(b, n, nnz)
		if err != nil {
			return GraphHops{}, fmt.Errorf("graph %d N_∞: %w", i, err)
		}
		gh.Unreachable = &c
	}
	return gh, nil
}

// unpackCSR decodes one packed set of n rows and nnz entries into a fresh
// CSR (decodeCSR; its errors say "packed rows").
func unpackCSR(b []byte, n, nnz int) (CSR, error) {
	c, err := decodeCSR(b, n, nnz)
	if err != nil {
		return CSR{}, fmt.Errorf("packed rows: %w", err)
	}
	return c, nil
}

// decodeCSR decodes rows coded by appendRows, n rows holding nnz entries,
// into a fresh CSR (Idx nil when empty): the hops file's reader and the
// packed sets share it.
func decodeCSR(b []byte, n, nnz int) (CSR, error) {
	c := CSR{Ptr: make([]int32, n+1)}
	if nnz > 0 {
		c.Idx = make([]int32, 0, nnz)
	}
	idx, err := decodeRows(c.Idx, c.Ptr, b, n, nnz, 0)
	if err != nil {
		return CSR{}, err
	}
	if nnz > 0 {
		c.Idx = idx
	}
	return c, nil
}

// unpackRows is decodeRows for a packed set: its errors say "packed
// rows".
func unpackRows(idx, ptr []int32, b []byte, n, nnz int, off int32) ([]int32, error) {
	idx, err := decodeRows(idx, ptr, b, n, nnz, off)
	if err != nil {
		return idx, fmt.Errorf("packed rows: %w", err)
	}
	return idx, nil
}

// decodeRows decodes n rows holding nnz entries coded in b (appendRows)
// into the nnz places after len(idx)
// (cap(idx) ≥ len(idx)+nnz), each id shifted by off, and writes the
// running row ends, counted from len(idx), into ptr[1:n+1] (ptr[0]
// already holds the start): appendShifted for a packed set. It returns
// idx extended by the nnz entries. Corrupt bytes are an error, never a
// panic: a varint that runs past b, overflows or is longer than needed
// (the coding is canonical), a row count beyond the entries left, an id
// at or beyond n, entries missing or bytes left over.
func decodeRows(idx, ptr []int32, b []byte, n, nnz int, off int32) ([]int32, error) {
	base := len(idx)
	dst := idx[base : base+nnz]
	ptr = ptr[:n+1]
	pos, j := 0, 0
	for u := 0; u < n; u++ {
		var cnt uint64
		if pos < len(b) && b[pos] < 0x80 {
			cnt = uint64(b[pos])
			pos++
		} else {
			v, k := binary.Uvarint(b[pos:])
			if k <= 0 || b[pos+k-1] == 0 {
				return idx, fmt.Errorf("row %d: bad varint", u)
			}
			cnt, pos = v, pos+k
		}
		if cnt > uint64(len(dst)-j) {
			return idx, fmt.Errorf("row %d: %d entries exceed the entry count %d", u, cnt, nnz)
		}
		row := dst[j : j+int(cnt)]
		id := -1
		for r := range row {
			if pos < len(b) && b[pos] < 0x80 {
				id += 1 + int(b[pos])
				pos++
			} else {
				g, k := binary.Uvarint(b[pos:])
				if k <= 0 || b[pos+k-1] == 0 || g >= uint64(n) {
					return idx, fmt.Errorf("row %d: bad varint", u)
				}
				id += 1 + int(g)
				pos += k
			}
			if id >= n {
				return idx, fmt.Errorf("row %d: node id beyond %d nodes", u, n)
			}
			row[r] = int32(id) + off
		}
		j += len(row)
		ptr[u+1] = int32(base + j)
	}
	if pos != len(b) {
		return idx, fmt.Errorf("%d bytes left after the rows", len(b)-pos)
	}
	if j != nnz {
		return idx, fmt.Errorf("rows hold %d entries, want %d", j, nnz)
	}
	return idx[:base+nnz], nil
}
