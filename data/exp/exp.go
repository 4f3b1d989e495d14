// Package exp reads the EXP and CEXP expressivity datasets (Abboud et al.,
// IJCAI 2021; github.com/ralphabb/GNN-RNI) from their text format: a first
// line with the number of graphs, then per graph a line "n label" and n
// lines "feature degree neighbour...". Node features become categorical
// labels and graph labels classes, both mapped by rank of the sorted
// distinct values; edges are made undirected and simple. The files define
// no splits.
package exp

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/data/fetch"
	"github.com/spn-project/spn/data/known"
)

// maxNodes bounds the node count of one graph.
const maxNodes = 1 << 20

// Names are the datasets Fetch knows.
func Names() []string { return []string{"CEXP", "EXP"} }

// URL returns the upstream location of dataset name's file.
func URL(name string) string { return fetch.ExpressivityBase + name + "/raw/GRAPHSAT.txt" }

// Fetch fetches (or finds in f.DataDir) and reads EXP or CEXP, and checks
// it against its built-in content figures.
func Fetch(ctx context.Context, f *fetch.Fetcher, name string) (*data.Dataset, error) {
	if !slices.Contains(Names(), name) {
		return nil, fmt.Errorf("unknown expressivity dataset %q (known: %v)", name, Names())
	}
	p, err := f.Get(ctx, URL(name))
	if err != nil {
		return nil, err
	}
	ds, err := Load(p, name)
	if err != nil {
		return nil, err
	}
	if err := f.Verify(p, URL(name), known.Of(ds)); err != nil {
		return nil, err
	}
	return ds, nil
}

// Load reads the file at path as dataset name.
func Load(path, name string) (*data.Dataset, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", name, err)
	}
	defer fh.Close()
	ds, err := Read(fh, name)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	return ds, nil
}

// lineReader yields the non-blank lines of r with their numbers.
type lineReader struct {
	s  *bufio.Scanner
	no int
}

func (l *lineReader) next() ([]string, error) {
	for l.s.Scan() {
		l.no++
		f := strings.Fields(l.s.Text())
		if len(f) > 0 {
			return f, nil
		}
	}
	if err := l.s.Err(); err != nil {
		l.no++ // the line that could not be read
		return nil, err
	}
	return nil, io.ErrUnexpectedEOF
}

func ints(f []string) ([]int, error) {
	out := make([]int, len(f))
	for i, s := range f {
		v, err := strconv.Atoi(s)
		if err != nil {
			return nil, fmt.Errorf("want integers, got %q", s)
		}
		out[i] = v
	}
	return out, nil
}

// Read parses the text format; errors name the line.
func Read(r io.Reader, name string) (*data.Dataset, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<16), 1<<24)
	lr := &lineReader{s: sc}
	wrap := func(err error) error {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return fmt.Errorf("%s:%d: unexpected end of file", name, lr.no+1)
		}
		return fmt.Errorf("%s:%d: %w", name, lr.no, err)
	}
	f, err := lr.next()
	if err != nil {
		return nil, wrap(err)
	}
	head, err := ints(f)
	if err != nil || len(head) != 1 || head[0] < 0 {
		return nil, wrap(fmt.Errorf("want the number of graphs, got %q", strings.Join(f, " ")))
	}
	ng := head[0]
	var feats, glabels []int
	graphs := make([]data.Graph, 0, min(ng, 1<<16))
	for gi := 0; gi < ng; gi++ {
		f, err := lr.next()
		if err != nil {
			return nil, wrap(err)
		}
		h, err := ints(f)
		if err != nil || len(h) != 2 || h[0] < 0 || h[0] > maxNodes {
			return nil, wrap(fmt.Errorf("graph %d: want \"n label\" with 0 <= n <= %d, got %q", gi, maxNodes, strings.Join(f, " ")))
		}
		n := h[0]
		glabels = append(glabels, h[1])
		var edges [][2]int
		for u := 0; u < n; u++ {
			f, err := lr.next()
			if err != nil {
				return nil, wrap(err)
			}
			v, err := ints(f)
			if err != nil {
				return nil, wrap(fmt.Errorf("graph %d node %d: %w", gi, u, err))
			}
			if len(v) < 2 || v[1] != len(v)-2 {
				return nil, wrap(fmt.Errorf("graph %d node %d: want \"feature degree neighbour...\" with degree matching the neighbours", gi, u))
			}
			feats = append(feats, v[0])
			for _, w := range v[2:] {
				if w < 0 || w >= n {
					return nil, wrap(fmt.Errorf("graph %d node %d: neighbour %d out of range 0..%d", gi, u, w, n-1))
				}
				if w == u {
					return nil, wrap(fmt.Errorf("graph %d node %d: self loop", gi, u))
				}
				edges = append(edges, [2]int{u, w})
			}
		}
		g, err := data.FromEdges(n, edges)
		if err != nil {
			return nil, wrap(fmt.Errorf("graph %d: %w", gi, err))
		}
		graphs = append(graphs, g)
	}
	if _, err := lr.next(); err == nil {
		return nil, fmt.Errorf("%s:%d: data after the last of %d graphs", name, lr.no, ng)
	}
	labels, nl := data.Rank(feats)
	ys, nc := data.Rank(glabels)
	off := 0
	for i := range graphs {
		g := &graphs[i]
		g.Labels = labels[off : off+g.N : off+g.N]
		off += g.N
		g.Y = int(ys[i])
	}
	ds := &data.Dataset{Name: name, Graphs: graphs, NumLabels: nl, NumClasses: nc}
	if err := ds.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return ds, nil
}
