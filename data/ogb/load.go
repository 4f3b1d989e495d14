package ogb

import (
	"archive/zip"
	"compress/gzip"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"path"
	"slices"
	"strconv"

	"github.com/spn-project/spn/data"
)

// Files of a dataset, relative to its NAME/ folder, in the order parse
// reads them.
const (
	fileNumNode  = "raw/num-node-list.csv.gz"
	fileNumEdge  = "raw/num-edge-list.csv.gz"
	fileNodeFeat = "raw/node-feat.csv.gz"
	fileEdge     = "raw/edge.csv.gz"
	fileEdgeFeat = "raw/edge-feat.csv.gz"
	fileLabel    = "raw/graph-label.csv.gz"
	fileTrain    = "split/scaffold/train.csv.gz"
	fileValid    = "split/scaffold/valid.csv.gz"
	fileTest     = "split/scaffold/test.csv.gz"
)

// Limits that keep a corrupted count from exhausting memory; OGB's largest
// molecule has a few hundred atoms.
const (
	maxGraphNodes = 1 << 16
	maxTotal      = 1 << 28
)

// Load reads dataset name from an OGB csv_mol_download zip: the files of
// the package comment below the zip's NAME/ folder (entries with doubled
// slashes are accepted). Errors name the zip, the file and the line.
func Load(zipPath, name string) (*data.Dataset, error) {
	s, ok := lookup(name)
	if !ok {
		return nil, fmt.Errorf("unknown OGB dataset %q (known: %v)", name, Names())
	}
	zr, err := zip.OpenReader(zipPath)
	if err != nil {
		return nil, fmt.Errorf("reading OGB dataset %q: %w", name, err)
	}
	defer zr.Close()
	entries := make(map[string]*zip.File, len(zr.File))
	for _, f := range zr.File {
		entries[path.Clean(f.Name)] = f
	}
	open := func(rel string) (io.ReadCloser, error) {
		f, ok := entries[name+"/"+rel]
		if !ok {
			return nil, fmt.Errorf("%s/%s: missing from the zip", name, rel)
		}
		rc, err := f.Open()
		if err != nil {
			return nil, fmt.Errorf("%s/%s: %w", name, rel, err)
		}
		gz, err := gunzip(rc)
		if err != nil {
			return nil, fmt.Errorf("%s/%s: %w", name, rel, err)
		}
		return gz, nil
	}
	ds, err := parse(s, open)
	if err != nil {
		return nil, fmt.Errorf("reading OGB dataset %q from %s: %w", name, zipPath, err)
	}
	return ds, nil
}

// gunzip decompresses rc; closing the result closes rc.
func gunzip(rc io.ReadCloser) (io.ReadCloser, error) {
	zr, err := gzip.NewReader(rc)
	if err != nil {
		rc.Close()
		return nil, fmt.Errorf("not gzip data: %w", err)
	}
	return struct {
		io.Reader
		io.Closer
	}{zr, rc}, nil
}

// opener returns the uncompressed content of a file given relative to the
// dataset folder.
type opener func(rel string) (io.ReadCloser, error)

// fileError is an error at a line of a file of the dataset.
func fileError(s set, rel string, line int, format string, args ...any) error {
	if line > 0 {
		return fmt.Errorf("%s/%s:%d: %s", s.name, rel, line, fmt.Sprintf(format, args...))
	}
	return fmt.Errorf("%s/%s: %s", s.name, rel, fmt.Sprintf(format, args...))
}

// eachRow calls fn for every record of file rel, each with exactly width
// fields, with the record's line number. Blank lines are skipped (as
// encoding/csv and pandas do), so a missing single label must be written
// as in OGB's files, never as a blank line: the row counts then disagree.
func eachRow(s set, open opener, rel string, width int, fn func(line int, rec []string) error) error {
	rc, err := open(rel)
	if err != nil {
		return err
	}
	defer rc.Close()
	r := csv.NewReader(rc)
	r.FieldsPerRecord = width
	r.ReuseRecord = true
	for {
		rec, err := r.Read()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				return fileError(s, rel, pe.Line, "%v", pe.Err)
			}
			return fileError(s, rel, 0, "%v", err)
		}
		line, _ := r.FieldPos(0)
		if err := fn(line, rec); err != nil {
			return err
		}
	}
}

// atoi parses a non-negative integer below limit.
func atoi(field string, limit int) (int, error) {
	v, err := strconv.Atoi(field)
	if err != nil {
		return 0, fmt.Errorf("bad integer %q", field)
	}
	if v < 0 || v >= limit {
		return 0, fmt.Errorf("%d outside 0..%d", v, limit-1)
	}
	return v, nil
}

// counts reads a one-column list of per-graph counts.
func counts(s set, open opener, rel string, want int) ([]int, error) {
	var out []int
	total := 0
	err := eachRow(s, open, rel, 1, func(line int, rec []string) error {
		if want >= 0 && len(out) == want {
			return fileError(s, rel, line, "more rows than the %d graphs of %s", want, fileNumNode)
		}
		v, err := atoi(rec[0], maxGraphNodes)
		if err != nil {
			return fileError(s, rel, line, "%v", err)
		}
		if total += v; total > maxTotal {
			return fileError(s, rel, line, "counts add up to more than %d", maxTotal)
		}
		out = append(out, v)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if want >= 0 && len(out) != want {
		return nil, fileError(s, rel, 0, "%d rows for the %d graphs of %s", len(out), want, fileNumNode)
	}
	return out, nil
}

// cursor walks the rows of a per-node or per-edge file graph by graph.
type cursor struct {
	per   []int // rows per graph
	graph int   // graph of the next row
	off   int   // row within that graph
}

// next returns the graph and graph-local row of the next row, or ok false
// when every graph is full.
func (c *cursor) next() (graph, row int, ok bool) {
	for c.graph < len(c.per) && c.off == c.per[c.graph] {
		c.graph++
		c.off = 0
	}
	if c.graph == len(c.per) {
		return 0, 0, false
	}
	g, r := c.graph, c.off
	c.off++
	return g, r, true
}

// done reports whether every row was seen.
func (c *cursor) done() bool {
	for c.graph < len(c.per) && c.off == c.per[c.graph] {
		c.graph++
		c.off = 0
	}
	return c.graph == len(c.per)
}

func sum(xs []int) int {
	t := 0
	for _, x := range xs {
		t += x
	}
	return t
}

// categorical reads a per-node or per-edge file of categorical features
// with vocabulary sizes dims into one row-major slice per graph.
func categorical(s set, open opener, rel string, per []int, dims []int, countFile string) ([][]int32, error) {
	out := make([][]int32, len(per))
	c := cursor{per: per}
	w := len(dims)
	err := eachRow(s, open, rel, w, func(line int, rec []string) error {
		g, _, ok := c.next()
		if !ok {
			return fileError(s, rel, line, "more rows than the %d that %s lists", sum(per), countFile)
		}
		if out[g] == nil {
			out[g] = make([]int32, 0, per[g]*w)
		}
		for j, f := range rec {
			v, err := atoi(f, dims[j])
			if err != nil {
				return fileError(s, rel, line, "column %d: %v", j+1, err)
			}
			out[g] = append(out[g], int32(v))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if !c.done() {
		return nil, fileError(s, rel, 0, "ends after %d rows, %s lists %d", c.seen(), countFile, sum(per))
	}
	return out, nil
}

// seen returns how many rows the cursor handed out.
func (c *cursor) seen() int { return sum(c.per[:c.graph]) + c.off }

// parse reads the dataset's files through open.
func parse(s set, open opener) (*data.Dataset, error) {
	nodes, err := counts(s, open, fileNumNode, -1)
	if err != nil {
		return nil, err
	}
	ng := len(nodes)
	edges, err := counts(s, open, fileNumEdge, ng)
	if err != nil {
		return nil, err
	}
	nodeCat, err := categorical(s, open, fileNodeFeat, nodes, AtomFeatureDims(), fileNumNode)
	if err != nil {
		return nil, err
	}
	// Bonds: graph-local endpoints, checked against the graph's node count.
	ends := make([][][2]int, ng)
	lines := make([][]int, ng)
	c := cursor{per: edges}
	err = eachRow(s, open, fileEdge, 2, func(line int, rec []string) error {
		g, _, ok := c.next()
		if !ok {
			return fileError(s, fileEdge, line, "more rows than the %d that %s lists", sum(edges), fileNumEdge)
		}
		var e [2]int
		for j := range e {
			v, err := strconv.Atoi(rec[j])
			if err != nil {
				return fileError(s, fileEdge, line, "column %d: bad integer %q", j+1, rec[j])
			}
			if v < 0 || v >= nodes[g] {
				return fileError(s, fileEdge, line, "column %d: node %d outside 0..%d of graph %d (%d nodes)", j+1, v, nodes[g]-1, g, nodes[g])
			}
			e[j] = v
		}
		if e[0] == e[1] {
			return fileError(s, fileEdge, line, "self loop on node %d of graph %d", e[0], g)
		}
		ends[g] = append(ends[g], e)
		lines[g] = append(lines[g], line)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if !c.done() {
		return nil, fileError(s, fileEdge, 0, "ends after %d rows, %s lists %d", c.seen(), fileNumEdge, sum(edges))
	}
	bondCat, err := categorical(s, open, fileEdgeFeat, edges, BondFeatureDims(), fileNumEdge)
	if err != nil {
		return nil, err
	}
	targets, err := labels(s, open, ng)
	if err != nil {
		return nil, err
	}
	ds := &data.Dataset{
		Name: s.name, Graphs: make([]data.Graph, ng),
		NumTargets: s.tasks, Task: s.task,
		NodeCatVocab: AtomFeatureDims(), EdgeFeatVocab: BondFeatureDims(),
	}
	for g := range ng {
		gr, err := molecule(nodes[g], ends[g], bondCat[g])
		if err != nil {
			return nil, fileError(s, fileEdge, lines[g][err.edge], "%v", err.err)
		}
		gr.NodeCat = nodeCat[g]
		if gr.NodeCat == nil {
			gr.NodeCat = []int32{}
		}
		gr.Target = targets[g]
		ds.Graphs[g] = gr
	}
	split, err := scaffold(s, open, ng)
	if err != nil {
		return nil, err
	}
	ds.Splits = []data.Split{split}
	if err := ds.Validate(); err != nil { // a guard: parse checked it all
		return nil, err
	}
	return ds, nil
}

// edgeError is an error about one bond of a graph.
type edgeError struct {
	edge int
	err  error
}

// molecule builds one graph from its bonds and their features (3 per
// bond), both directions of a bond carrying its features. A bond listed
// twice must carry the same features both times.
func molecule(n int, ends [][2]int, feat []int32) (data.Graph, *edgeError) {
	g, err := data.FromEdges(n, ends)
	if err != nil { // parse checked ranges and self loops
		return data.Graph{}, &edgeError{0, err}
	}
	w := len(BondFeatureDims())
	g.EdgeFeat = make([]int32, len(g.Adj.Idx)*w)
	set := make([]bool, len(g.Adj.Idx))
	for i, e := range ends {
		f := feat[i*w : (i+1)*w]
		for _, p := range [2][2]int{{e[0], e[1]}, {e[1], e[0]}} {
			row := g.Adj.Row(p[0])
			j, _ := slices.BinarySearch(row, int32(p[1]))
			k := int(g.Adj.Ptr[p[0]]) + j
			dst := g.EdgeFeat[k*w : (k+1)*w]
			if set[k] && !slices.Equal(dst, f) {
				return data.Graph{}, &edgeError{i, fmt.Errorf("bond %d-%d listed again with features %v, before %v", e[0], e[1], f, dst)}
			}
			copy(dst, f)
			set[k] = true
		}
	}
	return g, nil
}

// labels reads graph-label: one row per graph, one column per task. For
// binary tasks a field is 0, 1 (OGB writes 0.0/1.0 too) or empty for a
// missing label (NaN); for regression every field is a finite number.
func labels(s set, open opener, ng int) ([][]float64, error) {
	out := make([][]float64, 0, ng)
	err := eachRow(s, open, fileLabel, s.tasks, func(line int, rec []string) error {
		if len(out) == ng {
			return fileError(s, fileLabel, line, "more rows than the %d graphs of %s", ng, fileNumNode)
		}
		t := make([]float64, len(rec))
		for j, f := range rec {
			if f == "" && s.task == data.TaskBinary {
				t[j] = math.NaN()
				continue
			}
			v, err := strconv.ParseFloat(f, 64)
			if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
				return fileError(s, fileLabel, line, "column %d: bad number %q", j+1, f)
			}
			if s.task == data.TaskBinary && v != 0 && v != 1 {
				return fileError(s, fileLabel, line, "column %d: label %v, want 0, 1 or empty (missing)", j+1, v)
			}
			t[j] = v
		}
		out = append(out, t)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(out) != ng {
		return nil, fileError(s, fileLabel, 0, "%d rows for the %d graphs of %s", len(out), ng, fileNumNode)
	}
	return out, nil
}

// scaffold reads the three parts of the scaffold split: graph indices, no
// index twice.
func scaffold(s set, open opener, ng int) (data.Split, error) {
	type place struct {
		rel  string
		line int
	}
	seen := make(map[int]place)
	var parts [3][]int
	for p, rel := range []string{fileTrain, fileValid, fileTest} {
		parts[p] = []int{}
		err := eachRow(s, open, rel, 1, func(line int, rec []string) error {
			v, err := strconv.Atoi(rec[0])
			if err != nil {
				return fileError(s, rel, line, "bad integer %q", rec[0])
			}
			if v < 0 || v >= ng {
				return fileError(s, rel, line, "graph index %d outside 0..%d", v, ng-1)
			}
			if prev, ok := seen[v]; ok {
				return fileError(s, rel, line, "graph %d already listed at %s/%s:%d", v, s.name, prev.rel, prev.line)
			}
			seen[v] = place{rel, line}
			parts[p] = append(parts[p], v)
			return nil
		})
		if err != nil {
			return data.Split{}, err
		}
	}
	return data.Split{Train: parts[0], Val: parts[1], Test: parts[2]}, nil
}
