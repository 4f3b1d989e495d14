// Package graphfile reads the graphs of dataset kind "file": a user's
// JSON Lines file (data/jsonl's format, plain or gzip) or a dataset stored
// by `spn data import` under a name, fitted to the task the spec declares,
// cut to a limit, and split from its own "split" fields or into stratified
// folds drawn from a seed.
package graphfile

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/data/jsonl"
)

// Tasks of dataset kind "file" (dataset.task).
const (
	// Classification reads "y": one class per graph.
	Classification = "classification"
	// Multilabel reads "target" as 0, 1 or null (missing) per task.
	Multilabel = "multilabel"
	// Regression reads "target" as numbers or null (missing, NaN: skipped
	// by the loss and the metrics, as OGB masks multi-task regression).
	Regression = "regression"
)

// Tasks returns the tasks in a fixed order.
func Tasks() []string { return []string{Classification, Multilabel, Regression} }

// DataTask returns the data.Task of task ("" for an unknown one).
func DataTask(task string) data.Task {
	switch task {
	case Classification:
		return data.TaskClassification
	case Multilabel:
		return data.TaskBinary
	case Regression:
		return data.TaskRegression
	}
	return ""
}

// ImportedDir is the folder of the data dir that holds imported datasets.
const ImportedDir = "imported"

// ValidName is what a dataset imported by name may be called.
var ValidName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)

// ImportedPath returns the file of the dataset imported as name into
// dataDir.
func ImportedPath(dataDir, name string) string {
	return filepath.Join(dataDir, ImportedDir, name+".bin")
}

// Contents are what a file's graphs hold, as a spec is checked against
// them.
type Contents struct {
	// Graphs is the number of graphs; Splits whether the lines carry
	// "split" (then Train, Valid and Test count them).
	Graphs             int
	Splits             bool
	Train, Valid, Test int
	NodeLabels, Attrs  bool // "x", "attrs"
	NodeFeat, EdgeFeat bool // "node_feat", "edge_feat"
	Classes, Targets   int  // from "y" and "target"
	Missing            bool // a target is null
}

// ContentsOf returns what ds holds.
func ContentsOf(ds *data.Dataset) Contents {
	c := Contents{Graphs: len(ds.Graphs), Splits: len(ds.Splits) == 1,
		NodeLabels: ds.NumLabels > 0, Attrs: ds.AttrDim > 0,
		NodeFeat: len(ds.NodeCatVocab) > 0, EdgeFeat: len(ds.EdgeFeatVocab) > 0,
		Classes: ds.NumClasses, Targets: ds.NumTargets}
	if c.Splits {
		c.Train, c.Valid, c.Test = len(ds.Splits[0].Train), len(ds.Splits[0].Val), len(ds.Splits[0].Test)
	}
	for _, g := range ds.Graphs {
		for _, y := range g.Target {
			if math.IsNaN(y) {
				c.Missing = true
			}
		}
	}
	return c
}

// Source is a file dataset's graphs as read: the dataset, its file's
// SHA-256, and the line of each graph (nil for an imported dataset).
type Source struct {
	Dataset *data.Dataset
	SHA256  string
	Lines   []int
	// Label names the graphs in messages: the file as the spec names it,
	// or "imported dataset NAME".
	Label string
	// File is the file read, as its reader was given it.
	File string
}

// ReadPath reads the JSON Lines file at path (plain or gzip), naming it
// label in messages (FILE:LINE: ...). It must be a regular file.
func ReadPath(path, label string) (*Source, error) {
	b, err := readRegular(path)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(b)
	ds, lines, err := jsonl.ReadLines(bytes.NewReader(b), label)
	if err != nil {
		return nil, err
	}
	return &Source{Dataset: ds, SHA256: hex.EncodeToString(sum[:]), Lines: lines, Label: label, File: path}, nil
}

// ReadImported reads the dataset imported as name into dataDir.
func ReadImported(dataDir, name string) (*Source, error) {
	if !ValidName.MatchString(name) {
		return nil, fmt.Errorf("%q is not a name a dataset can be imported as (letters, digits, '_', '.', '-')", name)
	}
	p := ImportedPath(dataDir, name)
	src, err := ReadStored(p, name)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("no dataset is imported as %q (no %s): run `spn data import FILE.jsonl --name %s` first", name, p, name)
	}
	return src, err
}

// ReadStored reads the dataset imported as name from its stored file p.
func ReadStored(p, name string) (*Source, error) {
	b, err := readRegular(p)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(b)
	ds, err := data.ReadDataset(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("reading imported dataset %s (%s): %w", name, p, err)
	}
	return &Source{Dataset: ds, SHA256: hex.EncodeToString(sum[:]), Label: "imported dataset " + name, File: p}, nil
}

// MaxFileBytes bounds the size of a file dataset's file.
const MaxFileBytes = 4 << 30

// readRegular reads the regular file at path.
func readRegular(path string) ([]byte, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	if st.Size() > MaxFileBytes {
		return nil, fmt.Errorf("%s has %d bytes, more than the %d a file dataset may have", path, st.Size(), int64(MaxFileBytes))
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// where names graph i of s: "FILE:LINE" or "graph i of imported dataset NAME".
func (s *Source) where(i int) string {
	if s.Lines != nil {
		return fmt.Sprintf("%s:%d", s.Label, s.Lines[i])
	}
	return fmt.Sprintf("graph %d of %s", i, s.Label)
}

// Fit checks that s's graphs carry what task reads and sets the
// dataset's task: "y" for classification, "target" of 0, 1 or null for
// multilabel, "target" of numbers or null for regression (null is a
// missing label, NaN, in both). Its errors say what the file holds
// instead.
func (s *Source) Fit(task string) error {
	ds := s.Dataset
	switch task {
	case Classification:
		if ds.NumClasses == 0 {
			return fmt.Errorf("task %q reads a class \"y\" per graph, but %s has \"target\" (use task %q or %q)", task, s.where(0), Multilabel, Regression)
		}
	case Multilabel, Regression:
		if ds.NumTargets == 0 {
			return fmt.Errorf("task %q reads \"target\" per graph, but %s has a class \"y\" (use task %q)", task, s.where(0), Classification)
		}
		if task == Multilabel {
			for i, g := range ds.Graphs {
				for t, y := range g.Target {
					if !math.IsNaN(y) && y != 0 && y != 1 {
						return fmt.Errorf("task %q reads targets 0, 1 or null, but %s has target %d = %v", task, s.where(i), t, y)
					}
				}
			}
		}
	default:
		return fmt.Errorf("unknown task %q (want %q, %q or %q)", task, Classification, Multilabel, Regression)
	}
	ds.Task = DataTask(task)
	return nil
}

// Limit keeps the first n graphs of each of the file's split parts, or of
// the file when it has no split (n ≤ 0: all).
func (s *Source) Limit(n int) {
	ds := s.Dataset
	if n <= 0 {
		return
	}
	var keep []int
	if len(ds.Splits) == 1 {
		sp := &ds.Splits[0]
		for _, part := range []*[]int{&sp.Train, &sp.Val, &sp.Test} {
			*part = (*part)[:min(n, len(*part))]
			keep = append(keep, *part...)
		}
		slices.Sort(keep)
	} else {
		for i := range min(n, len(ds.Graphs)) {
			keep = append(keep, i)
		}
	}
	newIdx := make(map[int]int, len(keep))
	graphs := make([]data.Graph, len(keep))
	var lines []int
	for j, i := range keep {
		newIdx[i] = j
		graphs[j] = ds.Graphs[i]
		if s.Lines != nil {
			lines = append(lines, s.Lines[i])
		}
	}
	ds.Graphs, s.Lines = graphs, lines
	if len(ds.Splits) == 1 {
		sp := &ds.Splits[0]
		for _, part := range []*[]int{&sp.Train, &sp.Val, &sp.Test} {
			for k, i := range *part {
				(*part)[k] = newIdx[i]
			}
		}
	}
}

// Folds gives a dataset without its own split k folds drawn from seed,
// as the generated h-Proximity sets are dealt: graphs grouped by class
// (classification; one group otherwise), each group shuffled and dealt
// round-robin into k parts; fold i tests on part i, validates on part
// (i+1) mod k and trains on the rest.
func Folds(ds *data.Dataset, k int, seed int64) ([]data.Split, error) {
	if k < 3 || len(ds.Graphs) < k {
		return nil, fmt.Errorf("%d graphs cannot fill %d folds (at least 3, one graph each)", len(ds.Graphs), k)
	}
	rng := rand.New(rand.NewPCG(uint64(seed), 1<<62|uint64(k)))
	groups := make([][]int, max(1, ds.NumClasses))
	for i, g := range ds.Graphs {
		c := 0
		if ds.NumClasses > 0 {
			c = g.Y
		}
		groups[c] = append(groups[c], i)
	}
	parts := make([][]int, k)
	n := 0
	for _, group := range groups {
		rng.Shuffle(len(group), func(i, j int) { group[i], group[j] = group[j], group[i] })
		for _, i := range group {
			parts[n%k] = append(parts[n%k], i)
			n++
		}
	}
	out := make([]data.Split, k)
	for i := range out {
		v := (i + 1) % k
		s := data.Split{Test: slices.Sorted(slices.Values(parts[i])), Val: slices.Sorted(slices.Values(parts[v]))}
		for j, part := range parts {
			if j != i && j != v {
				s.Train = append(s.Train, part...)
			}
		}
		slices.Sort(s.Train)
		out[i] = s
	}
	return out, nil
}

// Options are a file dataset's settings (schema's dataset section).
type Options struct {
	Task  string
	Limit int
	// Folds and Seed split a file without its own split.
	Folds int
	Seed  int64
}

// Prepare fits s to o's task, applies the limit and, when the file has no
// split, deals o.Folds folds from o.Seed: the dataset a generate stage
// writes.
func (s *Source) Prepare(o Options) (*data.Dataset, error) {
	if err := s.Fit(o.Task); err != nil {
		return nil, err
	}
	s.Limit(o.Limit)
	ds := s.Dataset
	if len(ds.Splits) == 0 {
		folds, err := Folds(ds, o.Folds, o.Seed)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.Label, err)
		}
		ds.Splits = folds
	}
	if err := ds.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", s.Label, err)
	}
	return ds, nil
}
