// Package tu reads graph classification datasets in the TU Dortmund text
// format (Morris et al.) from their official zip files, together with the
// fixed 10-fold splits of Errica et al. (ICLR 2020).
//
// Edges are made undirected and simple: each line "u, v" of NAME_A.txt
// contributes the undirected edge {u,v}; repeated pairs are merged and self
// loops dropped (Info counts both). Node labels and graph labels are mapped
// to 0..L-1 by the rank of their value among the sorted distinct values.
// Node attributes (e.g. 18 per node for ENZYMES, 1 for PROTEINS, 29 for
// PROTEINS_full) are kept as they are in Graph.Attrs; Errica et al. feed
// ENZYMES models the 18 attributes concatenated with the one-hot label
// (21 features) and PROTEINS models the one-hot label only (3 features):
// choosing among them is the model's business.
package tu

import (
	"archive/zip"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/spn-project/spn/data"
)

// Info reports what reading the edge file dropped or merged.
type Info struct {
	// EdgeLines is the number of lines of NAME_A.txt.
	EdgeLines int
	// SelfLoops is the number of lines u == v (dropped).
	SelfLoops int
	// Edges is the number of distinct undirected edges kept.
	Edges int
	// OneWay is the number of edges given in one direction only (kept as
	// undirected); Duplicates is the number of lines repeating an
	// already-seen directed pair (merged).
	OneWay, Duplicates int
}

// Load reads the dataset in zipPath (named after the file, e.g. DD.zip ->
// "DD") and, when splitsPath is not empty, its Errica split file.
func Load(zipPath, splitsPath string) (*data.Dataset, error) {
	ds, _, err := LoadWithInfo(zipPath, splitsPath)
	return ds, err
}

// LoadWithInfo is Load that also reports the edge clean-up.
func LoadWithInfo(zipPath, splitsPath string) (*data.Dataset, Info, error) {
	name := strings.TrimSuffix(filepath.Base(zipPath), filepath.Ext(zipPath))
	zr, err := zip.OpenReader(zipPath)
	if err != nil {
		return nil, Info{}, fmt.Errorf("reading TU zip %s: %w", zipPath, err)
	}
	defer zr.Close()
	ds, info, err := ReadZip(&zr.Reader, name)
	if err != nil {
		return nil, info, fmt.Errorf("reading TU zip %s: %w", zipPath, err)
	}
	if splitsPath != "" {
		splits, err := ReadSplitsFile(splitsPath, len(ds.Graphs))
		if err != nil {
			return nil, info, err
		}
		ds.Splits = splits
	}
	return ds, info, nil
}

// entryName returns the file name of a zip entry with any folder prefix
// removed; upstream zips name entries "NAME//NAME_A.txt".
func entryName(n string) string {
	return path.Base(strings.TrimRight(n, "/"))
}

// ReadZip parses the TU files of dataset name from an opened zip archive.
func ReadZip(zr *zip.Reader, name string) (*data.Dataset, Info, error) {
	files := map[string]*zip.File{}
	for _, f := range zr.File {
		if strings.HasSuffix(f.Name, "/") {
			continue
		}
		files[entryName(f.Name)] = f
	}
	open := func(suffix string, required bool) (*Entry, error) {
		f, ok := files[name+"_"+suffix+".txt"]
		if !ok {
			if required {
				return nil, fmt.Errorf("missing entry %s_%s.txt", name, suffix)
			}
			return nil, nil
		}
		rc, err := f.Open()
		if err != nil {
			return nil, fmt.Errorf("entry %s: %w", f.Name, err)
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			return nil, fmt.Errorf("entry %s: %w", f.Name, err)
		}
		return &Entry{Name: f.Name, Data: b}, nil
	}
	var in Files
	var err error
	if in.A, err = open("A", true); err != nil {
		return nil, Info{}, err
	}
	if in.Indicator, err = open("graph_indicator", true); err != nil {
		return nil, Info{}, err
	}
	if in.GraphLabels, err = open("graph_labels", true); err != nil {
		return nil, Info{}, err
	}
	if in.NodeLabels, err = open("node_labels", false); err != nil {
		return nil, Info{}, err
	}
	if in.NodeAttrs, err = open("node_attributes", false); err != nil {
		return nil, Info{}, err
	}
	return Parse(name, in)
}

// Entry is one text file: its name (used in messages) and content.
type Entry struct {
	Name string
	Data []byte
}

// Files are the TU text files of one dataset; NodeLabels and NodeAttrs may
// be nil.
type Files struct {
	A, Indicator, GraphLabels, NodeLabels, NodeAttrs *Entry
}

// NewFiles builds Files from in-memory contents named after dataset name; a
// nil content for labels or attributes means the file is absent.
func NewFiles(name string, a, indicator, graphLabels, nodeLabels, nodeAttrs []byte) Files {
	mk := func(suffix string, b []byte, optional bool) *Entry {
		if optional && b == nil {
			return nil
		}
		return &Entry{Name: name + "_" + suffix + ".txt", Data: b}
	}
	return Files{
		A:           mk("A", a, false),
		Indicator:   mk("graph_indicator", indicator, false),
		GraphLabels: mk("graph_labels", graphLabels, false),
		NodeLabels:  mk("node_labels", nodeLabels, true),
		NodeAttrs:   mk("node_attributes", nodeAttrs, true),
	}
}

// lines calls fn for every non-blank line with its 1-based number.
func (e *Entry) lines(fn func(no int, line []byte) error) error {
	no := 0
	rest := e.Data
	for len(rest) > 0 {
		no++
		var line []byte
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			line, rest = rest[:i], rest[i+1:]
		} else {
			line, rest = rest, nil
		}
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		if err := fn(no, line); err != nil {
			return fmt.Errorf("entry %s:%d: %w", e.Name, no, err)
		}
	}
	return nil
}

// ints parses a one-integer-per-line file.
func (e *Entry) ints() ([]int64, error) {
	var out []int64
	err := e.lines(func(_ int, line []byte) error {
		v, err := strconv.ParseInt(string(line), 10, 64)
		if err != nil {
			return fmt.Errorf("want one integer, got %q", line)
		}
		out = append(out, v)
		return nil
	})
	return out, err
}

// parseInt parses a decimal integer with optional sign and surrounding
// blanks, without allocating.
func parseInt(b []byte) (int64, bool) {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return 0, false
	}
	neg := false
	if b[0] == '-' || b[0] == '+' {
		neg = b[0] == '-'
		b = b[1:]
		if len(b) == 0 {
			return 0, false
		}
	}
	var v int64
	for _, c := range b {
		if c < '0' || c > '9' || v > (1<<62)/10 {
			return 0, false
		}
		v = v*10 + int64(c-'0')
	}
	if neg {
		v = -v
	}
	return v, true
}

// Parse builds the dataset from its TU text files.
func Parse(name string, in Files) (*data.Dataset, Info, error) {
	var info Info
	ind, offset, err := parseIndicator(in.Indicator)
	if err != nil {
		return nil, info, err
	}
	nnodes, ngraphs := len(ind), len(offset)-1
	y, nclasses, err := parseGraphLabels(in.GraphLabels, ngraphs)
	if err != nil {
		return nil, info, err
	}
	ds := &data.Dataset{Name: name, NumClasses: nclasses, Graphs: make([]data.Graph, ngraphs)}
	var labels []int32
	if in.NodeLabels != nil {
		if labels, ds.NumLabels, err = parseNodeLabels(in.NodeLabels, nnodes); err != nil {
			return nil, info, err
		}
	}
	var attrs []float32
	if in.NodeAttrs != nil {
		if attrs, ds.AttrDim, err = parseNodeAttrs(in.NodeAttrs, nnodes); err != nil {
			return nil, info, err
		}
	}
	dirs, err := parseEdges(in.A, ind, offset, &info)
	if err != nil {
		return nil, info, err
	}
	for gi := range ds.Graphs {
		lo, hi := offset[gi], offset[gi+1]
		g, err := buildGraph(in.A.Name, gi, hi-lo, dirs[gi], &info)
		if err != nil {
			return nil, info, err
		}
		dirs[gi] = nil
		if labels != nil {
			g.Labels = labels[lo:hi:hi]
		}
		if attrs != nil {
			g.Attrs = attrs[lo*ds.AttrDim : hi*ds.AttrDim : hi*ds.AttrDim]
		}
		g.Y = int(y[gi])
		info.Edges += g.NumEdges()
		ds.Graphs[gi] = g
	}
	return ds, info, nil
}

// parseIndicator reads NAME_graph_indicator.txt: the 1-based graph id of
// every node, the nodes of a graph contiguous. It returns the ids and
// offset[g], the first node (0-based) of graph g+1, with offset[ngraphs]
// = the number of nodes.
func parseIndicator(e *Entry) (ind []int64, offset []int, err error) {
	if ind, err = e.ints(); err != nil {
		return nil, nil, err
	}
	var ngraphs int64
	for i, g := range ind {
		if g < 1 || g > ngraphs+1 || g < ngraphs {
			return nil, nil, fmt.Errorf("entry %s: node %d has graph id %d after graph %d (ids must start at 1 and not decrease or skip)", e.Name, i+1, g, ngraphs)
		}
		ngraphs = g
	}
	offset = make([]int, ngraphs+1)
	for i := len(ind) - 1; i >= 0; i-- {
		offset[ind[i]-1] = i
	}
	offset[ngraphs] = len(ind)
	return ind, offset, nil
}

// parseGraphLabels reads NAME_graph_labels.txt, one label per graph, and
// ranks the labels into classes 0..nclasses-1.
func parseGraphLabels(e *Entry, ngraphs int) (y []int32, nclasses int, err error) {
	glab, err := e.ints()
	if err != nil {
		return nil, 0, err
	}
	if len(glab) != ngraphs {
		return nil, 0, fmt.Errorf("entry %s: %d graph labels for %d graphs", e.Name, len(glab), ngraphs)
	}
	y, nclasses = data.Rank(glab)
	return y, nclasses, nil
}

// parseNodeLabels reads NAME_node_labels.txt, one label per node, ranked
// into 0..n-1.
func parseNodeLabels(e *Entry, nnodes int) (labels []int32, n int, err error) {
	nl, err := e.ints()
	if err != nil {
		return nil, 0, err
	}
	if len(nl) != nnodes {
		return nil, 0, fmt.Errorf("entry %s: %d node labels for %d nodes", e.Name, len(nl), nnodes)
	}
	labels, n = data.Rank(nl)
	return labels, n, nil
}

// parseNodeAttrs reads NAME_node_attributes.txt: one row of
// comma-separated finite float32 values per node, every row as wide as
// the first (dim).
func parseNodeAttrs(e *Entry, nnodes int) (attrs []float32, dim int, err error) {
	rows := 0
	err = e.lines(func(_ int, line []byte) error {
		fields := strings.Split(string(line), ",")
		if rows == 0 {
			dim = len(fields)
		} else if len(fields) != dim {
			return fmt.Errorf("%d attributes, want %d as on the first line", len(fields), dim)
		}
		for _, f := range fields {
			v, err := strconv.ParseFloat(strings.TrimSpace(f), 32)
			if errors.Is(err, strconv.ErrRange) && math.Abs(v) > 1 {
				return fmt.Errorf("attribute %q is beyond the float32 range (±%g)", strings.TrimSpace(f), math.MaxFloat32)
			}
			if err != nil && !errors.Is(err, strconv.ErrRange) {
				return fmt.Errorf("bad attribute %q", strings.TrimSpace(f))
			}
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("attribute %q is not a finite number", strings.TrimSpace(f))
			}
			attrs = append(attrs, float32(v))
		}
		rows++
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	if rows != nnodes {
		return nil, 0, fmt.Errorf("entry %s: %d attribute rows for %d nodes", e.Name, rows, nnodes)
	}
	return attrs, dim, nil
}

// parseEdges reads NAME_A.txt, one line "u, v" (1-based node ids of one
// graph) per directed edge, into the directed pairs of every graph as
// graph-local u<<32 | v; self loops are dropped (counted in info).
func parseEdges(e *Entry, ind []int64, offset []int, info *Info) ([][]uint64, error) {
	nnodes := len(ind)
	dirs := make([][]uint64, len(offset)-1)
	err := e.lines(func(_ int, line []byte) error {
		info.EdgeLines++
		i := bytes.IndexByte(line, ',')
		if i < 0 {
			return fmt.Errorf("want \"u, v\", got %q", line)
		}
		u, ok1 := parseInt(line[:i])
		v, ok2 := parseInt(line[i+1:])
		if !ok1 || !ok2 {
			return fmt.Errorf("want \"u, v\", got %q", line)
		}
		if u < 1 || u > int64(nnodes) || v < 1 || v > int64(nnodes) {
			return fmt.Errorf("node id out of range 1..%d in %q", nnodes, line)
		}
		gu, gv := ind[u-1], ind[v-1]
		if gu != gv {
			return fmt.Errorf("edge %d-%d joins graphs %d and %d", u, v, gu, gv)
		}
		if u == v {
			info.SelfLoops++
			return nil
		}
		off := int64(offset[gu-1])
		dirs[gu-1] = append(dirs[gu-1], uint64(u-1-off)<<32|uint64(v-1-off))
		return nil
	})
	if err != nil {
		return nil, err
	}
	return dirs, nil
}

// buildGraph makes graph gi (0-based) of n nodes simple and undirected
// from its directed pairs d (sorted and merged in place; duplicates and
// one-way edges counted in info); file names the edge file in errors.
func buildGraph(file string, gi, n int, d []uint64, info *Info) (data.Graph, error) {
	slices.Sort(d)
	before := len(d)
	d = slices.Compact(d)
	info.Duplicates += before - len(d)
	edges := make([][2]int, len(d))
	for j, p := range d {
		u, v := p>>32, p&0xffffffff
		if _, ok := slices.BinarySearch(d, v<<32|u); !ok {
			info.OneWay++
		}
		edges[j] = [2]int{int(u), int(v)}
	}
	g, err := data.FromEdges(n, edges)
	if err != nil {
		return data.Graph{}, fmt.Errorf("entry %s: graph %d: %w", file, gi+1, err)
	}
	return g, nil
}
