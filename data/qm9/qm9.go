// Package qm9 reads QM9 in the GNN-FiLM format (Brockschmidt, ICML 2020;
// github.com/microsoft/tf-gnn-samples): gzipped JSON Lines, one molecule
// per line,
//
//	{"targets": [[t1], ..., [t13]], "graph": [[src, bond, dst], ...],
//	 "id": "qm9:N", "node_features": [[15 numbers], ...]}
//
// Bond types 1..4 become edge types 0..3 (NumEdgeTypes 4), the 15 node
// features become real node attributes (AttrDim 15), and the 13 z-scored
// targets the regression targets, in the file's order: mu, alpha, HOMO,
// LUMO, gap, R2, ZPVE, U0, U, H, G, Cv, Omega.
package qm9

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/data/fetch"
	"github.com/spn-project/spn/data/jsonl"
	"github.com/spn-project/spn/data/known"
)

// Dimensions of the format.
const (
	NumTargets   = 13
	NumFeatures  = 15
	NumEdgeTypes = 4
	maxNodes     = 1 << 16
)

// TargetNames are the targets in file order.
var TargetNames = [NumTargets]string{"mu", "alpha", "HOMO", "LUMO", "gap", "R2", "ZPVE", "U0", "U", "H", "G", "Cv", "Omega"}

// ChemAccFactors are GNN-FiLM's chemical-accuracy normalising factors, in
// target order: CHEMICAL_ACC_NORMALISING_FACTORS of tf-gnn-samples
// (github.com/microsoft/tf-gnn-samples, tasks/qm9_task.py), also used by
// the SP-MPNN code (github.com/radoslav11/SP-MPNN,
// src/experiments/run_gr.py). The targets in the files are z-scored, and
// factor j is property j's chemical accuracy divided by its standard
// deviation, so that the MAE of a z-scored property divided by its factor
// is the error in units of chemical accuracy ("error ratio"): the number
// GNN-FiLM's tables and the SP-MPNN paper's Table 4 report.
var ChemAccFactors = [NumTargets]float64{
	0.066513725, 0.012235489, 0.071939046, 0.033730778, 0.033486113,
	0.004278493, 0.001330901, 0.004165489, 0.004128926, 0.00409976,
	0.004527465, 0.012292586, 0.037467458,
}

// TargetIndex returns the position of the property name in TargetNames.
func TargetIndex(name string) (int, error) {
	for i, n := range TargetNames {
		if n == name {
			return i, nil
		}
	}
	return 0, fmt.Errorf("unknown QM9 property %q (want one of %s)", name, strings.Join(TargetNames[:], ", "))
}

// Parts are the file names of the three parts, in split order.
var Parts = [3]string{"train", "valid", "test"}

// URL returns the upstream location of one part.
func URL(part string) string { return fetch.QM9Base + part + ".jsonl.gz" }

// Sources of the training data (Options.Source).
const (
	// SourceFiLM is GNN-FiLM's split: train, valid and test files.
	SourceFiLM = "film"
	// SourceValidAsTrain trains on the first TrainSize molecules of the
	// valid file, validates on the rest of it and tests on the test file;
	// the train file is not used. Results made this way are not the
	// paper's protocol and must say so.
	SourceValidAsTrain = "valid-as-train"
)

// Options choose the files and how much of them Fetch reads.
type Options struct {
	// Source is SourceFiLM (default when empty) or SourceValidAsTrain.
	Source string
	// TrainSize is the number of molecules of the valid file used for
	// training with SourceValidAsTrain.
	TrainSize int
	// Limit, when > 0, reads only the first Limit molecules of each file.
	Limit int
}

// Fetch fetches the parts o asks for and returns them as one dataset with
// a single split (train, then validation, then test graphs). With
// SourceFiLM the train file is required: without it (the offline mirror
// does not hold it) Fetch fails naming the file and its URL.
func Fetch(ctx context.Context, f *fetch.Fetcher, o Options) (*data.Dataset, error) {
	all := &data.Dataset{Name: "QM9", AttrDim: NumFeatures, NumEdgeTypes: NumEdgeTypes, NumTargets: NumTargets, Task: data.TaskRegression}
	var split data.Split
	add := func(gs []data.Graph, to *[]int) {
		for i := range gs {
			*to = append(*to, len(all.Graphs)+i)
		}
		all.Graphs = append(all.Graphs, gs...)
	}
	switch o.Source {
	case "", SourceFiLM:
		for _, part := range Parts {
			ds, err := FetchPart(ctx, f, part, o.Limit)
			if err != nil {
				if part == "train" {
					return nil, fmt.Errorf("QM9 with GNN-FiLM's split needs its training file train.jsonl.gz (%s), which could not be obtained: %w; "+
						"the offline mirror holds only valid and test: dataset.source \"valid-as-train\" trains on part of the valid file instead", URL(part), err)
				}
				return nil, err
			}
			switch part {
			case "train":
				add(ds.Graphs, &split.Train)
			case "valid":
				add(ds.Graphs, &split.Val)
			default:
				add(ds.Graphs, &split.Test)
			}
		}
	case SourceValidAsTrain:
		all.Name = "QM9 (valid-as-train)"
		valid, err := FetchPart(ctx, f, "valid", o.Limit)
		if err != nil {
			return nil, err
		}
		if o.TrainSize < 1 || o.TrainSize >= len(valid.Graphs) {
			return nil, fmt.Errorf("QM9 valid-as-train: train_size %d must leave molecules of the %d read from valid.jsonl.gz to validate on", o.TrainSize, len(valid.Graphs))
		}
		add(valid.Graphs[:o.TrainSize], &split.Train)
		add(valid.Graphs[o.TrainSize:], &split.Val)
		test, err := FetchPart(ctx, f, "test", o.Limit)
		if err != nil {
			return nil, err
		}
		add(test.Graphs, &split.Test)
	default:
		return nil, fmt.Errorf("QM9 source %q is unknown (want %q or %q)", o.Source, SourceFiLM, SourceValidAsTrain)
	}
	all.Splits = []data.Split{split}
	return all, nil
}

// FetchPart fetches and reads one part (at most limit molecules when
// limit > 0). A part with built-in content figures (the valid and test
// files; package known) is read whole and checked against them first.
func FetchPart(ctx context.Context, f *fetch.Fetcher, part string, limit int) (*data.Dataset, error) {
	u := URL(part)
	p, err := f.Get(ctx, u)
	if err != nil {
		return nil, err
	}
	rel, _ := fetch.LocalPath(u)
	if _, ok := known.Lookup(rel); !ok {
		return LoadN(p, part, limit)
	}
	ds, err := LoadN(p, part, 0)
	if err != nil {
		return nil, err
	}
	if err := f.Verify(p, u, known.Of(ds)); err != nil {
		return nil, err
	}
	if limit > 0 && limit < len(ds.Graphs) {
		ds.Graphs = ds.Graphs[:limit:limit]
	}
	return ds, nil
}

// Load reads one gzipped part file.
func Load(path, name string) (*data.Dataset, error) { return LoadN(path, name, 0) }

// LoadN reads the first limit molecules (all when limit <= 0) of one
// gzipped part file. Errors name the file and, for bad content (including
// a truncated or corrupted gzip stream), the line.
func LoadN(path, name string, limit int) (*data.Dataset, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading QM9 %s: %w", name, err)
	}
	defer fh.Close()
	zr, err := gzip.NewReader(fh)
	if err != nil {
		return nil, fmt.Errorf("reading QM9 %s: %w", path, err)
	}
	ds, err := ReadN(zr, path, limit)
	if err != nil {
		return nil, err
	}
	ds.Name = "QM9-" + name
	return ds, nil
}

type molecule struct {
	Targets  [][]float64 `json:"targets"`
	Graph    [][3]int    `json:"graph"`
	ID       string      `json:"id"`
	Features [][]float64 `json:"node_features"`
}

// Read parses uncompressed JSON Lines; file names the input in errors,
// which give the line.
func Read(r io.Reader, file string) (*data.Dataset, error) { return ReadN(r, file, 0) }

// ReadN is Read stopping after limit molecules when limit > 0.
func ReadN(r io.Reader, file string, limit int) (*data.Dataset, error) {
	ds := &data.Dataset{Name: file, AttrDim: NumFeatures, NumEdgeTypes: NumEdgeTypes, NumTargets: NumTargets, Task: data.TaskRegression}
	// enough stops the reading once limit molecules are read.
	enough := errors.New("enough molecules")
	err := jsonl.Lines(r, file, func(_ int, line []byte) error {
		g, err := parse(line)
		if err != nil {
			return err
		}
		ds.Graphs = append(ds.Graphs, g)
		if limit > 0 && len(ds.Graphs) == limit {
			return enough
		}
		return nil
	})
	if err != nil && !errors.Is(err, enough) {
		return nil, err
	}
	if len(ds.Graphs) == 0 {
		return nil, fmt.Errorf("%s: no molecules", file)
	}
	return ds, nil
}

func parse(line []byte) (data.Graph, error) {
	var m molecule
	if err := jsonl.DecodeLine(line, &m); err != nil {
		return data.Graph{}, err
	}
	n := len(m.Features)
	if n == 0 || n > maxNodes {
		return data.Graph{}, fmt.Errorf("%s: %d atoms, want 1..%d", m.ID, n, maxNodes)
	}
	if len(m.Targets) != NumTargets {
		return data.Graph{}, fmt.Errorf("%s: %d targets, want %d", m.ID, len(m.Targets), NumTargets)
	}
	g := data.Graph{}
	edges := make([][2]int, len(m.Graph))
	types := make([]int32, len(m.Graph))
	for i, e := range m.Graph {
		if e[1] < 1 || e[1] > NumEdgeTypes {
			return data.Graph{}, fmt.Errorf("%s: bond %d has type %d, want 1..%d", m.ID, i, e[1], NumEdgeTypes)
		}
		edges[i] = [2]int{e[0], e[2]}
		types[i] = int32(e[1] - 1)
	}
	built, err := data.FromTypedEdges(n, edges, types)
	if err != nil {
		return data.Graph{}, fmt.Errorf("%s: %w", m.ID, err)
	}
	g = built
	g.Attrs = make([]float32, 0, n*NumFeatures)
	for u, f := range m.Features {
		if len(f) != NumFeatures {
			return data.Graph{}, fmt.Errorf("%s: atom %d has %d features, want %d", m.ID, u, len(f), NumFeatures)
		}
		for j, v := range f {
			if x := float32(v); math.IsInf(float64(x), 0) || math.IsNaN(v) {
				return data.Graph{}, fmt.Errorf("%s: atom %d feature %d is %v, not a finite float32", m.ID, u, j, v)
			}
			g.Attrs = append(g.Attrs, float32(v))
		}
	}
	g.Target = make([]float64, NumTargets)
	for i, t := range m.Targets {
		if len(t) != 1 {
			return data.Graph{}, fmt.Errorf("%s: target %d has %d values, want 1", m.ID, i, len(t))
		}
		g.Target[i] = t[0]
	}
	return g, nil
}
