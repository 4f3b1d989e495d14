// Package jsonl reads and writes datasets as JSON Lines, one graph per line:
//
//	{"nodes": 3, "edges": [[0,1],[1,2]], "x": [0,2,1], "y": 1}
//
// "edges" lists every undirected edge once (written with u < v, read in
// either orientation); "x" holds the categorical node labels (optional),
// "attrs" one array of real attributes per node (optional), "y" the class
// of a classification graph and "target" the targets of a regression graph
// (exactly one of the two). Splits are not part of the format.
package jsonl

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/spn-project/spn/data"
)

// record is one line.
type record struct {
	Nodes  int         `json:"nodes"`
	Edges  [][2]int    `json:"edges"`
	X      []int32     `json:"x,omitempty"`
	Attrs  [][]float32 `json:"attrs,omitempty"`
	Y      *int        `json:"y,omitempty"`
	Target []float64   `json:"target,omitempty"`
}

// inRecord is one line as read: "nodes" must be present and each edge
// must have exactly two ends, which record's types cannot tell.
type inRecord struct {
	Nodes  *int        `json:"nodes"`
	Edges  [][]int     `json:"edges"`
	X      []int32     `json:"x,omitempty"`
	Attrs  [][]float32 `json:"attrs,omitempty"`
	Y      *int        `json:"y,omitempty"`
	Target []float64   `json:"target,omitempty"`
}

// Write writes every graph of ds as one line.
func Write(w io.Writer, ds *data.Dataset) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	for i := range ds.Graphs {
		g := &ds.Graphs[i]
		rec := record{Nodes: g.N, Edges: g.Edges(), X: g.Labels}
		if rec.Edges == nil {
			rec.Edges = [][2]int{}
		}
		if g.Attrs != nil && ds.AttrDim > 0 {
			for u := 0; u < g.N; u++ {
				rec.Attrs = append(rec.Attrs, g.Attrs[u*ds.AttrDim:(u+1)*ds.AttrDim])
			}
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

// MaxLine is the longest line Read accepts (bytes).
const MaxLine = 64 << 20

// Read parses a JSONL dataset named name (also used in messages as the
// file name). The label vocabulary is 0..max(x), the classes 0..max(y).
// Every graph must carry "y" or "target". Errors name the line.
func Read(r io.Reader, name string) (*data.Dataset, error) {
	return read(r, name, false)
}

// ReadUnlabelled is Read for graphs to predict: "y" and "target" may be
// left out (on every line or on none); graphs without them get Y = 0 and
// no Target.
func ReadUnlabelled(r io.Reader, name string) (*data.Dataset, error) {
	return read(r, name, true)
}

func read(r io.Reader, name string, unlabelled bool) (*data.Dataset, error) {
	ds := &data.Dataset{Name: name}
	br := bufio.NewReaderSize(r, 1<<16)
	no := 0
	kind := "" // "y", "target" or "none" (unlabelled), fixed by the first graph
	for {
		line, err := readLine(br)
		if len(line) == 0 && err == io.EOF {
			break
		}
		if err != nil && err != io.EOF {
			return nil, fmt.Errorf("%s line %d: %w", name, no+1, err)
		}
		no++
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		g, k, err := parseLine(line, ds, unlabelled)
		if err != nil {
			return nil, fmt.Errorf("%s line %d: %w", name, no, err)
		}
		if len(ds.Graphs) == 0 {
			kind = k
		} else if k != kind {
			return nil, fmt.Errorf("%s line %d: graph has %q but earlier graphs have %q", name, no, k, kind)
		}
		ds.Graphs = append(ds.Graphs, g)
	}
	if len(ds.Graphs) == 0 {
		return nil, fmt.Errorf("%s: no graphs", name)
	}
	for _, g := range ds.Graphs {
		if g.Labels != nil {
			for _, l := range g.Labels {
				ds.NumLabels = max(ds.NumLabels, int(l)+1)
			}
		}
		if kind == "y" {
			ds.NumClasses = max(ds.NumClasses, g.Y+1)
		}
	}
	if err := ds.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return ds, nil
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

// parseLine decodes and checks one record; ds supplies and collects the
// attribute and target widths.
func parseLine(line []byte, ds *data.Dataset, unlabelled bool) (data.Graph, string, error) {
	var in inRecord
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		return data.Graph{}, "", fmt.Errorf("bad JSON: %w", err)
	}
	if dec.More() {
		return data.Graph{}, "", errors.New("more than one JSON value on the line")
	}
	if in.Nodes == nil {
		return data.Graph{}, "", errors.New(`no "nodes": every line needs the node count, e.g. {"nodes": 3, "edges": [[0, 1], [1, 2]]}`)
	}
	rec := record{Nodes: *in.Nodes, X: in.X, Attrs: in.Attrs, Y: in.Y, Target: in.Target, Edges: make([][2]int, len(in.Edges))}
	for i, e := range in.Edges {
		if len(e) != 2 {
			return data.Graph{}, "", fmt.Errorf("edge %d %v: an edge is a pair of node ids [u, v], this one has %d", i, e, len(e))
		}
		rec.Edges[i] = [2]int{e[0], e[1]}
	}
	for u, row := range rec.Attrs {
		for j, v := range row {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				return data.Graph{}, "", fmt.Errorf("node %d attribute %d is %v: attributes must be finite", u, j, v)
			}
		}
	}
	if rec.Nodes < 0 || rec.Nodes > 1<<24 {
		return data.Graph{}, "", fmt.Errorf("node count %d out of range 0..%d", rec.Nodes, 1<<24)
	}
	seen := make(map[[2]int]bool, len(rec.Edges))
	for i, e := range rec.Edges {
		u, v := min(e[0], e[1]), max(e[0], e[1])
		if u < 0 || v >= rec.Nodes {
			if rec.Nodes == 0 {
				return data.Graph{}, "", fmt.Errorf("edge %d [%d,%d]: the graph has \"nodes\": 0, so no edge can exist", i, e[0], e[1])
			}
			return data.Graph{}, "", fmt.Errorf("edge %d [%d,%d]: node id out of range 0..%d", i, e[0], e[1], rec.Nodes-1)
		}
		if u == v {
			return data.Graph{}, "", fmt.Errorf("edge %d [%d,%d]: self loop", i, e[0], e[1])
		}
		if seen[[2]int{u, v}] {
			return data.Graph{}, "", fmt.Errorf("edge %d [%d,%d]: duplicate edge", i, e[0], e[1])
		}
		seen[[2]int{u, v}] = true
	}
	g, err := data.FromEdges(rec.Nodes, rec.Edges)
	if err != nil {
		return data.Graph{}, "", err
	}
	if rec.X != nil {
		if len(rec.X) != rec.Nodes {
			return data.Graph{}, "", fmt.Errorf("%d labels in \"x\" for %d nodes", len(rec.X), rec.Nodes)
		}
		for u, l := range rec.X {
			if l < 0 {
				return data.Graph{}, "", fmt.Errorf("node %d has negative label %d", u, l)
			}
		}
		g.Labels = rec.X
	}
	if rec.Attrs != nil {
		if len(rec.Attrs) != rec.Nodes {
			return data.Graph{}, "", fmt.Errorf("%d attribute rows for %d nodes", len(rec.Attrs), rec.Nodes)
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
	} else if ds.AttrDim > 0 && rec.Nodes > 0 {
		return data.Graph{}, "", errors.New("missing \"attrs\"")
	}
	switch {
	case rec.Y != nil && rec.Target != nil:
		return data.Graph{}, "", errors.New("both \"y\" and \"target\" given")
	case rec.Y != nil:
		if *rec.Y < 0 || *rec.Y > 1<<20 {
			return data.Graph{}, "", fmt.Errorf("class %d out of range 0..%d", *rec.Y, 1<<20)
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
		g.Target = rec.Target
		return g, "target", nil
	}
	if unlabelled {
		return g, "none", nil
	}
	return data.Graph{}, "", errors.New("missing \"y\" or \"target\"")
}
