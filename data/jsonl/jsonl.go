// Package jsonl reads and writes datasets as JSON Lines, one graph per line:
//
//	{"nodes": 3, "edges": [[0,1],[1,2]], "x": [0,2,1], "y": 1}
//
// "edges" lists every undirected edge once (written with u < v, read in
// either orientation); "x" holds the categorical node labels (optional),
// "attrs" one array of real attributes per node (optional), "y" the class
// of a classification graph and "target" the targets of a regression graph
// or the labels of a multi-task binary graph (exactly one of the two).
// A line may carry "split": "train", "valid" or "test" (every line of a
// file, or none): the file's one fixed split (Dataset.Splits[0]).
//
// Limits (every reader of the format): a categorical value (a node label
// in "x", a "node_feat" or "edge_feat" value, a class "y") is below
// data.MaxCategory, a target lies within float32's range, and a labelled
// graph has at least one node. A file compressed with gzip is read as
// such whatever its name, a UTF-8 byte-order mark is skipped, and a
// UTF-16 file is refused naming its encoding.
//
// Molecules in OGB's encoding (dataset kind ogb) carry categorical features
// instead of labels: "node_feat" one array per node (OGB's 9 atom features)
// and "edge_feat" one array per edge of "edges", in the same order (OGB's 3
// bond features); a missing binary label is null. A two-atom molecule of an
// OGB binary set with its first task unlabelled:
//
//	{"nodes": 2, "edges": [[0,1]], "node_feat": [[5,0,4,5,3,0,2,0,0],[7,0,1,5,2,0,2,0,0]], "edge_feat": [[0,0,0]], "target": [null,1]}
//
// A null target is a missing label. Graphs whose targets hold a null and
// otherwise only 0 and 1 are read as a binary dataset; with other values
// they are a regression whose null targets are missing (NaN), skipped by
// its loss and metrics.
package jsonl

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"unicode"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/internal/jsonpos"
)

// record is one line. "nodes" and "edges" are read as written, so that
// a missing key (nil) and an edge that is not a pair show.
type record struct {
	Nodes    *int        `json:"nodes"`
	Edges    [][]int     `json:"edges"`
	X        []int32     `json:"x,omitempty"`
	NodeFeat [][]int32   `json:"node_feat,omitempty"`
	EdgeFeat [][]int32   `json:"edge_feat,omitempty"`
	Attrs    [][]float32 `json:"attrs,omitempty"`
	Y        *int        `json:"y,omitempty"`
	Target   targets     `json:"target,omitempty"`
	Split    *string     `json:"split,omitempty"`
}

// Split names of the "split" field, in Split order.
const (
	SplitTrain = "train"
	SplitValid = "valid"
	SplitTest  = "test"
)

// targets are numbers with null for a missing label (NaN).
type targets []float64

// MarshalJSON writes NaN as null.
func (t targets) MarshalJSON() ([]byte, error) {
	b := []byte{'['}
	for i, v := range t {
		if i > 0 {
			b = append(b, ',')
		}
		if math.IsNaN(v) {
			b = append(b, "null"...)
			continue
		}
		vb, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		b = append(b, vb...)
	}
	return append(b, ']'), nil
}

// UnmarshalJSON reads null as NaN.
func (t *targets) UnmarshalJSON(b []byte) error {
	var vs []*float64
	if err := json.Unmarshal(b, &vs); err != nil {
		return err
	}
	if vs == nil {
		*t = nil
		return nil
	}
	out := make(targets, len(vs))
	for i, v := range vs {
		out[i] = math.NaN()
		if v != nil {
			out[i] = *v
		}
	}
	*t = out
	return nil
}

// Write writes every graph of ds as one line.
func Write(w io.Writer, ds *data.Dataset) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	parts := splitNames(ds)
	for i := range ds.Graphs {
		g := &ds.Graphs[i]
		n := g.N
		edges := g.Edges()
		rec := record{Nodes: &n, Edges: make([][]int, len(edges)), X: g.Labels}
		for i := range edges {
			rec.Edges[i] = edges[i][:]
		}
		if w := len(ds.NodeCatVocab); g.NodeCat != nil && w > 0 {
			rec.NodeFeat = make([][]int32, g.N)
			for u := range rec.NodeFeat {
				rec.NodeFeat[u] = g.NodeCat[u*w : (u+1)*w]
			}
		}
		if w := len(ds.EdgeFeatVocab); g.EdgeFeat != nil && w > 0 && len(rec.Edges) > 0 {
			// Edges() lists (u,v) with u < v in CSR order: the entry of v in u's row.
			rec.EdgeFeat = make([][]int32, 0, len(rec.Edges))
			for u := 0; u < g.N; u++ {
				for j := g.Adj.Ptr[u]; j < g.Adj.Ptr[u+1]; j++ {
					if int(g.Adj.Idx[j]) > u {
						rec.EdgeFeat = append(rec.EdgeFeat, g.EdgeFeat[int(j)*w:(int(j)+1)*w])
					}
				}
			}
		}
		if g.Attrs != nil && ds.AttrDim > 0 {
			for u := 0; u < g.N; u++ {
				rec.Attrs = append(rec.Attrs, g.Attrs[u*ds.AttrDim:(u+1)*ds.AttrDim])
			}
		}
		if parts != nil {
			rec.Split = &parts[i]
		}
		if ds.NumTargets > 0 {
			rec.Target = g.Target
		} else {
			y := g.Y
			rec.Y = &y
		}
		if err := enc.Encode(&rec); err != nil {
			return fmt.Errorf("writing JSONL graph %d: %w", i, err)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("writing JSONL: %w", err)
	}
	return nil
}

// splitNames returns each graph's "split" when ds has one split that
// holds every graph once, else nil (folds are not part of the format).
func splitNames(ds *data.Dataset) []string {
	if len(ds.Splits) != 1 {
		return nil
	}
	out := make([]string, len(ds.Graphs))
	s := ds.Splits[0]
	for _, p := range []struct {
		name string
		idx  []int
	}{{SplitTrain, s.Train}, {SplitValid, s.Val}, {SplitTest, s.Test}} {
		for _, i := range p.idx {
			if i < 0 || i >= len(out) || out[i] != "" {
				return nil
			}
			out[i] = p.name
		}
	}
	for _, n := range out {
		if n == "" {
			return nil
		}
	}
	return out
}

// MaxLine is the longest line Read accepts (bytes).
const MaxLine = 64 << 20

// Read parses a JSONL dataset named name (also used in messages as the
// file name). The label vocabulary is 0..max(x), the classes 0..max(y).
// Every graph must carry "y" or "target". Errors name the line.
//
// A classification dataset must use every class 0..max(y) with at least 2
// graphs each: a class with a single graph is an error naming its line.
func Read(r io.Reader, name string) (*data.Dataset, error) {
	ds, _, err := ReadLines(r, name)
	return ds, err
}

// ReadLines is Read that also returns each graph's line number.
func ReadLines(r io.Reader, name string) (*data.Dataset, []int, error) {
	ds, lines, err := read(r, name, false)
	if err != nil {
		return nil, nil, err
	}
	if ds.NumClasses > 0 {
		if err := checkClasses(ds, name, lines); err != nil {
			return nil, nil, err
		}
	}
	return ds, lines, nil
}

// checkClasses checks that every class 0..NumClasses-1 has at least 2
// graphs.
func checkClasses(ds *data.Dataset, name string, lines []int) error {
	count := make([]int, ds.NumClasses)
	at := make([]int, ds.NumClasses)
	for i := range ds.Graphs {
		count[ds.Graphs[i].Y]++
		at[ds.Graphs[i].Y] = lines[i]
	}
	for k, n := range count {
		switch n {
		case 0:
			return fmt.Errorf("%s: class %d has no graph: the classes are 0..%d (the largest \"y\"), each needs at least 2 graphs", name, k, ds.NumClasses-1)
		case 1:
			return &LineError{File: name, Line: at[k], Err: fmt.Errorf("class %d has only this graph: each class needs at least 2 graphs", k)}
		}
	}
	return nil
}

// ReadUnlabelled is Read for graphs to predict: "y" and "target" may be
// left out (on every line or on none); graphs without them get Y = 0 and
// no Target; a "split" is checked but not read. lines gives each graph's
// line number.
func ReadUnlabelled(r io.Reader, name string) (ds *data.Dataset, lines []int, err error) {
	return read(r, name, true)
}

func read(r io.Reader, name string, unlabelled bool) (*data.Dataset, []int, error) {
	ds := &data.Dataset{Name: name}
	kind := "" // "y", "target" or "none" (unlabelled), fixed by the first graph
	var lines []int
	var split data.Split
	withSplit := false // whether the first graph has "split"; every graph must agree
	err := Lines(r, name, func(no int, line []byte) error {
		g, k, part, err := parseLine(line, ds, unlabelled)
		if err != nil {
			return err
		}
		if len(ds.Graphs) == 0 {
			kind = k
			withSplit = part != ""
		} else if k != kind {
			return fmt.Errorf("graph has %q but earlier graphs have %q", k, kind)
		}
		switch {
		case withSplit && part == "":
			return fmt.Errorf(`no "split", but earlier graphs have one: give every graph a split or none`)
		case !withSplit && part != "":
			return fmt.Errorf(`"split": %q, but earlier graphs have none: give every graph a split or none`, part)
		}
		i := len(ds.Graphs)
		switch part {
		case SplitTrain:
			split.Train = append(split.Train, i)
		case SplitValid:
			split.Val = append(split.Val, i)
		case SplitTest:
			split.Test = append(split.Test, i)
		}
		ds.Graphs = append(ds.Graphs, g)
		lines = append(lines, no)
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	if len(ds.Graphs) == 0 {
		return nil, nil, fmt.Errorf("%s: no graphs", name)
	}
	if withSplit && !unlabelled { // graphs to predict: their split is not read
		for _, p := range []struct {
			name string
			idx  []int
		}{{SplitTrain, split.Train}, {SplitValid, split.Val}, {SplitTest, split.Test}} {
			if len(p.idx) == 0 {
				return nil, nil, fmt.Errorf(`%s: no graph has "split": %q: a file's split needs train, valid and test graphs`, name, p.name)
			}
		}
		ds.Splits = []data.Split{split}
	}
	if err := complete(ds, name, lines); err != nil {
		return nil, nil, err
	}
	// A null target is a missing label: of a binary task when every
	// labelled target is 0 or 1, of a regression otherwise.
	missing, binary := false, true
	for _, g := range ds.Graphs {
		if g.Labels != nil {
			for _, l := range g.Labels {
				ds.NumLabels = max(ds.NumLabels, int(l)+1)
			}
		}
		if kind == "y" {
			ds.NumClasses = max(ds.NumClasses, g.Y+1)
		}
		for _, y := range g.Target {
			switch {
			case math.IsNaN(y):
				missing = true
			case y != 0 && y != 1:
				binary = false
			}
		}
		vocab(ds.NodeCatVocab, g.NodeCat)
		vocab(ds.EdgeFeatVocab, g.EdgeFeat)
	}
	if missing && binary {
		ds.Task = data.TaskBinary
	}
	for i := range ds.Graphs {
		if err := ds.Graphs[i].Validate(ds); err != nil {
			return nil, nil, &LineError{File: name, Line: lines[i], Err: err}
		}
	}
	if err := ds.Validate(); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", name, err)
	}
	return ds, lines, nil
}

// vocab raises each column's vocabulary size to cover the values of the
// row-major feature slice f.
func vocab(sizes []int, f []int32) {
	for i, v := range f {
		c := i % len(sizes)
		sizes[c] = max(sizes[c], int(v)+1)
	}
}

// readLine reads one line of at most MaxLine bytes without its newline.
func readLine(br *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > MaxLine {
			return nil, fmt.Errorf("line longer than %d bytes", MaxLine)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return bytes.TrimSuffix(line, []byte("\n")), err
	}
}

// DecodeLine decodes line, one record of a JSON Lines file, into v: one
// JSON value whose fields v all has, and nothing after it (as
// jsonpos.Decode). Its errors ("bad JSON: …") are the line's; where
// encoding/json places one in the line, Lines adds its column to the file
// and line number.
func DecodeLine(line []byte, v any) error {
	err := jsonpos.Decode(line, v)
	if err == nil {
		return nil
	}
	err = fmt.Errorf("bad JSON: %w", err)
	if _, col, ok := jsonpos.Of(line, err); ok {
		return &columnError{col, err}
	}
	return err
}

// columnError is an error at a byte column (from 1) of the line that
// Lines passed on.
type columnError struct {
	col int
	err error
}

func (e *columnError) Error() string { return e.err.Error() }
func (e *columnError) Unwrap() error { return e.err }

// parseLine decodes and checks one record; ds supplies and collects the
// attribute and target widths. It returns the graph, which of "y",
// "target" or "none" labels it, and its "split" ("" when it has none).
func parseLine(line []byte, ds *data.Dataset, unlabelled bool) (data.Graph, string, string, error) {
	var rec record
	if err := DecodeLine(line, &rec); err != nil {
		return data.Graph{}, "", "", err
	}
	part := ""
	if rec.Split != nil {
		switch part = *rec.Split; part {
		case SplitTrain, SplitValid, SplitTest:
		default:
			return data.Graph{}, "", "", fmt.Errorf(`"split": %q: want %q, %q or %q`, part, SplitTrain, SplitValid, SplitTest)
		}
	}
	g, k, err := parseGraph(rec, ds, unlabelled)
	return g, k, part, err
}

// parseGraph checks one decoded record and builds its graph.
func parseGraph(rec record, ds *data.Dataset, unlabelled bool) (data.Graph, string, error) {
	if rec.Nodes == nil {
		return data.Graph{}, "", errors.New(`no "nodes": every line needs the node count, e.g. {"nodes": 3, "edges": [[0, 1], [1, 2]]}`)
	}
	if rec.Edges == nil {
		return data.Graph{}, "", errors.New(`no "edges": every line needs its edge list, [] for a graph without edges, e.g. {"nodes": 1, "edges": []}`)
	}
	nodes, edges := *rec.Nodes, make([][2]int, len(rec.Edges))
	for i, e := range rec.Edges {
		if len(e) != 2 {
			return data.Graph{}, "", fmt.Errorf("edge %d %v: an edge is a pair of node ids [u, v], this one has %d", i, e, len(e))
		}
		edges[i] = [2]int(e)
	}
	for u, row := range rec.Attrs {
		for j, v := range row {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				return data.Graph{}, "", fmt.Errorf("node %d attribute %d is %v: attributes must be finite", u, j, v)
			}
		}
	}
	if nodes < 0 || nodes > 1<<24 {
		return data.Graph{}, "", fmt.Errorf("node count %d out of range 0..%d", nodes, 1<<24)
	}
	seen := make(map[[2]int]bool, len(edges))
	for i, e := range edges {
		u, v := min(e[0], e[1]), max(e[0], e[1])
		if u < 0 || v >= nodes {
			if nodes == 0 {
				return data.Graph{}, "", fmt.Errorf("edge %d [%d,%d]: the graph has \"nodes\": 0, so no edge can exist", i, e[0], e[1])
			}
			return data.Graph{}, "", fmt.Errorf("edge %d [%d,%d]: node id out of range 0..%d", i, e[0], e[1], nodes-1)
		}
		if u == v {
			return data.Graph{}, "", fmt.Errorf("edge %d [%d,%d]: self loop", i, e[0], e[1])
		}
		if seen[[2]int{u, v}] {
			return data.Graph{}, "", fmt.Errorf("edge %d [%d,%d]: duplicate edge", i, e[0], e[1])
		}
		seen[[2]int{u, v}] = true
	}
	if nodes == 0 && !unlabelled {
		return data.Graph{}, "", errors.New(`"nodes": 0: a graph needs at least one node (a model has nothing to pool over an empty graph)`)
	}
	g, err := data.FromEdges(nodes, edges)
	if err != nil {
		return data.Graph{}, "", err
	}
	if err := categorical(&g, rec, nodes, edges, ds); err != nil {
		return data.Graph{}, "", err
	}
	if rec.X != nil {
		if len(rec.X) != nodes {
			return data.Graph{}, "", fmt.Errorf("%d labels in \"x\" for %d nodes", len(rec.X), nodes)
		}
		for u, l := range rec.X {
			if l < 0 {
				return data.Graph{}, "", fmt.Errorf("node %d has negative label %d", u, l)
			}
			if l >= data.MaxCategory {
				return data.Graph{}, "", fmt.Errorf("node %d has label %d: node labels lie in 0..%d", u, l, data.MaxCategory-1)
			}
		}
		g.Labels = rec.X
	}
	if rec.Attrs != nil {
		if len(rec.Attrs) != nodes {
			return data.Graph{}, "", fmt.Errorf("%d attribute rows for %d nodes", len(rec.Attrs), nodes)
		}
		for u, row := range rec.Attrs {
			if ds.AttrDim == 0 && len(ds.Graphs) == 0 && u == 0 {
				ds.AttrDim = len(row)
			}
			if len(row) != ds.AttrDim {
				return data.Graph{}, "", fmt.Errorf("node %d has %d attributes, want %d", u, len(row), ds.AttrDim)
			}
			g.Attrs = append(g.Attrs, row...)
		}
	} else if ds.AttrDim > 0 && nodes > 0 {
		return data.Graph{}, "", errors.New("missing \"attrs\"")
	}
	switch {
	case rec.Y != nil && rec.Target != nil:
		return data.Graph{}, "", errors.New("both \"y\" and \"target\" given")
	case rec.Y != nil:
		if *rec.Y < 0 || *rec.Y >= data.MaxCategory {
			return data.Graph{}, "", fmt.Errorf("class %d out of range 0..%d", *rec.Y, data.MaxCategory-1)
		}
		g.Y = *rec.Y
		return g, "y", nil
	case rec.Target != nil:
		if ds.NumTargets == 0 && len(ds.Graphs) == 0 {
			ds.NumTargets = len(rec.Target)
		}
		if len(rec.Target) != ds.NumTargets || ds.NumTargets == 0 {
			return data.Graph{}, "", fmt.Errorf("%d targets, want %d as on the first graph", len(rec.Target), ds.NumTargets)
		}
		for t, v := range rec.Target {
			if math.Abs(v) > math.MaxFloat32 {
				return data.Graph{}, "", fmt.Errorf("target %d is %g, beyond float32's range (±%.7g), in which the models compute", t, v, math.MaxFloat32)
			}
		}
		g.Target = rec.Target
		return g, "target", nil
	}
	if unlabelled {
		return g, "none", nil
	}
	return data.Graph{}, "", errors.New("missing \"y\" or \"target\"")
}

// categorical checks and stores the record's categorical node and edge
// features; the first graph that has rows fixes each width, later graphs
// must match it (graphs read before are checked by complete). nodes and
// edges are the record's, checked.
func categorical(g *data.Graph, rec record, nodes int, edges [][2]int, ds *data.Dataset) error {
	rows := func(what, of string, rs [][]int32, n int, width *[]int) ([]int32, error) {
		if rs == nil {
			if len(*width) > 0 && n > 0 {
				return nil, fmt.Errorf("missing %q", what)
			}
			return nil, nil
		}
		if len(rs) != n {
			return nil, fmt.Errorf("%d rows in %q for %d %s", len(rs), what, n, of)
		}
		if n == 0 {
			return []int32{}, nil
		}
		if *width == nil {
			if w := len(rs[0]); w < 1 || w > 1024 {
				return nil, fmt.Errorf("%q rows of %d values (want 1..1024)", what, w)
			}
			*width = make([]int, len(rs[0]))
		}
		out := make([]int32, 0, n*len(*width))
		for i, r := range rs {
			if len(r) != len(*width) {
				return nil, fmt.Errorf("%q row %d has %d values, want %d", what, i, len(r), len(*width))
			}
			for j, v := range r {
				if v < 0 || v >= data.MaxCategory {
					return nil, fmt.Errorf("%q row %d column %d: %d outside 0..%d", what, i, j, v, data.MaxCategory-1)
				}
			}
			out = append(out, r...)
		}
		return out, nil
	}
	var err error
	if g.NodeCat, err = rows("node_feat", "nodes", rec.NodeFeat, nodes, &ds.NodeCatVocab); err != nil {
		return err
	}
	ef, err := rows("edge_feat", "edges", rec.EdgeFeat, len(edges), &ds.EdgeFeatVocab)
	if err != nil || ef == nil {
		return err
	}
	// Both directed entries of edge i carry its features.
	w := len(ds.EdgeFeatVocab)
	g.EdgeFeat = make([]int32, len(g.Adj.Idx)*w)
	for i, e := range edges {
		for _, p := range [2][2]int{{e[0], e[1]}, {e[1], e[0]}} {
			row := g.Adj.Row(p[0])
			j, _ := slices.BinarySearch(row, int32(p[1]))
			k := int(g.Adj.Ptr[p[0]]) + j
			copy(g.EdgeFeat[k*w:(k+1)*w], ef[i*w:(i+1)*w])
		}
	}
	return nil
}

// complete checks that, once a dataset has categorical features, every
// graph has them (empty slices for graphs without nodes or edges); lines
// gives each graph's line number.
func complete(ds *data.Dataset, name string, lines []int) error {
	for i := range ds.Graphs {
		g := &ds.Graphs[i]
		if len(ds.NodeCatVocab) > 0 && g.NodeCat == nil {
			if g.N > 0 {
				return &LineError{File: name, Line: lines[i], Err: errors.New(`missing "node_feat" (other graphs have it)`)}
			}
			g.NodeCat = []int32{}
		}
		if len(ds.EdgeFeatVocab) > 0 && g.EdgeFeat == nil {
			if len(g.Adj.Idx) > 0 {
				return &LineError{File: name, Line: lines[i], Err: errors.New(`missing "edge_feat" (other graphs have it)`)}
			}
			g.EdgeFeat = []int32{}
		}
	}
	return nil
}

// ParseGraph decodes one graph object of the format, such as a graph
// embedded in another record: "y" and "target" are optional, and the
// attribute width is the graph's own. Its errors have no column: raw is
// not the line Lines passed on.
func ParseGraph(raw []byte) (data.Graph, error) {
	g, _, _, err := parseLine(bytes.TrimSpace(raw), &data.Dataset{}, true)
	var ce *columnError
	if errors.As(err, &ce) {
		err = ce.err
	}
	return g, err
}

// decoded returns a reader of r's text: gunzipped when r starts with
// gzip's magic bytes, without a leading UTF-8 byte-order mark. A UTF-16
// text (a byte-order mark FF FE or FE FF, or a NUL byte in its first
// two) is an error.
func decoded(r io.Reader) (*bufio.Reader, error) {
	br := bufio.NewReaderSize(r, 1<<16)
	if b, _ := br.Peek(2); len(b) == 2 && b[0] == 0x1f && b[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("the file starts as gzip but is not: %w", err)
		}
		br = bufio.NewReaderSize(gzipErrors{zr}, 1<<16)
	}
	b, _ := br.Peek(3)
	switch {
	case bytes.HasPrefix(b, []byte{0xef, 0xbb, 0xbf}):
		_, _ = br.Discard(3)
	case bytes.HasPrefix(b, []byte{0xff, 0xfe}):
		return nil, errors.New("the file is UTF-16 (little-endian, byte-order mark FF FE): save it as UTF-8")
	case bytes.HasPrefix(b, []byte{0xfe, 0xff}):
		return nil, errors.New("the file is UTF-16 (big-endian, byte-order mark FE FF): save it as UTF-8")
	case len(b) >= 2 && (b[0] == 0 || b[1] == 0):
		return nil, errors.New("the file holds NUL bytes where its text starts, as UTF-16 without a byte-order mark does: save it as UTF-8")
	}
	return br, nil
}

// gzipErrors says that its reader's errors are the gzip stream's.
type gzipErrors struct{ r io.Reader }

func (g gzipErrors) Read(p []byte) (int, error) {
	n, err := g.r.Read(p)
	if err != nil && err != io.EOF {
		err = fmt.Errorf("reading gzip: %w", err)
	}
	return n, err
}

// LineError is an error at a line of a JSONL file, and at a column (from
// 1, in bytes) of it where the error has one.
type LineError struct {
	File string
	Line int
	Col  int // 0: none
	Err  error
}

// Error returns "file:line: error", or "file:line:col: error".
func (e *LineError) Error() string {
	if e.Col > 0 {
		return fmt.Sprintf("%s:%d:%d: %v", e.File, e.Line, e.Col, e.Err)
	}
	return fmt.Sprintf("%s:%d: %v", e.File, e.Line, e.Err)
}

// Unwrap returns the error at the line.
func (e *LineError) Unwrap() error { return e.Err }

// Lines calls fn with every non-blank line of r (at most MaxLine bytes,
// surrounding white space trimmed) and its 1-based line number, in order,
// as Read does. An error, from reading or from fn, stops it and is returned
// as a *LineError: "file:line: error", with the column where DecodeLine
// placed the error. r may be compressed with gzip (read whatever the
// file's name) and may start with a UTF-8 byte-order mark (skipped); a
// UTF-16 file is an error naming its encoding.
func Lines(r io.Reader, file string, fn func(no int, line []byte) error) error {
	br, err := decoded(r)
	if err != nil {
		return &LineError{File: file, Line: 1, Err: err}
	}
	for no := 1; ; no++ {
		line, err := readLine(br)
		if len(line) == 0 && err == io.EOF {
			return nil
		}
		if err != nil && err != io.EOF {
			return &LineError{File: file, Line: no, Err: err}
		}
		raw := line
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		if err := fn(no, line); err != nil {
			le := &LineError{File: file, Line: no, Err: err}
			var ce *columnError
			if errors.As(err, &ce) {
				// The column counts the white space TrimSpace took.
				le.Col = len(raw) - len(bytes.TrimLeftFunc(raw, unicode.IsSpace)) + ce.col
				if ce == err {
					le.Err = ce.err
				}
			}
			return le
		}
	}
}
