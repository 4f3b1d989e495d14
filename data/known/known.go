// Package known holds the expected content figures of every upstream data
// file spn knows (TU zips, Errica split files, GNN-FiLM QM9 files, OGB
// molecule zips, EXP and CEXP) and compares a parsed file against them.
//
// Figures are counts and sums of the parsed content (graphs, classes and
// their sizes, targets, nodes, edges, label vocabularies and their use,
// fold sizes), not archive bytes: a re-packed but identical archive has the
// same figures, while an edit of one label, node or edge changes at least
// one. The table itself (table.go) is generated from the offline mirror by
// TestGenerate (go test ./data/known -run TestGenerate -update).
package known

import (
	"fmt"
	"math"
	"strconv"

	"github.com/spn-project/spn/data"
)

// Figure is one named content figure of a file. Counts are whole numbers;
// sums of real values are exact float64 sums in file order.
type Figure struct {
	Name  string
	Value float64
}

// File is the built-in record of one upstream file.
type File struct {
	// Rel is the file's slash-separated path below a data directory or
	// mirror, e.g. "tu/ENZYMES.zip" (see fetch.LocalPath).
	Rel string
	// SHA256 is upstream's SHA-256 of the file where the mirror's copy is
	// known to be upstream's file byte for byte, "" otherwise.
	SHA256 string
	// Figures are the expected content figures, in Of's (or OfSplits')
	// order.
	Figures []Figure
}

// Lookup returns the built-in record of the file at rel.
func Lookup(rel string) (File, bool) {
	for _, f := range table {
		if f.Rel == rel {
			return f, true
		}
	}
	return File{}, false
}

// Files returns the paths of every file with built-in figures, in table
// order.
func Files() []string {
	out := make([]string, len(table))
	for i, f := range table {
		out[i] = f.Rel
	}
	return out
}

// Of returns the content figures of a parsed dataset (its splits
// included, when it has any).
func Of(ds *data.Dataset) []Figure {
	var fs figures
	fs.add("graphs", len(ds.Graphs))
	if ds.NumClasses > 0 {
		fs.add("classes", ds.NumClasses)
		sizes := make([]int, ds.NumClasses)
		for i := range ds.Graphs {
			if y := ds.Graphs[i].Y; y >= 0 && y < len(sizes) {
				sizes[y]++
			}
		}
		for k, n := range sizes {
			fs.add(fmt.Sprintf("graphs of class %d", k), n)
		}
	}
	if ds.NumTargets > 0 {
		fs.add("targets", ds.NumTargets)
		if ds.TaskOf() == data.TaskBinary {
			var pos, neg, miss int
			for i := range ds.Graphs {
				for _, v := range ds.Graphs[i].Target {
					switch {
					case math.IsNaN(v):
						miss++
					case v > 0.5:
						pos++
					default:
						neg++
					}
				}
			}
			fs.add("positive labels", pos)
			fs.add("negative labels", neg)
			fs.add("missing labels", miss)
		} else {
			sums := make([]float64, ds.NumTargets)
			for i := range ds.Graphs {
				for j, v := range ds.Graphs[i].Target {
					if j < len(sums) {
						sums[j] += v
					}
				}
			}
			for j, s := range sums {
				fs.addFloat(fmt.Sprintf("sum of target %d", j), s)
			}
		}
	}
	var nodes, edges int
	var check uint64
	for i := range ds.Graphs {
		g := &ds.Graphs[i]
		nodes += g.N
		edges += g.NumEdges()
		for u := 0; u < g.Adj.Len(); u++ {
			for _, v := range g.Adj.Row(u) {
				if int(v) > u {
					check += edgeHash(i, u, int(v))
				}
			}
		}
	}
	fs.add("nodes", nodes)
	fs.add("edges", edges)
	fs.addFloat("edge checksum", float64(check&checksumMask))
	if ds.NumLabels > 0 {
		fs.add("node labels", ds.NumLabels)
		counts := make([]int, ds.NumLabels)
		for i := range ds.Graphs {
			for _, l := range ds.Graphs[i].Labels {
				if int(l) < len(counts) {
					counts[l]++
				}
			}
		}
		for k, n := range counts {
			fs.add(fmt.Sprintf("nodes with label %d", k), n)
		}
	}
	if ds.NumEdgeTypes > 0 {
		fs.add("edge types", ds.NumEdgeTypes)
		counts := make([]int, ds.NumEdgeTypes)
		for i := range ds.Graphs {
			for _, t := range ds.Graphs[i].EdgeType {
				if int(t) < len(counts) {
					counts[t]++
				}
			}
		}
		for k, n := range counts {
			fs.add(fmt.Sprintf("edges of type %d", k), n/2)
		}
	}
	if ds.AttrDim > 0 {
		fs.add("node attributes", ds.AttrDim)
		sums := make([]float64, ds.AttrDim)
		for i := range ds.Graphs {
			for j, v := range ds.Graphs[i].Attrs {
				sums[j%ds.AttrDim] += float64(v)
			}
		}
		for j, s := range sums {
			fs.addFloat(fmt.Sprintf("sum of node attribute %d", j), s)
		}
	}
	catFigures(&fs, "node feature", ds.NodeCatVocab, func(yield func([]int32)) {
		for i := range ds.Graphs {
			yield(ds.Graphs[i].NodeCat)
		}
	}, 1)
	catFigures(&fs, "edge feature", ds.EdgeFeatVocab, func(yield func([]int32)) {
		for i := range ds.Graphs {
			yield(ds.Graphs[i].EdgeFeat)
		}
	}, 2)
	fs = append(fs, OfSplits(ds.Splits)...)
	return fs
}

// checksumMask keeps the low 52 bits of the edge checksum, so that the
// figure is a whole number a float64 holds exactly.
const checksumMask = 1<<52 - 1

// edgeHash is the term of edge {u, v} (u < v, graph-local node ids) of
// graph g in the edge checksum: splitmix64 applied to g, u and v in turn.
// The checksum (the sum of the terms mod 2^64, low 52 bits) does not depend
// on the order of the edges, while moving an edge to other ends or to
// another graph changes it (but for a chance of 2^-52).
func edgeHash(g, u, v int) uint64 {
	h := mix(uint64(g))
	h = mix(h ^ uint64(u))
	return mix(h ^ uint64(v))
}

// mix is splitmix64's finaliser over x plus its increment.
func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// catFigures adds, for every column of a categorical feature table, the
// number of distinct values used and the sum of the values (divided by
// per: edge features are stored once per direction).
func catFigures(fs *figures, what string, vocab []int, each func(func([]int32)), per int) {
	if len(vocab) == 0 {
		return
	}
	cols := len(vocab)
	used := make([]map[int32]bool, cols)
	for c := range used {
		used[c] = map[int32]bool{}
	}
	sums := make([]int, cols)
	each(func(vals []int32) {
		for j, v := range vals {
			used[j%cols][v] = true
			sums[j%cols] += int(v)
		}
	})
	for c := range cols {
		fs.add(fmt.Sprintf("%s %d values used", what, c), len(used[c]))
		fs.add(fmt.Sprintf("sum of %s %d", what, c), sums[c]/per)
	}
}

// OfSplits returns the figures of a list of splits: their number, and per
// split the size of each part and the sum of its test indices.
func OfSplits(splits []data.Split) []Figure {
	if len(splits) == 0 {
		return nil
	}
	var fs figures
	fs.add("splits", len(splits))
	for i, s := range splits {
		fs.add(fmt.Sprintf("split %d train graphs", i), len(s.Train))
		fs.add(fmt.Sprintf("split %d validation graphs", i), len(s.Val))
		fs.add(fmt.Sprintf("split %d test graphs", i), len(s.Test))
		sum := 0
		for _, t := range s.Test {
			sum += t
		}
		fs.add(fmt.Sprintf("split %d test index sum", i), sum)
		sum = 0
		for _, t := range s.Val {
			sum += t
		}
		fs.add(fmt.Sprintf("split %d validation index sum", i), sum)
	}
	return fs
}

type figures []Figure

func (fs *figures) add(name string, v int) { *fs = append(*fs, Figure{name, float64(v)}) }

func (fs *figures) addFloat(name string, v float64) { *fs = append(*fs, Figure{name, v}) }

// MismatchError says that a file's content differs from its built-in
// figures.
type MismatchError struct {
	// Path is the file checked; Rel its path in the table.
	Path, Rel string
	// Figure is the first figure that differs; Want and Got its expected
	// and actual values ("absent" when the file lacks the figure).
	Figure    string
	Want, Got string
	// Others is how many more figures differ.
	Others int
}

func (e *MismatchError) Error() string {
	more := ""
	if e.Others > 0 {
		more = fmt.Sprintf(" (and %d more figures differ)", e.Others)
	}
	return fmt.Sprintf("%s: content figure %q is %s, expected %s%s: this is not the known %s", e.Path, e.Figure, e.Got, e.Want, more, e.Rel)
}

// Format writes a figure's value as the table does: exactly.
func Format(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// Check compares the figures got of the file at path (rel in the table)
// with the built-in ones; files without built-in figures pass. A
// difference is a *MismatchError naming the first figure that differs.
func Check(path, rel string, got []Figure) error {
	f, ok := Lookup(rel)
	if !ok {
		return nil
	}
	return Compare(path, rel, f.Figures, got)
}

// Compare is Check against an explicit list of expected figures.
func Compare(path, rel string, want, got []Figure) error {
	gotBy := make(map[string]float64, len(got))
	for _, g := range got {
		gotBy[g.Name] = g.Value
	}
	wantBy := make(map[string]bool, len(want))
	var first *MismatchError
	n := 0
	for _, w := range want {
		wantBy[w.Name] = true
		g, ok := gotBy[w.Name]
		if ok && g == w.Value {
			continue
		}
		n++
		if first == nil {
			gs := "absent"
			if ok {
				gs = Format(g)
			}
			first = &MismatchError{Path: path, Rel: rel, Figure: w.Name, Want: Format(w.Value), Got: gs}
		}
	}
	for _, g := range got {
		if wantBy[g.Name] {
			continue
		}
		n++
		if first == nil {
			first = &MismatchError{Path: path, Rel: rel, Figure: g.Name, Want: "absent", Got: Format(g.Value)}
		}
	}
	if first == nil {
		return nil
	}
	first.Others = n - 1
	return first
}
